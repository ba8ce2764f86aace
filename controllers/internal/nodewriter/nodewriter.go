// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nodewriter

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Domain is kquant's (the API group, v1alpha1.GroupVersion.Group): every Node label, annotation, taint
// and condition type whose key is in it or in a subdomain of it is kquant's:
// the recipe-support labels (kquant.dev/fp8), the gates' labels and taints
// (gate.kquant.dev/fp8, v1alpha1.GateLabelPrefix), their records
// (kquant.dev/gate-owners) and conditions (kquant.dev/FP8Validated).
const Domain = "kquant.dev"

// IsKquantKey says whether a Node key is kquant's: its prefix is Domain or a
// subdomain of it.
func IsKquantKey(key string) bool {
	prefix, _, found := strings.Cut(key, "/")
	return found && (prefix == Domain || strings.HasSuffix(prefix, "."+Domain))
}

// Marks are the changes one write makes to a Node's metadata and spec.
type Marks struct {
	// Labels are label changes in merge-patch form: a string (or a non-nil
	// *string) sets the label, nil removes it.
	Labels map[string]any
	// Annotations are annotation changes in the same form.
	Annotations map[string]any
	// Taints is the Node's whole new taint list when SetTaints: the others'
	// taints as read and kquant's as planned.
	Taints    []corev1.Taint
	SetTaints bool
}

// Write patches node, as the caller read it (a *corev1.Node, or its metadata
// when the marks set no taints), with marks: one merge patch conditioned on
// node's resourceVersion. It returns the Node's resourceVersion after the
// write and leaves node as it was.
func Write(ctx context.Context, c client.Writer, node client.Object, marks Marks) (string, error) {
	if err := checkKeys("label", marks.Labels); err != nil {
		return "", fmt.Errorf("writing node %s: %w", node.GetName(), err)
	}
	if err := checkKeys("annotation", marks.Annotations); err != nil {
		return "", fmt.Errorf("writing node %s: %w", node.GetName(), err)
	}
	// A map left out, not null: null would remove every label.
	metadata := map[string]any{"resourceVersion": node.GetResourceVersion()}
	if len(marks.Labels) > 0 {
		metadata["labels"] = marks.Labels
	}
	if len(marks.Annotations) > 0 {
		metadata["annotations"] = marks.Annotations
	}
	patch := map[string]any{"metadata": metadata}
	if marks.SetTaints {
		read, ok := node.(*corev1.Node)
		if !ok {
			return "", fmt.Errorf("writing taints of node %s: read as %T, not a whole Node", node.GetName(), node)
		}
		if key, ok := foreignTaint(read.Spec.Taints, marks.Taints); ok {
			return "", fmt.Errorf("writing node %s: taint %s is not kquant's", node.GetName(), key)
		}
		// A list the merge patch sets: [] removes every taint, null would too.
		taints := marks.Taints
		if taints == nil {
			taints = []corev1.Taint{}
		}
		patch["spec"] = map[string]any{"taints": taints}
	}
	return send(ctx, c, node.GetName(), patch, false)
}

// Conditions are the changes one write makes to a Node's conditions.
type Conditions struct {
	// Set are conditions to set, each replacing the Node's condition of its
	// type.
	Set []corev1.NodeCondition
	// Remove are condition types to remove: those the writer set before
	// and no longer wants.
	Remove []corev1.NodeConditionType
}

// WriteConditions writes conds to node, as the caller read it: one merge
// patch of the status subresource, conditioned on node's resourceVersion,
// whose list is node's conditions as read with conds applied. It returns the
// Node's resourceVersion after the write and leaves node as it was.
func WriteConditions(ctx context.Context, c client.StatusClient, node *corev1.Node, conds Conditions) (string, error) {
	changed := make(map[corev1.NodeConditionType]bool, len(conds.Set)+len(conds.Remove))
	for _, t := range conds.Remove {
		changed[t] = true
	}
	for _, cond := range conds.Set {
		changed[cond.Type] = true
	}
	for _, t := range slices.Sorted(maps.Keys(changed)) {
		if !IsKquantKey(string(t)) {
			return "", fmt.Errorf("writing conditions of node %s: condition %s is not kquant's", node.Name, t)
		}
	}
	all := make([]corev1.NodeCondition, 0, len(node.Status.Conditions)+len(conds.Set))
	for _, cond := range node.Status.Conditions {
		if !changed[cond.Type] {
			all = append(all, cond)
		}
	}
	all = append(all, conds.Set...)
	patch := map[string]any{
		"metadata": map[string]any{"resourceVersion": node.ResourceVersion},
		"status":   map[string]any{"conditions": all},
	}
	return send(ctx, c.Status(), node.Name, patch, true)
}

// KquantConditionTypes are the types of node's conditions that are
// kquant's.
func KquantConditionTypes(node *corev1.Node) []corev1.NodeConditionType {
	var out []corev1.NodeConditionType
	for _, c := range node.Status.Conditions {
		if IsKquantKey(string(c.Type)) {
			out = append(out, c.Type)
		}
	}
	return out
}

// patcher is the one method of client.Writer and client.SubResourceWriter
// that send uses, their Patch methods having different option types.
type patcher[O any] interface {
	Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...O) error
}

// send sends patch, a merge patch, to the Node name (its status when
// status) and returns the resourceVersion of the write.
func send[O any](ctx context.Context, c patcher[O], name string, patch map[string]any, status bool) (string, error) {
	what := "node"
	if status {
		what = "status of node"
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return "", fmt.Errorf("encoding the patch of %s %s: %w", what, name, err)
	}
	// The answer goes into a Node of its own, so that the caller's read is
	// not changed under it.
	written := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Patch(ctx, written, client.RawPatch(types.MergePatchType, body)); err != nil {
		return "", fmt.Errorf("patching %s %s: %w", what, name, err)
	}
	return written.ResourceVersion, nil
}

// checkKeys refuses a change to a key that is not kquant's, and a value that
// a merge patch of string maps cannot hold.
func checkKeys(what string, changes map[string]any) error {
	for _, k := range slices.Sorted(maps.Keys(changes)) {
		if !IsKquantKey(k) {
			return fmt.Errorf("%s %s is not kquant's", what, k)
		}
		switch changes[k].(type) {
		case string, *string, nil:
		default:
			return fmt.Errorf("%s %s: value %T is neither a string nor nil", what, k, changes[k])
		}
	}
	return nil
}

// foreignTaint returns the key of a taint that is in one of read and written but
// not the other, and is not kquant's.
func foreignTaint(read, written []corev1.Taint) (string, bool) {
	for _, pair := range [][2][]corev1.Taint{{read, written}, {written, read}} {
		for _, t := range pair[0] {
			kept := slices.ContainsFunc(pair[1], func(o corev1.Taint) bool { return equality.Semantic.DeepEqual(t, o) })
			if !kept && !IsKquantKey(t.Key) {
				return t.Key, true
			}
		}
	}
	return "", false
}
