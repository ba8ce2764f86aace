// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantcronjob

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// scheduleInvalid records that cj's schedule cannot be used, with a Warning
// Event when that is news: the cron job stays idle until it is fixed.
func (r *Reconciler) scheduleInvalid(cj *kquantv1alpha1.QuantCronJob, status *kquantv1alpha1.QuantCronJobStatus, err error) {
	changed := meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: kquantv1alpha1.CronJobConditionScheduleValid, Status: metav1.ConditionFalse, ObservedGeneration: cj.Generation,
		Reason: kquantv1alpha1.ReasonInvalidSchedule, Message: err.Error() + "; no job is scheduled until spec.schedule is fixed",
	})
	if changed {
		r.recorder.Eventf(cj, nil, corev1.EventTypeWarning, kquantv1alpha1.ReasonInvalidSchedule, "Schedule", "%v; no job is scheduled until spec.schedule is fixed", err)
	}
}

// scheduleValid records that cj's schedule parses and fires.
func scheduleValid(cj *kquantv1alpha1.QuantCronJob, status *kquantv1alpha1.QuantCronJobStatus) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: kquantv1alpha1.CronJobConditionScheduleValid, Status: metav1.ConditionTrue, ObservedGeneration: cj.Generation,
		Reason: kquantv1alpha1.ReasonScheduleValid, Message: "spec.schedule parses and fires",
	})
}

// atActiveLimit reports whether MaxActiveJobs jobs of cj are active, and if
// so records that the job named job, due for why, was skipped: a condition,
// and a Warning Event when the limit was not reached before.
func (r *Reconciler) atActiveLimit(cj *kquantv1alpha1.QuantCronJob, status *kquantv1alpha1.QuantCronJobStatus, job, why string) bool {
	if len(status.Active) < kquantv1alpha1.MaxActiveJobs {
		return false
	}
	message := fmt.Sprintf("not creating job %s (%s): %d jobs are active, the most one QuantCronJob may have (MaxActiveJobs %d)",
		job, why, len(status.Active), kquantv1alpha1.MaxActiveJobs)
	changed := meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: kquantv1alpha1.CronJobConditionActiveLimitReached, Status: metav1.ConditionTrue, ObservedGeneration: cj.Generation,
		Reason: kquantv1alpha1.ReasonTooManyActiveJobs, Message: message,
	})
	if changed {
		r.recorder.Eventf(cj, nil, corev1.EventTypeWarning, kquantv1alpha1.ReasonTooManyActiveJobs, "Create", "%s", message)
	}
	return true
}

// withinActiveLimit records that a due job was created again, once the
// limit had been reached.
func withinActiveLimit(cj *kquantv1alpha1.QuantCronJob, status *kquantv1alpha1.QuantCronJobStatus) {
	if !meta.IsStatusConditionTrue(status.Conditions, kquantv1alpha1.CronJobConditionActiveLimitReached) {
		return
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: kquantv1alpha1.CronJobConditionActiveLimitReached, Status: metav1.ConditionFalse, ObservedGeneration: cj.Generation,
		Reason: kquantv1alpha1.ReasonWithinLimit, Message: fmt.Sprintf("fewer than %d jobs are active", kquantv1alpha1.MaxActiveJobs),
	})
}
