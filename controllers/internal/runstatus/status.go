// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runstatus

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
	ac "github.com/kquant/kquant/api/v1alpha1/applyconfiguration/api/v1alpha1"
)

// FieldManager is the controller's server-side apply field manager.
const FieldManager = apply.ManagerController

// Change is a transition the controller makes.
type Change struct {
	Phase   kquantv1alpha1.RunPhase
	Reason  string
	Message string
	// BindTime, when nil, is the run's own (BindTime).
	BindTime *metav1.Time
	// CompletionTime is set when failing the run.
	CompletionTime *metav1.Time
	// RunPod, when nil, is the run's own (status.runPod): recorded once,
	// carried over by every later write.
	RunPod *kquantv1alpha1.RunPodReference
	// Results are set only when recording a run's end that its run pod left
	// in its termination message but could not write itself; that write is
	// terminal, and no controller write follows a terminal one, so they are
	// never dropped by a later apply that leaves them out.
	Results *kquantv1alpha1.RunResults
}

// Apply writes change to run's status with server-side apply, only if the
// run is still at run.ResourceVersion (a conflict error otherwise). It applies
// the controller's fields of apply.QuantRunStatusOwners and no others, so the
// agent's stay the agent's. bindTime is carried over from run (its status,
// else its bind-time annotation), because server-side apply would otherwise
// remove a field the manager applied before and left out now; runPod for
// the same reason.
func Apply(ctx context.Context, c client.Client, run *kquantv1alpha1.QuantRun, change Change) error {
	bindTime := change.BindTime
	if bindTime == nil {
		bindTime = run.BindTime()
	}
	if change.RunPod == nil {
		change.RunPod = run.Status.RunPod
	}
	rv, err := apply.QuantRunStatus(ctx, c, FieldManager, run, statusApply(change, bindTime))
	if err != nil {
		return fmt.Errorf("writing phase %s: %w", change.Phase, err)
	}
	run.Status.Phase = change.Phase
	run.Status.BindTime = bindTime
	if change.CompletionTime != nil {
		run.Status.CompletionTime = change.CompletionTime
	}
	run.Status.Reason, run.Status.Message = change.Reason, change.Message
	run.Status.RunPod = change.RunPod
	if change.Results != nil {
		run.Status.Results = change.Results
	}
	if rv != "" {
		run.ResourceVersion = rv
	}
	return nil
}

// statusApply is the apply configuration of change: the controller's status
// fields.
func statusApply(change Change, bindTime *metav1.Time) *ac.QuantRunStatusApplyConfiguration {
	return &ac.QuantRunStatusApplyConfiguration{
		Phase:          &change.Phase,
		BindTime:       apply.Time(bindTime),
		CompletionTime: apply.Time(change.CompletionTime),
		Reason:         apply.String(change.Reason),
		Message:        apply.String(change.Message),
		RunPod:         apply.RunPod(change.RunPod),
		Results:        apply.RunResults(change.Results),
	}
}
