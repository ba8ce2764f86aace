// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package executor

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/agent/runstatus"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
)

// FieldManager is the agent's field manager (the same as the profile's).
const FieldManager = apply.ManagerAgent

// Condition reasons the agent writes.
const (
	// ReasonAgentRestarted: Restarted=True, the run was found Running under
	// a previous agent process of this node and run again from the start.
	ReasonAgentRestarted = "AgentRestarted"
	// ReasonShutdownGraceExpired: Abandoned=True, the agent was shutting
	// down and the run did not finish within the grace period.
	ReasonShutdownGraceExpired = "ShutdownGraceExpired"
	// ReasonFinishedDuringShutdown: Abandoned=False, the agent was shutting
	// down and the run finished within the grace period.
	ReasonFinishedDuringShutdown = "FinishedDuringShutdown"
)

// agentConditions are the condition types the agent owns on a run.
var agentConditions = map[string]bool{
	v1alpha1.RunConditionRestarted: true,
	v1alpha1.RunConditionAbandoned: true,
}

// ownConditions returns the agent's conditions already on the run, to be
// carried into the next apply.
func ownConditions(run *v1alpha1.QuantRun) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range run.Status.Conditions {
		if agentConditions[c.Type] {
			out = append(out, c)
		}
	}
	return out
}

// applyStatus is runstatus.Apply under the agent's field manager.
func applyStatus(ctx context.Context, c client.Client, run *v1alpha1.QuantRun, st runstatus.Status) (string, error) {
	return runstatus.Apply(ctx, c, FieldManager, run, st)
}
