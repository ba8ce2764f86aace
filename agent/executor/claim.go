// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package executor

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/agent/runstatus"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/logging"
)

// claimedRun is a run this agent executes: run carries the status the
// agent gave it and the resourceVersion its next write is conditional on;
// unwritten holds that status while it is not recorded yet (the run is
// still stored as bound; see Options.RunningAfter), nil once it is.
type claimedRun struct {
	run       *v1alpha1.QuantRun
	unwritten *runstatus.Status
}

// claim takes the run for this agent, retrying on conflict. The first
// attempt decides on cached, the copy the reconcile read from the informer
// cache; a write carries its resourceVersion, so a cache that was behind
// makes it conflict, and every retry decides again on a fresh read from the
// API server. (A fresh read before every write would cost one more request
// per run for the same guarantee.) A bound run is claimed without a write:
// its Running status waits for Options.RunningAfter (execute), and the
// first write, Running or the end, is conditional on the version decided
// on. A run left Running by a previous agent process is claimed at once, so
// that the record says it was restarted before it runs again. It returns
// the run as claimed, or a nil run when there is nothing to run (someone
// else changed it, its GPU is not here or not healthy, in which case the
// run is failed with a message that says so).
func (e *Executor) claim(ctx context.Context, cached *v1alpha1.QuantRun) (claimedRun, v1alpha1.GPU, error) {
	log := logging.FromContext(ctx)
	key := client.ObjectKeyFromObject(cached)
	var claimed claimedRun
	var gpu v1alpha1.GPU
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		claimed = claimedRun{}
		run := &v1alpha1.QuantRun{}
		if first {
			first = false
			cached.DeepCopyInto(run)
		} else if err := e.opts.APIReader.Get(ctx, key, run); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("reading run %s: %w", key, err)
		}
		if !e.mine(run) {
			return nil
		}
		restartedFrom := ""
		switch {
		case awaitsStart(run):
		case run.Status.Phase == v1alpha1.RunPhaseRunning && run.Status.AgentID != e.opts.AgentID:
			restartedFrom = run.Status.AgentID
		default:
			return nil
		}
		now := metav1.NewTime(e.opts.Clock.Now())
		st := runstatus.Status{
			Phase:      v1alpha1.RunPhaseRunning,
			AgentID:    e.opts.AgentID,
			BindTime:   run.BindTime(),
			StartTime:  &now,
			Conditions: ownConditions(run),
			Message:    "running on GPU " + run.Spec.GPUUUID,
		}
		var ok bool
		gpu, ok = e.opts.GPUs.GPU(run.Spec.GPUUUID)
		if ok {
			// In-agent execution runs on the GPU it was bound to; no kubelet
			// allocated it, so the source stays empty.
			st.AllocatedGPU = &v1alpha1.AllocatedGPU{UUID: gpu.UUID, Index: ptr.To(gpu.Index)}
		}
		switch {
		case run.Spec.MIGProfile != "":
			// The agent cannot confine its CUDA work to one MIG device.
			return e.failUnrunnable(ctx, run, st, "MIG device "+run.Spec.GPUUUID+": MIG slices run only in run pods (gpuAllocation DevicePlugin or DRA)")
		case !ok:
			return e.failUnrunnable(ctx, run, st, "GPU "+run.Spec.GPUUUID+" is not on node "+e.opts.NodeName)
		case gpu.Health == v1alpha1.HealthUnhealthy:
			return e.failUnrunnable(ctx, run, st, "GPU "+run.Spec.GPUUUID+" is unhealthy: "+gpu.HealthMessage)
		}
		if restartedFrom != "" {
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{
				Type:    v1alpha1.RunConditionRestarted,
				Status:  metav1.ConditionTrue,
				Reason:  ReasonAgentRestarted,
				Message: fmt.Sprintf("agent %s found the run Running under agent %s and ran it again from the start", e.opts.AgentID, restartedFrom),
			})
		}
		if restartedFrom == "" {
			claimed = claimedRun{run: run, unwritten: &st}
		} else {
			rv, err := applyStatus(ctx, e.opts.Client, run, st)
			if err != nil {
				return err
			}
			run.ResourceVersion = rv
			claimed = claimedRun{run: run}
		}
		run.Status.Phase, run.Status.AgentID, run.Status.StartTime, run.Status.BindTime = st.Phase, st.AgentID, st.StartTime, st.BindTime
		run.Status.Conditions, run.Status.AllocatedGPU = st.Conditions, st.AllocatedGPU
		log.Info("Run started", "gpu", run.Spec.GPUUUID, "restartedFrom", restartedFrom)
		e.count(v1alpha1.RunPhaseRunning)
		return nil
	})
	if err != nil {
		return claimedRun{}, gpu, fmt.Errorf("claiming run %s: %w", key, err)
	}
	return claimed, gpu, nil
}

// recordRunning writes a claimed run's Running status once it has run for
// Options.RunningAfter, conditional on the version the claim decided on; on
// a conflict it decides again on a fresh read. It reports false when the
// run is no longer this agent's to run (the controller failed it, it was
// deleted): the caller then stops the runner and records nothing.
func (e *Executor) recordRunning(ctx context.Context, c *claimedRun) (bool, error) {
	key := client.ObjectKeyFromObject(c.run)
	ours := true
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		run := &v1alpha1.QuantRun{}
		if first {
			first = false
			run.Namespace, run.Name, run.ResourceVersion = key.Namespace, key.Name, c.run.ResourceVersion
		} else if err := e.opts.APIReader.Get(ctx, key, run); err != nil {
			if apierrors.IsNotFound(err) {
				ours = false
				return nil
			}
			return fmt.Errorf("reading run %s: %w", key, err)
		} else if !e.boundHere(run) {
			ours = false
			return nil
		}
		rv, err := applyStatus(ctx, e.opts.Client, run, *c.unwritten)
		if err != nil {
			return err
		}
		c.run.ResourceVersion, c.unwritten = rv, nil
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("recording run %s Running: %w", key, err)
	}
	return ours, nil
}

// failUnrunnable fails a run this node cannot run at all, in one step.
func (e *Executor) failUnrunnable(ctx context.Context, run *v1alpha1.QuantRun, st runstatus.Status, msg string) error {
	now := metav1.NewTime(e.opts.Clock.Now())
	st.Phase, st.CompletionTime, st.Message = v1alpha1.RunPhaseFailed, &now, msg
	if _, err := applyStatus(ctx, e.opts.Client, run, st); err != nil {
		return err
	}
	logging.FromContext(ctx).Info("Run failed before starting", "message", msg)
	e.count(v1alpha1.RunPhaseFailed)
	return nil
}
