// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/logging"
)

// Domain is kquant's (the API group's): every Node label and taint whose key
// is in it or in a subdomain of it is kquant's and goes: the recipe labels
// (kquant.dev/fp8) and the validation gates' labels and taints
// (gate.kquant.dev/fp8, v1alpha1.GateLabelPrefix).
const Domain = "kquant.dev"

// IsKquantKey says whether a label or taint key is kquant's: its prefix is
// Domain or a subdomain of it.
func IsKquantKey(key string) bool {
	prefix, _, found := strings.Cut(key, "/")
	return found && (prefix == Domain || strings.HasSuffix(prefix, "."+Domain))
}

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
		conditions, err := cleanConditions(ctx, c, &nodes.Items[i])
		if err != nil {
			return err
		}
		if changed || conditions {
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

// cleanNode removes kquant's labels and taints from a node; false when it
// had none.
func cleanNode(ctx context.Context, c client.Client, name string) (bool, error) {
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return client.IgnoreNotFound(err)
		}
		old := node.DeepCopy()
		changed = strip(node)
		if !changed {
			return nil
		}
		return c.Patch(ctx, node, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return false, fmt.Errorf("removing kquant's labels and taints from node %s: %w", name, err)
	}
	return changed, nil
}

// cleanConditions removes kquant's Node conditions (types in Domain, the
// gates' kquant.dev/<Family>Validated) from node's status; false when it had
// none. A strategic merge patch deletes exactly those types, so a condition
// the kubelet writes meanwhile is kept.
func cleanConditions(ctx context.Context, c client.Client, node *corev1.Node) (bool, error) {
	var deletes []map[string]string
	for _, cond := range node.Status.Conditions {
		if IsKquantKey(string(cond.Type)) {
			deletes = append(deletes, map[string]string{"type": string(cond.Type), "$patch": "delete"})
		}
	}
	if len(deletes) == 0 {
		return false, nil
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": deletes}})
	if err != nil {
		return false, fmt.Errorf("encoding the condition patch of node %s: %w", node.Name, err)
	}
	if err := c.Status().Patch(ctx, node, client.RawPatch(types.StrategicMergePatchType, body)); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("removing kquant's conditions from node %s: %w", node.Name, err)
	}
	return true, nil
}

// strip removes kquant's labels and taints from node, and the gates'
// ownership records that describe them and their conditions; false when it
// had none.
func strip(node *corev1.Node) bool {
	changed := false
	for _, record := range []string{kquantv1alpha1.AnnotationGateOwners, kquantv1alpha1.AnnotationGateConditions} {
		if _, ok := node.Annotations[record]; ok {
			delete(node.Annotations, record)
			changed = true
		}
	}
	for k := range node.Labels {
		if IsKquantKey(k) {
			delete(node.Labels, k)
			changed = true
		}
	}
	kept := node.Spec.Taints[:0]
	for _, t := range node.Spec.Taints {
		if IsKquantKey(t.Key) {
			changed = true
			continue
		}
		kept = append(kept, t)
	}
	node.Spec.Taints = kept
	return changed
}
