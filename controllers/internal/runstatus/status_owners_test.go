// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runstatus

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
)

// TestStatusApplyWritesOnlyTheControllersFields checks the controller's
// apply against the ownership table of apply.QuantRunStatusOwners.
func TestStatusApplyWritesOnlyTheControllersFields(t *testing.T) {
	now := metav1.NewTime(time.Unix(1700000000, 0))
	status := statusApply(Change{Phase: kquantv1alpha1.RunPhaseFailed, Reason: "NodeLost", Message: "m", CompletionTime: &now,
		RunPod: &kquantv1alpha1.RunPodReference{Name: "r", UID: "u"}, Results: &kquantv1alpha1.RunResults{Verdict: kquantv1alpha1.VerdictPass}}, &now)
	fields, err := apply.StatusFields(status)
	if err != nil {
		t.Fatal(err)
	}
	// results only when recording a run pod's end from its termination
	// message.
	if len(fields) != 7 {
		t.Errorf("fields = %v, want phase, bindTime, completionTime, reason, message, runPod, results", fields)
	}
	for _, f := range fields {
		if !apply.Owns(FieldManager, f) {
			t.Errorf("the controller applies status.%s, which apply.QuantRunStatusOwners does not give it", f)
		}
	}
}
