// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/domain/summary"
)

// DefaultBackoffLimit is backoffLimit's default, for jobs written before the
// CRD defaulted it.
const DefaultBackoffLimit = 3

// DefaultDisruptionLimit is disruptionLimit's default, for jobs written
// before the field existed (the CRD defaults it for new ones).
const DefaultDisruptionLimit = 10

// DefaultMaxRuns is spec.placement.maxRuns's default, for jobs written before
// the field existed (the CRD defaults it for new ones).
const DefaultMaxRuns = 10000

// outcome is what the reconcile learned that the runs do not tell.
type outcome struct {
	// waitReason and waitMessage explain a job without runs that waits
	// (RecipeNotFound, Unschedulable).
	waitReason, waitMessage string
	// failReason and failMessage fail the job.
	failReason, failMessage string
	// expanded describes the runs this reconcile created, reported with the
	// status write that follows (see recordTransitions).
	expanded *expansion
}

// expansion is what one expansion created, for the RunsCreated event.
type expansion struct {
	// created is how many runs were created.
	created int
	// message says how: the placement, the eligible GPUs and the recipe.
	message string
}

// slot is one slot's attempts.
type slot struct {
	latest    *kquantv1alpha1.QuantRun
	everBound bool
}

// slotsOf groups runs by slot; latest is the highest attempt.
func slotsOf(runs []kquantv1alpha1.QuantRun) map[int]*slot {
	out := map[int]*slot{}
	for i := range runs {
		run := &runs[i]
		s := out[quantrun.Slot(run)]
		if s == nil {
			s = &slot{}
			out[quantrun.Slot(run)] = s
		}
		if s.latest == nil || run.Spec.Attempt > s.latest.Spec.Attempt {
			s.latest = run
		}
		s.everBound = s.everBound || quantrun.IsBound(run)
	}
	return out
}

// failedRuns counts the failed run attempts, the runs' own failures and the
// disruptions apart (kquantv1alpha1.IsRunDisruption), each with its latest.
func failedRuns(runs []kquantv1alpha1.QuantRun) (own, disrupted failures) {
	for i := range runs {
		if runs[i].Status.Phase != kquantv1alpha1.RunPhaseFailed {
			continue
		}
		if kquantv1alpha1.IsRunDisruption(runs[i].Status.Reason) {
			disrupted.add(&runs[i])
		} else {
			own.add(&runs[i])
		}
	}
	return own, disrupted
}

// failures is a count of failed run attempts and the one that finished last.
type failures struct {
	n    int32
	last *kquantv1alpha1.QuantRun
}

func (f *failures) add(run *kquantv1alpha1.QuantRun) {
	f.n++
	if f.last == nil || run.Status.CompletionTime != nil && f.last.Status.CompletionTime != nil && f.last.Status.CompletionTime.Before(run.Status.CompletionTime) {
		f.last = run
	}
}

// deadline is when the job fails for activeDeadlineSeconds. As for a Kubernetes
// Job, the clock starts when the job is created: time spent waiting for GPUs
// counts, so a job can never wait forever.
func deadline(job *kquantv1alpha1.QuantJob) (time.Time, bool) {
	if job.Spec.ActiveDeadlineSeconds == nil {
		return time.Time{}, false
	}
	return job.CreationTimestamp.Add(kquantv1alpha1.Seconds(*job.Spec.ActiveDeadlineSeconds)), true
}

// decideFailure says whether the job has failed, and why.
func decideFailure(job *kquantv1alpha1.QuantJob, runs []kquantv1alpha1.QuantRun, now time.Time) (reason, message string) {
	if d, ok := deadline(job); ok && !now.Before(d) {
		return kquantv1alpha1.ReasonDeadlineExceeded, fmt.Sprintf("job was active longer than activeDeadlineSeconds (%ds)", *job.Spec.ActiveDeadlineSeconds)
	}
	own, disrupted := failedRuns(runs)
	if limit := ptr.Deref(job.Spec.BackoffLimit, DefaultBackoffLimit); own.n > limit {
		return kquantv1alpha1.ReasonBackoffLimitExceeded, fmt.Sprintf("%d run attempts failed, more than backoffLimit %d; last: %s: %s: %s",
			own.n, limit, own.last.Name, own.last.Status.Reason, own.last.Status.Message)
	}
	if limit := ptr.Deref(job.Spec.DisruptionLimit, DefaultDisruptionLimit); disrupted.n > limit {
		return kquantv1alpha1.ReasonDisruptionLimitExceeded, fmt.Sprintf("%d run attempts were disrupted, more than disruptionLimit %d; last: %s: %s: %s",
			disrupted.n, limit, disrupted.last.Name, disrupted.last.Status.Reason, disrupted.last.Status.Message)
	}
	return "", ""
}

// computeStatus is the job's whole new status from its runs and the outcome;
// summarize summarises the succeeded runs (summary.Compute, or the
// controller's incremental summaries).
func computeStatus(job *kquantv1alpha1.QuantJob, runs []kquantv1alpha1.QuantRun, out outcome, now time.Time, summarize func([]summary.Run) *kquantv1alpha1.JobSummary) *kquantv1alpha1.QuantJobStatus {
	st := job.Status.DeepCopy()
	st.ObservedGeneration = job.Generation
	slots := slotsOf(runs)
	st.Total = max(job.Status.Total, int32(len(slots)))
	st.Pending, st.Running, st.Succeeded, st.WaitingForGPU = 0, 0, 0, 0
	bound := int32(0)
	var succeeded []summary.Run
	for _, s := range slots {
		switch run := s.latest; {
		case run.Status.Phase == kquantv1alpha1.RunPhaseSucceeded:
			st.Succeeded++
			succeeded = append(succeeded, summary.Run{Name: run.Name, Node: run.Spec.NodeName, GPU: quantrun.ExecutedGPU(run),
				Product: run.Annotations[quantrun.AnnotationProduct], Results: run.Status.Results})
		case quantrun.IsActive(run):
			st.Running++
		case quantrun.IsWaiting(run):
			st.Pending++
		}
		if s.everBound {
			bound++
		}
		if !s.latest.Status.Phase.IsTerminal() && s.latest.Status.Reason == kquantv1alpha1.RunReasonWaitingForGPU {
			st.WaitingForGPU++
		}
	}
	own, disrupted := failedRuns(runs)
	st.Failed, st.Disruptions = own.n, disrupted.n
	st.Progress = fmt.Sprintf("%d/%d", st.Succeeded, st.Total)
	st.Summary = summarize(succeeded)
	if st.StartTime == nil {
		st.StartTime = earliestBind(runs)
	}

	scheduled := metav1.Condition{Type: kquantv1alpha1.JobConditionScheduled, ObservedGeneration: job.Generation}
	switch {
	case len(runs) == 0 && out.waitReason != "":
		scheduled.Status, scheduled.Reason, scheduled.Message = metav1.ConditionFalse, out.waitReason, out.waitMessage
	case len(runs) == 0:
		scheduled.Status, scheduled.Reason, scheduled.Message = metav1.ConditionFalse, kquantv1alpha1.ReasonWaitingForGPUs, "no run created yet"
	case bound == st.Total:
		scheduled.Status, scheduled.Reason, scheduled.Message = metav1.ConditionTrue, kquantv1alpha1.ReasonAllRunsBound, fmt.Sprintf("all %d runs were bound to GPUs", st.Total)
	default:
		scheduled.Status, scheduled.Reason = metav1.ConditionFalse, kquantv1alpha1.ReasonWaitingForGPUs
		scheduled.Message = fmt.Sprintf("%d/%d runs were bound; the others wait for a free eligible GPU", bound, st.Total)
	}
	if st.WaitingForGPU > 0 {
		scheduled.Message += fmt.Sprintf("; %d wait for GPUs that the kubelet allocated to other pods (reason %s)",
			st.WaitingForGPU, kquantv1alpha1.RunReasonWaitingForGPU)
	}
	if out.failReason == "" || len(runs) == 0 {
		// A failing job keeps the scheduling story it had, unless it never got runs.
		meta.SetStatusCondition(&st.Conditions, scheduled)
	}

	switch {
	case out.failReason != "":
		st.Phase = kquantv1alpha1.JobPhaseFailed
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: kquantv1alpha1.JobConditionFailed, Status: metav1.ConditionTrue,
			Reason: out.failReason, Message: out.failMessage, ObservedGeneration: job.Generation})
	case st.Total > 0 && st.Succeeded == st.Total:
		st.Phase = kquantv1alpha1.JobPhaseSucceeded
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: kquantv1alpha1.JobConditionComplete, Status: metav1.ConditionTrue,
			Reason: kquantv1alpha1.ReasonAllRunsSucceeded, ObservedGeneration: job.Generation,
			Message: fmt.Sprintf("all %d runs finished (%s); the Passed condition says whether they passed", st.Total, countsText(verdictCounts(st)))})
	case len(runs) == 0 && out.waitReason == kquantv1alpha1.ReasonUnschedulable:
		st.Phase = kquantv1alpha1.JobPhaseUnschedulable
	case st.Running > 0:
		st.Phase = kquantv1alpha1.JobPhaseRunning
	default:
		st.Phase = kquantv1alpha1.JobPhasePending
	}
	if st.Phase.Finished() && st.CompletionTime == nil {
		st.CompletionTime = ptr.To(metav1.NewTime(now))
	}
	setPassed(st, job.Generation)
	return st
}

func earliestBind(runs []kquantv1alpha1.QuantRun) *metav1.Time {
	var first *metav1.Time
	for i := range runs {
		if t := runs[i].BindTime(); t != nil && (first == nil || t.Before(first)) {
			first = t.DeepCopy()
		}
	}
	return first
}
