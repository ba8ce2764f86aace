// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package hooks

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/nodewriter"
	"github.com/kquant/kquant/internal/logging"
)

// UninstallOptions say which pods must be gone first.
type UninstallOptions struct {
	// Namespace is the release's namespace.
	Namespace string
	// PodSelector selects the release's manager and agent pods; nil waits
	// for nothing.
	PodSelector labels.Selector
	// Poll is how often to look at the pods again; default 2 s.
	Poll time.Duration
}

// Uninstall waits for the release's pods to be gone, then deletes every
// GPUNodeProfile and removes kquant's labels, taints and Node conditions
// from every Node: a gate's condition left behind would keep a remediation
// controller acting on a verdict nobody updates. It gives up when ctx ends.
func Uninstall(ctx context.Context, c client.Client, opts UninstallOptions) error {
	if err := waitForPods(ctx, c, opts); err != nil {
		return err
	}
	if err := c.DeleteAllOf(ctx, &kquantv1alpha1.GPUNodeProfile{}); err != nil {
		return fmt.Errorf("deleting GPUNodeProfiles: %w", err)
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	cleaned := 0
	for i := range nodes.Items {
		changed, err := cleanNode(ctx, c, nodes.Items[i].Name)
		if err != nil {
			return err
		}
		if changed {
			cleaned++
		}
	}
	logging.FromContext(ctx).Info("Removed kquant's marks", "nodes", cleaned)
	return nil
}

// waitForPods returns once no pod matches opts.PodSelector.
func waitForPods(ctx context.Context, c client.Client, opts UninstallOptions) error {
	if opts.PodSelector == nil || opts.PodSelector.Empty() {
		return nil
	}
	poll := opts.Poll
	if poll == 0 {
		poll = 2 * time.Second
	}
	log := logging.FromContext(ctx)
	var left int
	err := wait.PollUntilContextCancel(ctx, poll, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(opts.Namespace), client.MatchingLabelsSelector{Selector: opts.PodSelector}); err != nil {
			return false, fmt.Errorf("listing pods %s in %s: %w", opts.PodSelector, opts.Namespace, err)
		}
		if left = len(pods.Items); left > 0 {
			log.V(logging.Debug).Info("Waiting for the release's pods to be gone", "pods", left)
		}
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d pods %s in %s to be gone: %w", left, opts.PodSelector, opts.Namespace, err)
	}
	return nil
}

// cleanNode removes kquant's labels, taints, gate records and conditions
// from a node; false when it had none. Each try reads the Node afresh: the
// writes are conditional on the version read.
func cleanNode(ctx context.Context, c client.Client, name string) (bool, error) {
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return client.IgnoreNotFound(err)
		}
		marks, strip := marksToStrip(node)
		conditions := nodewriter.KquantConditionTypes(node)
		changed = strip || len(conditions) > 0
		if strip {
			rv, err := nodewriter.Write(ctx, c, node, marks)
			if err != nil {
				return err
			}
			node.ResourceVersion = rv
		}
		if len(conditions) > 0 {
			if _, err := nodewriter.WriteConditions(ctx, c, node, nodewriter.Conditions{Remove: conditions}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("removing kquant's marks from node %s: %w", name, client.IgnoreNotFound(err))
	}
	return changed, nil
}

// marksToStrip are the changes that remove kquant's labels and taints from
// node, and the gates' ownership records that describe them and their
// conditions; false when it has none.
func marksToStrip(node *corev1.Node) (nodewriter.Marks, bool) {
	marks := nodewriter.Marks{Labels: map[string]any{}, Annotations: map[string]any{}}
	for _, record := range []string{kquantv1alpha1.AnnotationGateOwners, kquantv1alpha1.AnnotationGateConditions} {
		if _, ok := node.Annotations[record]; ok {
			marks.Annotations[record] = nil
		}
	}
	for k := range node.Labels {
		if nodewriter.IsKquantKey(k) {
			marks.Labels[k] = nil
		}
	}
	for _, t := range node.Spec.Taints {
		if nodewriter.IsKquantKey(t.Key) {
			marks.SetTaints = true
			continue
		}
		marks.Taints = append(marks.Taints, t)
	}
	return marks, len(marks.Labels) > 0 || len(marks.Annotations) > 0 || marks.SetTaints
}
