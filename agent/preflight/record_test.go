// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package preflight

import (
	"context"
	"fmt"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/agent/runner"
	"github.com/kquant/kquant/agent/simulate"
	kquantscheme "github.com/kquant/kquant/api/scheme"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/bench"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/reference"
	"github.com/kquant/kquant/test/testenv"
)

// TestRecorder records against a real API server: with permission, each
// check is a finished QuantRun labelled as a preflight (the CRD's status
// rules admit it) and the verdict an Event on the pod; without, the
// preflight ends with the same verdict and writes nothing.
func TestRecorder(t *testing.T) {
	env := testenv.ForTest(t)
	ctx := context.Background()
	spec, err := simulate.Parse("H100:2")
	if err != nil {
		t.Fatal(err)
	}
	lib := simulate.NewNode("node-a", spec).Library()
	ref := reference.New()
	onReference := &bench.Runner{BackendFor: func(context.Context, v1alpha1.GPU) (quant.Backend, error) { return ref, nil }}
	f := mustRead(t, "small.yaml", fmt.Sprintf(smallJob, "200"))
	s, err := SettingsFor(f.Job, "")
	if err != nil {
		t.Fatal(err)
	}
	recipes := []Recipe{mustRead(t, "strict.yaml", strictFile).Recipes["mine"]}
	nobodyCfg, err := env.UserConfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	nobody, err := kquantscheme.NewClient(nobodyCfg)
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name       string
		client     client.Client
		runner     runner.Runner
		wantReason string
		wantPhase  v1alpha1.RunPhase
		wantRuns   int
		wantEvents int
	}{
		{name: "allowed: runs and an event", client: env.Client, runner: onReference, wantReason: v1alpha1.VerdictReasonSNRBelowTolerance,
			wantPhase: v1alpha1.RunPhaseSucceeded, wantRuns: 2, wantEvents: 1},
		{name: "a check that could not run is a Failed run", client: env.Client, runner: failingRunner{}, wantReason: ReasonCheckError,
			wantPhase: v1alpha1.RunPhaseFailed, wantRuns: 2, wantEvents: 1},
		{name: "not allowed: nothing, same verdict", client: nobody, runner: onReference, wantReason: v1alpha1.VerdictReasonSNRBelowTolerance},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns, err := env.CreateNamespace(ctx, "preflight")
			if err != nil {
				t.Fatal(err)
			}
			pod := Pod{Namespace: ns, Name: "trainer-0", UID: "uid-1", Node: "node-a"}
			out := Run(ctx, Options{Recipes: recipes, Settings: s, NVML: lib, Runner: tc.runner, Pod: pod,
				Recorder: &Recorder{Client: tc.client}})
			if out.Verdict != v1alpha1.VerdictFail || out.Reason != tc.wantReason {
				t.Errorf("verdict %s (%s)", out.Verdict, out.Reason)
			}
			runs := &v1alpha1.QuantRunList{}
			if err := env.Client.List(ctx, runs, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			if len(runs.Items) != tc.wantRuns {
				t.Fatalf("%d QuantRuns, want %d", len(runs.Items), tc.wantRuns)
			}
			recorded := map[string]bool{}
			for _, c := range out.Checks {
				recorded[c.Run] = true
			}
			for _, r := range runs.Items {
				succeeded := r.Status.Phase == v1alpha1.RunPhaseSucceeded && r.Status.Results != nil && r.Status.Results.Verdict == v1alpha1.VerdictFail
				failed := r.Status.Phase == v1alpha1.RunPhaseFailed && r.Status.Reason == ReasonCheckError && r.Status.Results == nil
				if r.Labels[v1alpha1.LabelPreflight] != "true" || r.Status.Phase != tc.wantPhase || (!succeeded && !failed) || !recorded[r.Name] {
					t.Errorf("run %s: labels %v phase %s results %+v", r.Name, r.Labels, r.Status.Phase, r.Status.Results)
				}
				if len(r.OwnerReferences) != 1 || r.OwnerReferences[0].UID != pod.UID || r.OwnerReferences[0].Kind != "Pod" {
					t.Errorf("run %s: owners %+v, want the pod", r.Name, r.OwnerReferences)
				}
				if r.Status.AgentID != v1alpha1.RunPodAgentID(pod.Name, pod.UID) || r.Status.AllocatedGPU == nil || r.Spec.GPUUUID != r.Status.AllocatedGPU.UUID {
					t.Errorf("run %s: agentID %q allocated %+v", r.Name, r.Status.AgentID, r.Status.AllocatedGPU)
				}
			}
			events := &eventsv1.EventList{}
			if err := env.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			if len(events.Items) != tc.wantEvents {
				t.Fatalf("%d events, want %d", len(events.Items), tc.wantEvents)
			}
			for _, e := range events.Items {
				if e.Regarding.Name != pod.Name || e.Reason != "PreflightFail" || e.Type != "Warning" || e.ReportingController != ReportingController {
					t.Errorf("event %+v", e)
				}
			}
		})
	}
}
