// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/test/builders"
)

// TestNewRunReadsPending proves the CRD's structural defaults: the controller
// no longer writes status when it creates a run or binds it, and a run still
// reads back (API, watch, kubectl) with phase Pending until its agent runs it,
// as a Pod does. The run belongs to no job, so no controller touches it.
func TestNewRunReadsPending(t *testing.T) {
	ns := newNamespace(t)
	ctx := t.Context()
	run := builders.MakeQuantRun("lone-0-0", ns, "no-such-job").Obj()
	run.Status = kquantv1alpha1.QuantRunStatus{} // what the job controller creates
	if err := s.client.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.client.Delete(t.Context(), run) })
	if run.Status.Phase != kquantv1alpha1.RunPhasePending {
		t.Errorf("create returned phase %q, want Pending (CRD default)", run.Status.Phase)
	}
	got := &kquantv1alpha1.QuantRun{}
	if err := s.client.Get(ctx, client.ObjectKeyFromObject(run), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != kquantv1alpha1.RunPhasePending || quantrun.Phase(got) != kquantv1alpha1.RunPhasePending {
		t.Errorf("read back phase %q (derived %q), want Pending", got.Status.Phase, quantrun.Phase(got))
	}

	// Binding is one spec write: the stored phase stays Pending, the derived
	// phase is Bound.
	orig := got.DeepCopy()
	got.Spec.NodeName, got.Spec.GPUUUID, got.Spec.GPUIndex = "node-x", builders.GPUUUID("node-x", 0), ptr.To[int32](0)
	got.Labels[kquantv1alpha1.LabelNode] = "node-x"
	if err := s.client.Patch(ctx, got, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		t.Fatal(err)
	}
	if err := s.client.Get(ctx, client.ObjectKeyFromObject(run), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != kquantv1alpha1.RunPhasePending || quantrun.Phase(got) != kquantv1alpha1.RunPhaseBound {
		t.Errorf("bound run: stored phase %q (want Pending), derived %q (want Bound)", got.Status.Phase, quantrun.Phase(got))
	}

	// What a user sees.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := s.env.Kubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(s.env.KubectlPath(), "--kubeconfig", kubeconfig, "get", "qrun", "-n", ns, run.Name, "--no-headers").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get qrun: %v: %s", err, out)
	}
	if f := strings.Fields(string(out)); len(f) < 4 || f[1] != "node-x" || f[3] != "Pending" {
		t.Errorf("kubectl get qrun: %q, want NODE node-x and PHASE Pending", out)
	}
}
