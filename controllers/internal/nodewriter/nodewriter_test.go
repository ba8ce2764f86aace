// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nodewriter_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/nodewriter"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.RunPackage(m, func(e *testenv.Env) { env = e })
}

var (
	gateKey   = kquantv1alpha1.GateLabelPrefix + "fp8"
	gateTaint = corev1.Taint{Key: gateKey, Value: "failed", Effect: corev1.TaintEffectNoSchedule}
	gpuTaint  = corev1.Taint{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}
)

// node creates a Node named name with another tool's label, taint and
// condition, and returns it as read.
func node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n := builders.MakeNode(name).Label("team", "ml").Obj()
	n.Spec.Taints = []corev1.Taint{gpuTaint}
	if err := env.Client.Create(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), n) })
	n.Status.Conditions = []corev1.NodeCondition{{Type: "example.com/GPUHealthy", Status: corev1.ConditionTrue, Reason: "Probed"}}
	if err := env.Client.Status().Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	return read(t, name)
}

func read(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWriteChangesOnlyKquantsKeys writes marks and conditions and then takes
// them away again; the other tool's label, taint and condition stay as
// they were throughout.
func TestWriteChangesOnlyKquantsKeys(t *testing.T) {
	ctx := t.Context()
	n := node(t, "writer-keys")
	marks := nodewriter.Marks{
		Labels: map[string]any{gateKey: "failed"}, Annotations: map[string]any{kquantv1alpha1.AnnotationGateOwners: `{}`},
		Taints: append(slices.Clone(n.Spec.Taints), gateTaint), SetTaints: true,
	}
	rv, err := nodewriter.Write(ctx, env.Client, n, marks)
	if err != nil {
		t.Fatal(err)
	}
	n.ResourceVersion = rv
	cond := corev1.NodeCondition{Type: "kquant.dev/FP8Validated", Status: corev1.ConditionFalse, Reason: "SNRBelowTolerance"}
	if _, err := nodewriter.WriteConditions(ctx, env.Client, n, nodewriter.Conditions{Set: []corev1.NodeCondition{cond}}); err != nil {
		t.Fatal(err)
	}
	got := read(t, n.Name)
	want := summary{
		labels:     map[string]string{"team": "ml", gateKey: "failed"},
		taints:     append(slices.Clone(n.Spec.Taints), gateTaint),
		conditions: []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse},
	}
	if diff := cmp.Diff(want, summarize(got), cmp.AllowUnexported(summary{})); diff != "" {
		t.Errorf("after setting (-want +got):\n%s", diff)
	}

	rv, err = nodewriter.Write(ctx, env.Client, got, nodewriter.Marks{
		Labels: map[string]any{gateKey: nil}, Annotations: map[string]any{kquantv1alpha1.AnnotationGateOwners: nil},
		Taints: n.Spec.Taints, SetTaints: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	got.ResourceVersion = rv
	if _, err := nodewriter.WriteConditions(ctx, env.Client, got, nodewriter.Conditions{Remove: nodewriter.KquantConditionTypes(got)}); err != nil {
		t.Fatal(err)
	}
	want = summary{
		labels: map[string]string{"team": "ml"}, taints: n.Spec.Taints,
		conditions: []corev1.ConditionStatus{corev1.ConditionTrue},
	}
	if diff := cmp.Diff(want, summarize(read(t, n.Name)), cmp.AllowUnexported(summary{})); diff != "" {
		t.Errorf("after removing (-want +got):\n%s", diff)
	}
}

// TestWriteOnAStaleReadConflicts: another writer changes the Node after
// kquant read it (a person's taint, the kubelet's condition); kquant's write
// on the old read conflicts and loses neither.
func TestWriteOnAStaleReadConflicts(t *testing.T) {
	ctx := t.Context()
	stale := node(t, "writer-stale")
	fresh := stale.DeepCopy()
	fresh.Spec.Taints = append(fresh.Spec.Taints, corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoSchedule})
	if err := env.Client.Update(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	_, err := nodewriter.Write(ctx, env.Client, stale, nodewriter.Marks{Taints: append(slices.Clone(stale.Spec.Taints), gateTaint), SetTaints: true})
	if !apierrors.IsConflict(err) {
		t.Errorf("Write on a stale read = %v, want a conflict", err)
	}
	fresh.Status.Conditions = append(fresh.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"})
	if err := env.Client.Status().Update(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	cond := corev1.NodeCondition{Type: "kquant.dev/FP8Validated", Status: corev1.ConditionFalse, Reason: "SNRBelowTolerance"}
	_, err = nodewriter.WriteConditions(ctx, env.Client, stale, nodewriter.Conditions{Set: []corev1.NodeCondition{cond}})
	if !apierrors.IsConflict(err) {
		t.Errorf("WriteConditions on a stale read = %v, want a conflict", err)
	}
	want := summary{labels: fresh.Labels, taints: fresh.Spec.Taints, conditions: []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionTrue}}
	if diff := cmp.Diff(want, summarize(read(t, stale.Name)), cmp.AllowUnexported(summary{})); diff != "" {
		t.Errorf("the other writers' changes were lost (-want +got):\n%s", diff)
	}
}

// summary is what the tests compare of a Node.
type summary struct {
	labels     map[string]string
	taints     []corev1.Taint
	conditions []corev1.ConditionStatus
}

func summarize(n *corev1.Node) summary {
	s := summary{labels: n.Labels, taints: n.Spec.Taints}
	for _, c := range n.Status.Conditions {
		s.conditions = append(s.conditions, c.Status)
	}
	return s
}
