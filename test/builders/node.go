// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package builders

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeWrapper builds a core/v1 Node.
type NodeWrapper struct{ corev1.Node }

// MakeNode starts a Node called name with no labels.
func MakeNode(name string) *NodeWrapper {
	return &NodeWrapper{corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// Label sets a label.
func (w *NodeWrapper) Label(k, v string) *NodeWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

// Obj returns the Node.
func (w *NodeWrapper) Obj() *corev1.Node { return &w.Node }
