// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/test/builders"
)

// TestNewRunPassesRunPodLabels: the job labels that decide something about
// its run pods (a Kueue queue, an idle validation's PriorityClass) reach
// its runs, from which the execution controller builds the pods; no other
// label does.
func TestNewRunPassesRunPodLabels(t *testing.T) {
	cases := []struct {
		name       string
		labels     map[string]string
		wantLabels map[string]string
	}{
		{name: "none", labels: map[string]string{"team": "a"}, wantLabels: map[string]string{}},
		{name: "Kueue queue", labels: map[string]string{quantrun.LabelKueueQueue: "benchmarks"},
			wantLabels: map[string]string{quantrun.LabelKueueQueue: "benchmarks"}},
		{name: "idle validation", labels: map[string]string{kquantv1alpha1.LabelIdleValidation: "true", kquantv1alpha1.LabelGatePolicy: "fp8"},
			wantLabels: map[string]string{kquantv1alpha1.LabelIdleValidation: "true"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := builders.MakeQuantJob("j", "ns").Obj()
			job.Labels = tc.labels
			run := newRun(job, 0, 0, kquantv1alpha1.RecipeSnapshot{}, "", "", nil, nil)
			got := map[string]string{}
			for k, v := range run.Labels {
				if k != kquantv1alpha1.LabelJob {
					got[k] = v
				}
			}
			if diff := cmp.Diff(tc.wantLabels, got); diff != "" {
				t.Errorf("run labels besides the job's (-want +got):\n%s", diff)
			}
		})
	}
}
