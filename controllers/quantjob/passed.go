// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// verdictCounts are the job's runs counted by verdict (zero without a summary).
func verdictCounts(st *kquantv1alpha1.QuantJobStatus) kquantv1alpha1.VerdictCounts {
	if st.Summary == nil {
		return kquantv1alpha1.VerdictCounts{}
	}
	return st.Summary.Verdicts
}

// countsText is the verdict counts as people read them in the condition
// message and the completion event.
func countsText(c kquantv1alpha1.VerdictCounts) string {
	return fmt.Sprintf("%d Pass, %d Fail, %d Warn, %d Skip", c.Pass, c.Fail, c.Warn, c.Skip)
}

// passedCondition is the Passed condition of a finished job: finished is not
// passed (a Validation job whose runs all fail their tolerances still
// finishes), so the condition's reason is the worst verdict. Nil while the
// job has not finished.
func passedCondition(st *kquantv1alpha1.QuantJobStatus, generation int64) *metav1.Condition {
	if !st.Phase.Finished() {
		return nil
	}
	c := verdictCounts(st)
	cond := &metav1.Condition{Type: kquantv1alpha1.JobConditionPassed, ObservedGeneration: generation, Status: metav1.ConditionFalse}
	switch worst := c.WorstVerdict(); {
	case worst == "":
		cond.Reason, cond.Message = kquantv1alpha1.ReasonIncomplete, "the job failed before any run gave a verdict"
	case worst.Passes():
		cond.Status, cond.Reason = metav1.ConditionTrue, string(worst)
		cond.Message = fmt.Sprintf("%d of %d runs with a verdict passed: %s", c.Pass+c.Warn, c.Total(), countsText(c))
	default:
		cond.Reason = string(worst)
		cond.Message = fmt.Sprintf("%d of %d runs with a verdict did not pass: %s", c.Fail+c.Skip, c.Total(), countsText(c))
	}
	return cond
}

// setPassed sets the Passed condition once the job finished.
func setPassed(st *kquantv1alpha1.QuantJobStatus, generation int64) {
	if cond := passedCondition(st, generation); cond != nil {
		meta.SetStatusCondition(&st.Conditions, *cond)
	}
}
