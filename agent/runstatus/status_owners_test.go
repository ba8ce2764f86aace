// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runstatus

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
)

// TestAgentStatusWritesOnlyTheAgentsFields checks the agent's apply, every
// field set, against the ownership table of apply.QuantRunStatusOwners.
func TestAgentStatusWritesOnlyTheAgentsFields(t *testing.T) {
	now := metav1.NewTime(time.Unix(1700000000, 0))
	st := Status{
		Phase: v1alpha1.RunPhaseSucceeded, AgentID: "a", BindTime: &now, StartTime: &now, CompletionTime: &now,
		AllocatedGPU: &v1alpha1.AllocatedGPU{UUID: "GPU-1"},
		Results:      &v1alpha1.RunResults{Verdict: v1alpha1.VerdictPass}, Message: "m",
		Conditions: []metav1.Condition{{Type: v1alpha1.RunConditionRestarted, Status: metav1.ConditionTrue, LastTransitionTime: now, Reason: "AgentRestarted"}},
	}
	fields, err := apply.StatusFields(st.applyConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	if len(fields) != 9 {
		t.Errorf("fields = %v, want all nine of the agent's", fields)
	}
	for _, f := range fields {
		if !apply.Owns(apply.ManagerAgent, f) {
			t.Errorf("the agent applies status.%s, which apply.QuantRunStatusOwners does not give it", f)
		}
	}
}
