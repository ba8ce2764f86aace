// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/fakeagent"
)

// A Hopper-only fleet cannot run MXFP8 natively: the job is Unschedulable and
// says why, until a Blackwell node joins.
func TestHopperFleetRequireNativeMXFP8IsUnschedulable(t *testing.T) {
	ns := newNamespace(t)
	startAgents(t,
		agent("hopper-a", builders.H100, 8), agent("hopper-b", builders.H100, 8),
		agent("hopper-c", builders.H200, 8, fakeagent.WithNode(map[string]string{"pool": "serving"})),
	)
	create(t,
		builders.MakeQuantRecipe("mxfp8", ns).MXFP8(kquantv1alpha1.ScaleRoundingTE).Obj(),
		builders.MakeQuantJob("native", ns).Recipe("mxfp8").EachGPU().RequireNative().Obj(),
	)
	job := waitForPhase(t, ns, "native", kquantv1alpha1.JobPhaseUnschedulable)
	got := condition(job.Status.Conditions, kquantv1alpha1.JobConditionScheduled)
	want := "0/3 nodes: 3 lack native MXFP8 (compute capability 9.0 < 10.0)"
	if got.Status != metav1.ConditionFalse || got.Reason != kquantv1alpha1.ReasonUnschedulable || got.Message != want {
		t.Errorf("Scheduled = %s/%s %q, want False/Unschedulable %q", got.Status, got.Reason, got.Message, want)
	}
	if runs := runsOf(t, ns, "native"); len(runs) != 0 {
		t.Errorf("an Unschedulable job has %d runs, want 0", len(runs))
	}

	// Re-evaluated when the fleet changes: a Blackwell node makes it schedulable.
	startAgents(t, agent("blackwell-a", builders.B200, 2))
	job = waitForPhase(t, ns, "native", kquantv1alpha1.JobPhaseSucceeded)
	if job.Status.Total != 2 || job.Status.Progress != "2/2" {
		t.Errorf("total %d progress %q, want 2 and 2/2", job.Status.Total, job.Status.Progress)
	}
	for _, r := range runsOf(t, ns, "native") {
		if r.Spec.NodeName != "blackwell-a" {
			t.Errorf("run %s on %s, want blackwell-a", r.Name, r.Spec.NodeName)
		}
	}
}

// EachGPU over 3 nodes x 8 GPUs makes 24 runs; with two such jobs competing,
// no GPU ever has two active runs and no job exceeds maxParallel.
func TestEachGPUNeverTwoActiveRunsOnOneGPU(t *testing.T) {
	ns := newNamespace(t)
	var agents []*fakeagent.Agent
	for i := range 3 {
		// Leases long enough that a starved renewal on a loaded machine
		// never fails runs as NodeLost: retries would add runs to the count.
		agents = append(agents, agent(fmt.Sprintf("each-%d", i), builders.H100, 8,
			fakeagent.WithRunDuration(300*time.Millisecond), fakeagent.WithLeaseDuration(30*time.Second)))
	}
	startAgents(t, agents...)
	create(t, builders.MakeQuantRecipe("fp8", ns).Obj(),
		builders.MakeQuantJob("first", ns).Recipe("fp8").EachGPU().MaxParallel(10).Obj())
	time.Sleep(20 * time.Millisecond) // a later creation time: FCFS order
	create(t, builders.MakeQuantJob("second", ns).Recipe("fp8").EachGPU().MaxParallel(24).Obj())

	maxActive := map[string]int{}
	eventually(t, "both jobs to succeed with no GPU shared", func() (bool, string) {
		// One list of both jobs' runs: a consistent snapshot. Listing each
		// job on its own could see a run of the first still active and, a
		// moment later, the second's run bound to the GPU it just freed.
		all := &kquantv1alpha1.QuantRunList{}
		if err := s.client.List(t.Context(), all, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		done := true
		gpuHolders := map[string][]string{}
		active := map[string]int{}
		for _, r := range all.Items {
			if quantrun.IsActive(&r) {
				active[r.Spec.JobRef.Name]++
				gpuHolders[r.Spec.GPUUUID] = append(gpuHolders[r.Spec.GPUUUID], r.Name)
			}
		}
		for _, name := range []string{"first", "second"} {
			maxActive[name] = max(maxActive[name], active[name])
			done = done && getJob(t, ns, name).Status.Phase == kquantv1alpha1.JobPhaseSucceeded
		}
		for gpu, holders := range gpuHolders {
			if len(holders) > 1 {
				t.Fatalf("GPU %s has %d active runs: %v", gpu, len(holders), holders)
			}
		}
		return done, fmt.Sprintf("max active %v", maxActive)
	})
	if maxActive["first"] > 10 {
		t.Errorf("job first had %d active runs, more than maxParallel 10", maxActive["first"])
	}
	for _, name := range []string{"first", "second"} {
		runs := runsOf(t, ns, name)
		gpus := map[string]bool{}
		for _, r := range runs {
			gpus[r.Spec.GPUUUID] = true
			if r.Spec.Execution.Iterations == nil || *r.Spec.Execution.Iterations != 20 || *r.Spec.Execution.Warmup != 3 {
				t.Errorf("run %s execution %+v, want Quick presets 20/3", r.Name, r.Spec.Execution)
			}
			if len(r.OwnerReferences) != 1 || r.OwnerReferences[0].BlockOwnerDeletion == nil || !*r.OwnerReferences[0].BlockOwnerDeletion {
				t.Errorf("run %s owner references %+v, want the job with blockOwnerDeletion", r.Name, r.OwnerReferences)
			}
			if r.Labels[kquantv1alpha1.LabelNode] != r.Spec.NodeName {
				t.Errorf("run %s label %s=%q, want %q", r.Name, kquantv1alpha1.LabelNode, r.Labels[kquantv1alpha1.LabelNode], r.Spec.NodeName)
			}
		}
		if len(runs) != 24 || len(gpus) != 24 {
			t.Errorf("job %s has %d runs on %d GPUs, want 24 on 24", name, len(runs), len(gpus))
		}
		if job := getJob(t, ns, name); job.Status.Progress != "24/24" || condition(job.Status.Conditions, kquantv1alpha1.JobConditionComplete).Status != metav1.ConditionTrue {
			t.Errorf("job %s progress %q conditions %v", name, job.Status.Progress, job.Status.Conditions)
		}
	}
}

// A job whose runs can all be bound at once creates them bound (one write per
// run: generation 1, no binding patch after); a job created while its GPUs are
// busy creates its runs unbound, and the binder binds them as the GPUs free up
// (generation 2), never two active runs on a GPU.
func TestRunsCreatedBoundWhenGPUsAreFree(t *testing.T) {
	ns := newNamespace(t)
	startAgents(t, agent("created-bound", builders.H100, 4, fakeagent.WithRunDuration(time.Second)))
	create(t, builders.MakeQuantRecipe("fp8", ns).Obj(),
		builders.MakeQuantJob("first", ns).Recipe("fp8").EachGPU().MaxParallel(4).Obj())
	eventually(t, "the first job's runs", func() (bool, string) {
		runs := runsOf(t, ns, "first")
		return len(runs) == 4, fmt.Sprintf("%d runs", len(runs))
	})
	create(t, builders.MakeQuantJob("second", ns).Recipe("fp8").EachGPU().MaxParallel(4).Obj())
	waitForPhase(t, ns, "first", kquantv1alpha1.JobPhaseSucceeded)
	waitForPhase(t, ns, "second", kquantv1alpha1.JobPhaseSucceeded)

	for _, tc := range []struct {
		job            string
		wantGeneration int64
	}{
		{job: "first", wantGeneration: 1},
		{job: "second", wantGeneration: 2},
	} {
		runs := runsOf(t, ns, tc.job)
		if len(runs) != 4 {
			t.Errorf("job %s has %d runs, want 4", tc.job, len(runs))
		}
		for _, r := range runs {
			if r.Spec.NodeName != "created-bound" || r.Generation != tc.wantGeneration || r.Annotations[quantrun.AnnotationBindTime] == "" {
				t.Errorf("run %s: node %q generation %d bind time %q, want node created-bound, generation %d and a bind time",
					r.Name, r.Spec.NodeName, r.Generation, r.Annotations[quantrun.AnnotationBindTime], tc.wantGeneration)
			}
		}
	}
}
