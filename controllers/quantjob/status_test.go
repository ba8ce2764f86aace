// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/domain/summary"
	"github.com/kquant/kquant/test/builders"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// ignoreTimes is the shared go-cmp option: times are checked separately.
var ignoreTimes = cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")

func run(slot, attempt int, mod func(*builders.QuantRunWrapper)) kquantv1alpha1.QuantRun {
	w := builders.MakeQuantRun(quantrun.Name("j", slot, attempt), "ns", "j").Attempt(int32(attempt)).
		Annotation(quantrun.AnnotationSlot, strconv.Itoa(slot))
	if mod != nil {
		mod(w)
	}
	return *w.Obj()
}

func TestComputeStatus(t *testing.T) {
	job := builders.MakeQuantJob("j", "ns").EachGPU().Obj()
	job.Generation = 2
	job.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	succeeded := func(w *builders.QuantRunWrapper) {
		w.Bound("a", 0).Phase(kquantv1alpha1.RunPhaseSucceeded).Results("800", "12", "3", "31", kquantv1alpha1.VerdictPass)
	}
	failed := func(w *builders.QuantRunWrapper) { w.Bound("a", 1).Phase(kquantv1alpha1.RunPhaseFailed) }
	running := func(w *builders.QuantRunWrapper) { w.Bound("a", 1).Phase(kquantv1alpha1.RunPhaseRunning) }
	cases := map[string]struct {
		runs          []kquantv1alpha1.QuantRun
		out           outcome
		wantPhase     kquantv1alpha1.JobPhase
		wantCounts    [5]int32 // total, pending, running, succeeded, failed
		wantProgress  string
		wantScheduled string
		wantFailed    string
	}{
		"unschedulable without runs": {
			out:       outcome{waitReason: kquantv1alpha1.ReasonUnschedulable, waitMessage: "0/1 nodes: 1 are not Ready"},
			wantPhase: kquantv1alpha1.JobPhaseUnschedulable, wantProgress: "0/0", wantScheduled: kquantv1alpha1.ReasonUnschedulable,
		},
		"recipe not found waits": {
			out:       outcome{waitReason: kquantv1alpha1.ReasonRecipeNotFound},
			wantPhase: kquantv1alpha1.JobPhasePending, wantProgress: "0/0", wantScheduled: kquantv1alpha1.ReasonRecipeNotFound,
		},
		"one running, one waiting": {
			runs:      []kquantv1alpha1.QuantRun{run(0, 0, running), run(1, 0, nil)},
			wantPhase: kquantv1alpha1.JobPhaseRunning, wantCounts: [5]int32{2, 1, 1, 0, 0}, wantProgress: "0/2", wantScheduled: kquantv1alpha1.ReasonWaitingForGPUs,
		},
		"retry pending after a failure keeps the slot bound once": {
			runs:      []kquantv1alpha1.QuantRun{run(0, 0, failed), run(0, 1, nil)},
			wantPhase: kquantv1alpha1.JobPhasePending, wantCounts: [5]int32{1, 1, 0, 0, 1}, wantProgress: "0/1", wantScheduled: kquantv1alpha1.ReasonAllRunsBound,
		},
		"all succeeded": {
			runs:      []kquantv1alpha1.QuantRun{run(0, 0, failed), run(0, 1, succeeded), run(1, 0, succeeded)},
			wantPhase: kquantv1alpha1.JobPhaseSucceeded, wantCounts: [5]int32{2, 0, 0, 2, 1}, wantProgress: "2/2", wantScheduled: kquantv1alpha1.ReasonAllRunsBound,
		},
		"failure wins": {
			runs:      []kquantv1alpha1.QuantRun{run(0, 0, running)},
			out:       outcome{failReason: kquantv1alpha1.ReasonDeadlineExceeded, failMessage: "too long"},
			wantPhase: kquantv1alpha1.JobPhaseFailed, wantCounts: [5]int32{1, 0, 1, 0, 0}, wantProgress: "0/1", wantFailed: kquantv1alpha1.ReasonDeadlineExceeded,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := computeStatus(job, tc.runs, tc.out, now, summary.Compute)
			got := [5]int32{st.Total, st.Pending, st.Running, st.Succeeded, st.Failed}
			if st.Phase != tc.wantPhase || got != tc.wantCounts || st.Progress != tc.wantProgress {
				t.Errorf("phase %s counts %v progress %q; want %s %v %q", st.Phase, got, st.Progress, tc.wantPhase, tc.wantCounts, tc.wantProgress)
			}
			if tc.wantScheduled != "" {
				if c := findCondition(st.Conditions, kquantv1alpha1.JobConditionScheduled); c == nil || c.Reason != tc.wantScheduled || c.ObservedGeneration != 2 {
					t.Errorf("Scheduled = %+v, want reason %s at generation 2", c, tc.wantScheduled)
				}
			}
			if tc.wantFailed != "" {
				if c := findCondition(st.Conditions, kquantv1alpha1.JobConditionFailed); c == nil || c.Reason != tc.wantFailed {
					t.Errorf("Failed = %+v, want reason %s", c, tc.wantFailed)
				}
			}
			if finished := st.Phase.Finished(); finished != (st.CompletionTime != nil) {
				t.Errorf("phase %s with completionTime %v", st.Phase, st.CompletionTime)
			}
		})
	}
}

func TestComputeStatusIsStable(t *testing.T) {
	job := builders.MakeQuantJob("j", "ns").Obj()
	runs := []kquantv1alpha1.QuantRun{run(0, 0, func(w *builders.QuantRunWrapper) { w.Bound("a", 0).Phase(kquantv1alpha1.RunPhaseRunning) })}
	job.Status = *computeStatus(job, runs, outcome{}, now, summary.Compute)
	again := computeStatus(job, runs, outcome{}, now.Add(time.Minute), summary.Compute)
	if diff := cmp.Diff(&job.Status, again, ignoreTimes); diff != "" {
		t.Errorf("a second reconcile changed the status (-first +second):\n%s", diff)
	}
}

func TestDecideFailure(t *testing.T) {
	failed := func(slot int) kquantv1alpha1.QuantRun {
		return run(slot, 0, func(w *builders.QuantRunWrapper) { w.Phase(kquantv1alpha1.RunPhaseFailed) })
	}
	disrupted := func(slot int, reason string) kquantv1alpha1.QuantRun {
		return run(slot, 0, func(w *builders.QuantRunWrapper) {
			w.Phase(kquantv1alpha1.RunPhaseFailed)
			w.Status.Reason = reason
		})
	}
	cases := map[string]struct {
		job        *kquantv1alpha1.QuantJob
		runs       []kquantv1alpha1.QuantRun
		wantReason string
	}{
		"nothing wrong":          {job: builders.MakeQuantJob("j", "ns").Obj()},
		"deadline passed":        {job: builders.MakeQuantJob("j", "ns").ActiveDeadline(30 * time.Second).Obj(), wantReason: kquantv1alpha1.ReasonDeadlineExceeded},
		"deadline not yet":       {job: builders.MakeQuantJob("j", "ns").ActiveDeadline(2 * time.Minute).Obj()},
		"failures within limit":  {job: builders.MakeQuantJob("j", "ns").BackoffLimit(2).Obj(), runs: []kquantv1alpha1.QuantRun{failed(0), failed(1)}},
		"failures over limit":    {job: builders.MakeQuantJob("j", "ns").BackoffLimit(1).Obj(), runs: []kquantv1alpha1.QuantRun{failed(0), failed(1)}, wantReason: kquantv1alpha1.ReasonBackoffLimitExceeded},
		"default limit is three": {job: builders.MakeQuantJob("j", "ns").Obj(), runs: []kquantv1alpha1.QuantRun{failed(0), failed(1), failed(2), failed(3)}, wantReason: kquantv1alpha1.ReasonBackoffLimitExceeded},
		"disruptions use no backoffLimit": {job: builders.MakeQuantJob("j", "ns").BackoffLimit(0).Obj(), runs: []kquantv1alpha1.QuantRun{
			disrupted(0, kquantv1alpha1.RunReasonNodeLost), disrupted(1, kquantv1alpha1.RunReasonRunPodLost), disrupted(2, kquantv1alpha1.RunReasonGPUInUse)}},
		"disruptions over their limit": {job: builders.MakeQuantJob("j", "ns").DisruptionLimit(1).Obj(), runs: []kquantv1alpha1.QuantRun{
			disrupted(0, kquantv1alpha1.RunReasonNodeLost), disrupted(1, kquantv1alpha1.RunReasonRunPodLost)}, wantReason: kquantv1alpha1.ReasonDisruptionLimitExceeded},
		"a timeout is the run's own": {job: builders.MakeQuantJob("j", "ns").BackoffLimit(0).Obj(), runs: []kquantv1alpha1.QuantRun{
			disrupted(0, kquantv1alpha1.RunReasonRunTimedOut)}, wantReason: kquantv1alpha1.ReasonBackoffLimitExceeded},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.job.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
			if got, _ := decideFailure(tc.job, tc.runs, now); got != tc.wantReason {
				t.Errorf("decideFailure() = %q, want %q", got, tc.wantReason)
			}
		})
	}
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// The controller's summaries add the runs that succeeded since the last
// reconcile and start afresh when a summarised run is gone: always the
// summary of the runs listed.
func TestSummariesFollowTheRuns(t *testing.T) {
	s := &summaries{}
	key := types.NamespacedName{Namespace: "ns", Name: "job"}
	mk := func(names ...string) []summary.Run {
		var out []summary.Run
		for i, n := range names {
			out = append(out, summary.Run{Name: n, Product: "H100",
				Results: builders.SyntheticResults(fmt.Sprintf("%d", 800+i*10), "12", "2.5", "31.5", kquantv1alpha1.VerdictPass)})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		uid  types.UID
		runs []summary.Run
	}{
		{name: "first runs", uid: "a", runs: mk("r-0-0", "r-1-0")},
		{name: "more runs", uid: "a", runs: mk("r-0-0", "r-1-0", "r-2-0", "r-3-0")},
		{name: "a run gone", uid: "a", runs: mk("r-0-0", "r-2-0", "r-3-0")},
		{name: "same name, another job", uid: "b", runs: mk("r-0-0")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(summary.Compute(tc.runs), s.summarize(key, tc.uid, tc.runs)); diff != "" {
				t.Errorf("summarize() differs from Compute (-want +got):\n%s", diff)
			}
		})
	}
}
