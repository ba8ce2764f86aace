// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/indexer"
	"github.com/kquant/kquant/controllers/internal/runstatus"
	"github.com/kquant/kquant/domain/quantrun"
)

// runsOf lists job's runs through the job index, and deletes runs that carry
// the job's name but another UID: leftovers of a deleted job of the same name.
//
// The runs are shallow copies of the cache's objects (every run event
// reconciles its job, and deep-copying an EachGPU job's thousands of runs each
// time was quadratic): their top-level fields may be set, but their maps,
// slices and pointers belong to the cache. Write a DeepCopy.
func (r *Reconciler) runsOf(ctx context.Context, key types.NamespacedName, uid types.UID) ([]kquantv1alpha1.QuantRun, error) {
	list := &kquantv1alpha1.QuantRunList{}
	if err := r.client.List(ctx, list, client.InNamespace(key.Namespace), client.MatchingFields{indexer.RunJobKey: key.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing runs of job %s: %w", key, err)
	}
	// The job's runs are kept in the list's own array, filtered in place: a
	// job of every GPU of a large fleet has tens of thousands of runs, and a
	// second copy of them on every reconcile held 13% of the manager's heap
	// (2,000 runs, test/scale). An orphan is copied out before its slot is
	// reused.
	mine := list.Items[:0]
	var orphans []kquantv1alpha1.QuantRun
	for i := range list.Items {
		if uid != "" && list.Items[i].Spec.JobRef.UID == uid {
			mine = append(mine, list.Items[i])
		} else {
			orphans = append(orphans, list.Items[i])
		}
	}
	// Test clusters have no garbage collector, and a real one may lag: delete
	// orphans here so that a deleted job never leaves runs behind.
	if err := r.deleteRuns(ctx, orphans); err != nil {
		return nil, err
	}
	return mine, nil
}

func (r *Reconciler) deleteRuns(ctx context.Context, runs []kquantv1alpha1.QuantRun) error {
	var errs []error
	for i := range runs {
		run := runs[i].DeepCopy()
		if run.DeletionTimestamp != nil {
			continue
		}
		err := r.client.Delete(ctx, run, client.Preconditions{UID: &run.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting run %s: %w", run.Name, err))
		}
	}
	return errors.Join(errs...)
}

// retry creates the next attempt of every slot whose latest attempt failed,
// with the slot's target and snapshot, avoiding the GPUs and nodes where the
// slot already failed.
func (r *Reconciler) retry(ctx context.Context, job *kquantv1alpha1.QuantJob, runs []kquantv1alpha1.QuantRun) ([]kquantv1alpha1.QuantRun, error) {
	slots := slotsOf(runs)
	indexes := make([]int, 0, len(slots))
	for i := range slots {
		indexes = append(indexes, i)
	}
	slices.Sort(indexes)
	for _, i := range indexes {
		prev := slots[i].latest
		if prev.Status.Phase != kquantv1alpha1.RunPhaseFailed || i < 0 {
			continue
		}
		avoidGPUs := quantrun.SplitList(prev.Annotations[quantrun.AnnotationAvoidGPUs])
		avoidNodes := quantrun.SplitList(prev.Annotations[quantrun.AnnotationAvoidNodes])
		if prev.Spec.GPUUUID != "" && !slices.Contains(avoidGPUs, prev.Spec.GPUUUID) {
			avoidGPUs = append(avoidGPUs, prev.Spec.GPUUUID)
		}
		if prev.Spec.NodeName != "" && !slices.Contains(avoidNodes, prev.Spec.NodeName) {
			avoidNodes = append(avoidNodes, prev.Spec.NodeName)
		}
		run, err := r.nextAttempt(ctx, job, i, prev, prev.Annotations[quantrun.AnnotationTargetNode], prev.Annotations[quantrun.AnnotationTargetGPU], avoidGPUs, avoidNodes)
		if err != nil {
			return nil, err
		}
		runs = append(runs, *run)
		r.recorder.Eventf(job, run, corev1.EventTypeNormal, "Retrying", "Retry", "run %s failed (%s); created %s to run elsewhere",
			prev.Name, prev.Status.Reason, run.Name)
	}
	for _, rr := range uncoveredSlots(job, slots) {
		prev := slots[rr.slot].latest
		run, err := r.nextAttempt(ctx, job, rr.slot, prev, rr.node, rr.gpu, nil, nil)
		if err != nil {
			return nil, err
		}
		runs = append(runs, *run)
		r.recorder.Eventf(job, run, corev1.EventTypeNormal, "Rerun", "Retry", "run %s executed on GPU %s, which another run covered, not on its target %s; created %s for GPU %s, which no run covered",
			prev.Name, quantrun.ExecutedGPU(prev), prev.Annotations[quantrun.AnnotationTargetGPU], run.Name, rr.gpu)
	}
	return runs, nil
}

// nextAttempt creates the attempt after prev of slot, with prev's snapshot
// and the given target.
func (r *Reconciler) nextAttempt(ctx context.Context, job *kquantv1alpha1.QuantJob, slot int, prev *kquantv1alpha1.QuantRun, targetNode, targetGPU string, avoidGPUs, avoidNodes []string) (*kquantv1alpha1.QuantRun, error) {
	next := newRun(job, slot, int(prev.Spec.Attempt)+1, prev.Spec.Recipe, targetNode, targetGPU, avoidGPUs, avoidNodes)
	// Created unbound: the binder's pass places a retry, away from where
	// its slot failed.
	run, _, err := r.createRun(ctx, job, next)
	return run, err
}

// failRemaining fails every run of the job that has not finished, with the
// job's reason, so that no run stays bound to a GPU after its job failed.
func (r *Reconciler) failRemaining(ctx context.Context, job *kquantv1alpha1.QuantJob, runs []kquantv1alpha1.QuantRun, reason, message string) error {
	now := metav1.NewTime(r.clock.Now())
	var errs []error
	for i := range runs {
		if runs[i].Status.Phase.IsTerminal() {
			continue
		}
		run := runs[i].DeepCopy()
		err := runstatus.Apply(ctx, r.client, run, runstatus.Change{
			Phase: kquantv1alpha1.RunPhaseFailed, Reason: reason, Message: "job failed: " + message, CompletionTime: &now,
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r.recorder.Eventf(run, job, corev1.EventTypeWarning, reason, "FailRun", "job %s failed: %s", job.Name, message)
	}
	return errors.Join(errs...)
}

// finish handles a finished job: leftover runs of a failed job are failed, and
// after ttlSecondsAfterFinished the runs and the job are deleted.
func (r *Reconciler) finish(ctx context.Context, job *kquantv1alpha1.QuantJob, runs []kquantv1alpha1.QuantRun) (time.Duration, error) {
	if job.Status.Phase == kquantv1alpha1.JobPhaseFailed {
		cond := failedCondition(job)
		if err := r.failRemaining(ctx, job, runs, cond.Reason, cond.Message); err != nil {
			return 0, err
		}
	}
	if job.Spec.TTLSecondsAfterFinished == nil || job.Status.CompletionTime == nil {
		return 0, nil
	}
	expiry := job.Status.CompletionTime.Add(kquantv1alpha1.Seconds(*job.Spec.TTLSecondsAfterFinished))
	if now := r.clock.Now(); now.Before(expiry) {
		return expiry.Sub(now), nil
	}
	// Runs first, explicitly: the job's deletion alone relies on a garbage
	// collector, which test clusters lack.
	if err := r.deleteRuns(ctx, runs); err != nil {
		return 0, err
	}
	err := r.client.Delete(ctx, job, client.Preconditions{UID: ptr.To(job.UID)}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if client.IgnoreNotFound(err) != nil {
		return 0, fmt.Errorf("deleting finished job %s after its TTL: %w", job.Name, err)
	}
	return 0, nil
}

func failedCondition(job *kquantv1alpha1.QuantJob) metav1.Condition {
	for _, c := range job.Status.Conditions {
		if c.Type == kquantv1alpha1.JobConditionFailed {
			return c
		}
	}
	return metav1.Condition{Reason: kquantv1alpha1.ReasonBackoffLimitExceeded, Message: "job failed"}
}
