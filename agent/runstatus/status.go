// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runstatus

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
	ac "github.com/kquant/kquant/api/v1alpha1/applyconfiguration/api/v1alpha1"
)

// Status holds every status field an executor of runs writes: the agent
// (in-agent execution, apply.ManagerAgent) and a run pod
// (apply.ManagerRunPod), each its own fields of apply.QuantRunStatusOwners
// (the agent never sets Reason, a run pod never Conditions). Server-side apply removes fields that a manager stops
// sending, so each apply carries all of the writer's fields, not just the
// ones that changed.
type Status struct {
	Phase          v1alpha1.RunPhase
	AgentID        string
	BindTime       *metav1.Time
	StartTime      *metav1.Time
	CompletionTime *metav1.Time
	AllocatedGPU   *v1alpha1.AllocatedGPU
	Results        *v1alpha1.RunResults
	Reason         string
	Message        string
	Conditions     []metav1.Condition
}

// applyConfiguration is st as the apply configuration of a run's status.
func (st Status) applyConfiguration() *ac.QuantRunStatusApplyConfiguration {
	status := &ac.QuantRunStatusApplyConfiguration{
		AgentID:        apply.String(st.AgentID),
		BindTime:       apply.Time(st.BindTime),
		StartTime:      apply.Time(st.StartTime),
		CompletionTime: apply.Time(st.CompletionTime),
		AllocatedGPU:   apply.AllocatedGPU(st.AllocatedGPU),
		Results:        apply.RunResults(st.Results),
		Reason:         apply.String(st.Reason),
		Message:        apply.String(st.Message),
		Conditions:     apply.Conditions(st.Conditions),
	}
	if st.Phase != "" {
		status.WithPhase(st.Phase)
	}
	return status
}

// Apply applies st to the run's status subresource under the field
// manager, with run's resourceVersion as a precondition: a change since the
// read conflicts. It returns the run's resourceVersion after the write.
func Apply(ctx context.Context, c client.Client, manager string, run *v1alpha1.QuantRun, st Status) (string, error) {
	return apply.QuantRunStatus(ctx, c, manager, run, st.applyConfiguration())
}
