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
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/fakeagent"
)

// TestMIGSlicesOnlyWithTheOptIn: a node with a whole H100 and a
// MIG-partitioned one (three MIG devices, two profiles). A job without
// spec.placement.migSlices runs on the whole GPU only and its RunsCreated
// event says why the other was left out; one with it runs once on every MIG
// device too, each run bound to its MIG device and profile; on a node with
// only the MIG GPU, a job without the opt-in is Unschedulable and says why.
func TestMIGSlicesOnlyWithTheOptIn(t *testing.T) {
	ns := newNamespace(t)
	profile := builders.MakeGPUNodeProfile("mig-0").GPUs(builders.H100, 2).MIG(1, "3g.40gb", "2g.20gb", "2g.20gb").Ready().Obj()
	a := fakeagent.New(s.client, profile.DeepCopy(), leaseNamespace, fakeagent.WithRunDuration(50*time.Millisecond))
	startAgents(t, a)
	create(t, builders.MakeQuantRecipe("fp8", ns).Obj(),
		builders.MakeQuantJob("whole", ns).Recipe("fp8").EachGPU().Obj(),
		builders.MakeQuantJob("slices", ns).Recipe("fp8").EachGPU().MIGSlices().Obj())

	waitForPhase(t, ns, "whole", kquantv1alpha1.JobPhaseSucceeded)
	if runs := runsOf(t, ns, "whole"); len(runs) != 1 || runs[0].Spec.GPUUUID != builders.GPUUUID("mig-0", 0) || runs[0].Spec.MIGProfile != "" {
		t.Errorf("job without the opt-in: %d runs, want one on the whole GPU: %+v", len(runs), runs)
	}
	if events := eventsMatching(t, ns, "whole", "RunsCreated"); !strings.Contains(events, "1 MIG-enabled GPUs left out (their slices need spec.placement.migSlices: Include)") {
		t.Errorf("RunsCreated does not tell why the MIG GPU was left out: %q", events)
	}

	waitForPhase(t, ns, "slices", kquantv1alpha1.JobPhaseSucceeded)
	got := map[string]string{}
	for _, r := range runsOf(t, ns, "slices") {
		got[r.Spec.GPUUUID] = r.Spec.MIGProfile
	}
	want := map[string]string{
		builders.GPUUUID("mig-0", 0): "", builders.MIGUUID("mig-0", 1, 0): "3g.40gb",
		builders.MIGUUID("mig-0", 1, 1): "2g.20gb", builders.MIGUUID("mig-0", 1, 2): "2g.20gb",
	}
	if len(got) != len(want) {
		t.Errorf("job with the opt-in ran on %v, want %v", got, want)
	}
	for uuid, p := range want {
		if got[uuid] != p {
			t.Errorf("run bound to %s has migProfile %q, want %q", uuid, got[uuid], p)
		}
	}

	// Only the MIG GPU left: without the opt-in nothing is eligible.
	only := builders.MakeGPUNodeProfile("mig-0").GPUs(builders.H100, 1).MIG(0, "7g.80gb").Ready().Obj()
	if err := a.PublishProfile(t.Context(), only.Status); err != nil {
		t.Fatal(err)
	}
	// The job must be decided on the new profile, not on the cache's old one
	// with its whole GPU.
	eventually(t, "the manager's cache to see only the MIG GPU", func() (bool, string) {
		p := &kquantv1alpha1.GPUNodeProfile{}
		if err := s.cache.Get(t.Context(), client.ObjectKey{Name: "mig-0"}, p); err != nil {
			return false, err.Error()
		}
		return len(p.Status.GPUs) == 1, fmt.Sprintf("%d GPUs", len(p.Status.GPUs))
	})
	create(t, builders.MakeQuantJob("any", ns).Recipe("fp8").Obj())
	job := waitForPhase(t, ns, "any", kquantv1alpha1.JobPhaseUnschedulable)
	c := meta.FindStatusCondition(job.Status.Conditions, kquantv1alpha1.JobConditionScheduled)
	if c == nil || c.Reason != kquantv1alpha1.ReasonUnschedulable ||
		c.Message != "0/1 nodes: 1 have only MIG-enabled GPUs, whose slices need spec.placement.migSlices: Include" {
		t.Errorf("Scheduled condition %+v", c)
	}
}

// eventsMatching is the notes of the Events of reason about object name in ns.
func eventsMatching(t *testing.T, ns, name, reason string) string {
	t.Helper()
	return waitForEventNote(t, ns, name, reason, "")
}

// waitForEventNote waits until the notes of the Events with reason about
// object name in ns contain want ("" for any such Event), and returns them.
// Events about cluster-scoped objects, Nodes among them, live in "default".
func waitForEventNote(t *testing.T, ns, name, reason, want string) string {
	t.Helper()
	var out string
	eventually(t, reason+" events", func() (bool, string) {
		list := &eventsv1.EventList{}
		if err := s.client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason {
				notes = append(notes, e.Note)
			}
		}
		out = strings.Join(notes, "\n")
		return len(notes) > 0 && strings.Contains(out, want), out
	})
	return out
}
