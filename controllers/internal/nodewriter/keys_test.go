// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nodewriter_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/nodewriter"
)

func TestIsKquantKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"kquant.dev/fp8", true},
		{kquantv1alpha1.GateLabelPrefix + "mxfp8", true},
		{"feature.node.kquant.dev/x", true},
		{"nvidia.com/gpu", false},
		{"notkquant.dev/fp8", false},
		{"kquant.dev.example.com/fp8", false},
		{"kquant.dev", false},
		{"team", false},
	} {
		if got := nodewriter.IsKquantKey(tc.key); got != tc.want {
			t.Errorf("IsKquantKey(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
}

func TestDomainIsTheAPIGroup(t *testing.T) {
	if nodewriter.Domain != kquantv1alpha1.GroupVersion.Group {
		t.Errorf("Domain = %q, want the API group %q", nodewriter.Domain, kquantv1alpha1.GroupVersion.Group)
	}
}

// TestWritesOfOthersKeysAreRefused checks that no write leaves for the API
// server (the client is nil) when it would change a key that is not
// kquant's.
func TestWritesOfOthersKeysAreRefused(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "1"},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}}},
	}
	gate := corev1.Taint{Key: kquantv1alpha1.GateLabelPrefix + "fp8", Value: "failed", Effect: corev1.TaintEffectNoSchedule}
	cases := map[string]struct {
		marks    nodewriter.Marks
		wantText string
	}{
		"a label of another domain":      {nodewriter.Marks{Labels: map[string]any{"team": "a"}}, "label team"},
		"removing another's annotation":  {nodewriter.Marks{Annotations: map[string]any{"example.com/a": nil}}, "annotation example.com/a"},
		"a value that is not a string":   {nodewriter.Marks{Labels: map[string]any{"kquant.dev/fp8": 1}}, "neither a string nor nil"},
		"dropping another's taint":       {nodewriter.Marks{Taints: []corev1.Taint{gate}, SetTaints: true}, "taint nvidia.com/gpu"},
		"adding a taint of another kind": {nodewriter.Marks{Taints: append(node.Spec.Taints, corev1.Taint{Key: "x/y", Effect: corev1.TaintEffectNoSchedule}), SetTaints: true}, "taint x/y"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := nodewriter.Write(context.Background(), nil, node, tc.marks)
			if err == nil || !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("Write() = %v, want a refusal naming %q", err, tc.wantText)
			}
		})
	}
	t.Run("a condition of another kind", func(t *testing.T) {
		_, err := nodewriter.WriteConditions(context.Background(), nil, node, nodewriter.Conditions{Set: []corev1.NodeCondition{{Type: corev1.NodeReady}}})
		if err == nil || !strings.Contains(err.Error(), "condition Ready") {
			t.Errorf("WriteConditions() = %v, want a refusal naming Ready", err)
		}
	})
}
