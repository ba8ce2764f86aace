// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/fakeagent"
)

// TestEachGPUWaitsForGPUsOtherPodsHold is the real-cluster story at the
// controller's level: a "training" pod holds 2 of a node's 4 GPUs (the
// agent publishes the kubelet's allocations in its profile). An EachGPU job
// validates the other 2 and never binds a run to the held ones, whose runs
// wait with WaitingForGPU, counted by the job; when the training pod ends,
// they are bound, run and succeed.
func TestEachGPUWaitsForGPUsOtherPodsHold(t *testing.T) {
	ns := newNamespace(t)
	profile := builders.MakeGPUNodeProfile("shared-0").GPUs(builders.H100, 4).Ready().Obj()
	held := map[string]bool{}
	for _, i := range []int{0, 1} {
		profile.Status.GPUs[i].Allocations = []kquantv1alpha1.GPUAllocation{{Namespace: "ml", Pod: "train-0", Container: "trainer",
			Source: kquantv1alpha1.AllocationSourceDevicePlugin, ResourceName: "nvidia.com/gpu"}}
		held[profile.Status.GPUs[i].UUID] = true
	}
	a := fakeagent.New(s.client, profile.DeepCopy(), leaseNamespace, fakeagent.WithRunDuration(100*time.Millisecond))
	startAgents(t, a)
	create(t, builders.MakeQuantRecipe("fp8", ns).Obj(), builders.MakeQuantJob("each", ns).Recipe("fp8").EachGPU().Obj())

	eventually(t, "the free GPUs validated and the held ones waited for", func() (bool, string) {
		runs := runsOf(t, ns, "each")
		succeeded, waiting := 0, 0
		for _, r := range runs {
			if held[r.Spec.GPUUUID] {
				t.Fatalf("run %s was bound to GPU %s, which pod ml/train-0 holds", r.Name, r.Spec.GPUUUID)
			}
			switch {
			case r.Status.Phase == kquantv1alpha1.RunPhaseSucceeded:
				succeeded++
			case r.Status.Reason == kquantv1alpha1.RunReasonWaitingForGPU:
				waiting++
				if !strings.Contains(r.Status.Message, "ml/train-0") || quantrun.IsBound(&r) {
					return false, fmt.Sprintf("waiting run %s bound=%v message %q", r.Name, quantrun.IsBound(&r), r.Status.Message)
				}
			}
		}
		job := getJob(t, ns, "each")
		return succeeded == 2 && waiting == 2 && job.Status.WaitingForGPU == 2,
			fmt.Sprintf("%d succeeded, %d waiting, job waitingForGPU %d", succeeded, waiting, job.Status.WaitingForGPU)
	})
	job := getJob(t, ns, "each")
	if c := meta.FindStatusCondition(job.Status.Conditions, kquantv1alpha1.JobConditionScheduled); c == nil ||
		!strings.Contains(c.Message, "2 wait for GPUs that the kubelet allocated to other pods") {
		t.Errorf("job Scheduled condition %+v does not tell that 2 runs wait for GPUs", c)
	}
	if job.Status.Phase != kquantv1alpha1.JobPhasePending && job.Status.Phase != kquantv1alpha1.JobPhaseRunning {
		t.Errorf("job phase %s while runs wait, want Pending or Running", job.Status.Phase)
	}

	// The training pod ends: the agent publishes the GPUs as free.
	if err := a.PublishProfile(t.Context(), builders.MakeGPUNodeProfile("shared-0").GPUs(builders.H100, 4).Ready().Obj().Status); err != nil {
		t.Fatal(err)
	}
	job = waitForPhase(t, ns, "each", kquantv1alpha1.JobPhaseSucceeded)
	if job.Status.WaitingForGPU != 0 || job.Status.Progress != "4/4" {
		t.Errorf("finished job waitingForGPU %d progress %s, want 0 and 4/4", job.Status.WaitingForGPU, job.Status.Progress)
	}
	gpus := map[string]bool{}
	for _, r := range runsOf(t, ns, "each") {
		gpus[r.Spec.GPUUUID] = true
		if r.Status.Reason == kquantv1alpha1.RunReasonWaitingForGPU {
			t.Errorf("run %s still says %s after it was bound: %q", r.Name, r.Status.Reason, r.Status.Message)
		}
	}
	if len(gpus) != 4 {
		t.Errorf("runs covered %d GPUs, want all 4", len(gpus))
	}
	events := eventsFor(t, ns, "each")
	if !strings.Contains(events, kquantv1alpha1.RunReasonWaitingForGPU) {
		t.Errorf("job events %q tell nothing of runs waiting for GPUs", events)
	}
}

// eventsFor is the reasons and notes of the Events about object name in ns.
func eventsFor(t *testing.T, ns, name string) string {
	t.Helper()
	var out []string
	eventually(t, "events", func() (bool, string) {
		list := &eventsv1.EventList{}
		if err := s.client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		out = out[:0]
		for _, e := range list.Items {
			if e.Regarding.Name == name {
				out = append(out, e.Reason+": "+e.Note)
			}
		}
		return strings.Contains(strings.Join(out, "\n"), kquantv1alpha1.RunReasonWaitingForGPU), strings.Join(out, "\n")
	})
	return strings.Join(out, "\n")
}
