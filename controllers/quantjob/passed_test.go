// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

func TestPassedCondition(t *testing.T) {
	cases := map[string]struct {
		phase      kquantv1alpha1.JobPhase
		counts     *kquantv1alpha1.VerdictCounts
		wantStatus metav1.ConditionStatus // "" for no condition
		wantReason string
	}{
		"running jobs have none":               {phase: kquantv1alpha1.JobPhaseRunning, counts: &kquantv1alpha1.VerdictCounts{Pass: 1}},
		"every run passed":                     {phase: kquantv1alpha1.JobPhaseSucceeded, counts: &kquantv1alpha1.VerdictCounts{Pass: 4}, wantStatus: metav1.ConditionTrue, wantReason: "Pass"},
		"warnings pass":                        {phase: kquantv1alpha1.JobPhaseSucceeded, counts: &kquantv1alpha1.VerdictCounts{Pass: 3, Warn: 1}, wantStatus: metav1.ConditionTrue, wantReason: "Warn"},
		"finished with every run Fail":         {phase: kquantv1alpha1.JobPhaseSucceeded, counts: &kquantv1alpha1.VerdictCounts{Fail: 4}, wantStatus: metav1.ConditionFalse, wantReason: "Fail"},
		"one failure fails the job":            {phase: kquantv1alpha1.JobPhaseSucceeded, counts: &kquantv1alpha1.VerdictCounts{Pass: 3, Warn: 2, Fail: 1}, wantStatus: metav1.ConditionFalse, wantReason: "Fail"},
		"skipped runs do not pass":             {phase: kquantv1alpha1.JobPhaseSucceeded, counts: &kquantv1alpha1.VerdictCounts{Pass: 3, Skip: 1}, wantStatus: metav1.ConditionFalse, wantReason: "Skip"},
		"failed job without verdicts":          {phase: kquantv1alpha1.JobPhaseFailed, wantStatus: metav1.ConditionFalse, wantReason: kquantv1alpha1.ReasonIncomplete},
		"failed job keeps the verdicts it got": {phase: kquantv1alpha1.JobPhaseFailed, counts: &kquantv1alpha1.VerdictCounts{Pass: 1, Fail: 1}, wantStatus: metav1.ConditionFalse, wantReason: "Fail"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := &kquantv1alpha1.QuantJobStatus{Phase: tc.phase}
			if tc.counts != nil {
				st.Summary = &kquantv1alpha1.JobSummary{Verdicts: *tc.counts}
			}
			got := passedCondition(st, 3)
			if tc.wantStatus == "" {
				if got != nil {
					t.Fatalf("Passed = %+v, want none", got)
				}
				return
			}
			if got == nil || got.Status != tc.wantStatus || got.Reason != tc.wantReason || got.ObservedGeneration != 3 {
				t.Errorf("Passed = %+v, want %s with reason %s at generation 3", got, tc.wantStatus, tc.wantReason)
			}
		})
	}
}
