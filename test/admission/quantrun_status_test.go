// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package admission

import (
	"context"
	"strings"
	"testing"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

// TestRunStatusTransitions: the QuantRun status rules hold for every writer,
// an administrator included: a finished run stays finished, results come
// only with the end, and the recorded run pod is the run's for good.
func TestRunStatusTransitions(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	pod := &kquantv1alpha1.RunPodReference{Name: "run-pod", UID: "uid-1"}
	results := builders.SyntheticResults("800", "12", "3", "31", kquantv1alpha1.VerdictPass)
	for _, tc := range []struct {
		name    string
		from    kquantv1alpha1.QuantRunStatus
		to      func(*kquantv1alpha1.QuantRunStatus)
		wantErr string // "" when allowed
	}{
		{"Pending to Running", kquantv1alpha1.QuantRunStatus{Phase: kquantv1alpha1.RunPhasePending},
			func(s *kquantv1alpha1.QuantRunStatus) { s.Phase = kquantv1alpha1.RunPhaseRunning }, ""},
		{"Running to Succeeded with results", kquantv1alpha1.QuantRunStatus{Phase: kquantv1alpha1.RunPhaseRunning},
			func(s *kquantv1alpha1.QuantRunStatus) { s.Phase, s.Results = kquantv1alpha1.RunPhaseSucceeded, results }, ""},
		{"Succeeded back to Running", kquantv1alpha1.QuantRunStatus{Phase: kquantv1alpha1.RunPhaseSucceeded, Results: results},
			func(s *kquantv1alpha1.QuantRunStatus) { s.Phase, s.Results = kquantv1alpha1.RunPhaseRunning, nil }, "a finished run (Succeeded or Failed) cannot change phase"},
		{"Failed to Succeeded", kquantv1alpha1.QuantRunStatus{Phase: kquantv1alpha1.RunPhaseFailed},
			func(s *kquantv1alpha1.QuantRunStatus) { s.Phase, s.Results = kquantv1alpha1.RunPhaseSucceeded, results }, "a finished run (Succeeded or Failed) cannot change phase"},
		{"a message on a finished run", kquantv1alpha1.QuantRunStatus{Phase: kquantv1alpha1.RunPhaseFailed},
			func(s *kquantv1alpha1.QuantRunStatus) { s.Message = "explained" }, ""},
		{"results while Running", kquantv1alpha1.QuantRunStatus{Phase: kquantv1alpha1.RunPhaseRunning},
			func(s *kquantv1alpha1.QuantRunStatus) { s.Results = results }, "status.results may be set only with phase Succeeded or Failed"},
		{"recording the run pod", kquantv1alpha1.QuantRunStatus{Phase: kquantv1alpha1.RunPhasePending},
			func(s *kquantv1alpha1.QuantRunStatus) { s.RunPod = pod }, ""},
		{"another run pod", kquantv1alpha1.QuantRunStatus{Phase: kquantv1alpha1.RunPhasePending, RunPod: pod},
			func(s *kquantv1alpha1.QuantRunStatus) {
				s.RunPod = &kquantv1alpha1.RunPodReference{Name: "run-pod", UID: "uid-2"}
			}, "status.runPod cannot change once recorded"},
		{"dropping the run pod", kquantv1alpha1.QuantRunStatus{Phase: kquantv1alpha1.RunPhasePending, RunPod: pod},
			func(s *kquantv1alpha1.QuantRunStatus) { s.RunPod = nil }, "status.runPod cannot change once recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := builders.MakeQuantRun(strings.ReplaceAll(strings.ToLower(tc.name), " ", "-"), ns, "job").Bound("node-a", 0).Obj()
			run.Status = tc.from
			if err := env.Client.Create(ctx, run); err != nil {
				t.Fatal(err)
			}
			run.Status = tc.from
			if err := env.Client.Status().Update(ctx, run); err != nil {
				t.Fatalf("writing the starting status: %v", err)
			}
			tc.to(&run.Status)
			err := env.Client.Status().Update(ctx, run)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("want allowed, got %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want a refusal saying %q", err, tc.wantErr)
			}
		})
	}
}
