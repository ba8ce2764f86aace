// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/kquant/kquant/agent/gpuguard"
	"github.com/kquant/kquant/agent/runstatus"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/logging"
)

// execute runs the Runner and records how it ended. It writes with the
// root context: a hard stop (root cancelled) records nothing and leaves the
// run Running for the next agent process to re-run.
func (e *Executor) execute(runCtx context.Context, ex *execution, claimed claimedRun, gpu v1alpha1.GPU) {
	defer e.release(ex)
	log := logging.FromContext(e.root).WithValues("quantRun", ex.key.String(), "gpu", ex.gpu)
	ctx := logr.NewContext(e.root, log)
	started := e.opts.Clock.Now()
	run := claimed.run

	type outcome struct {
		results *v1alpha1.RunResults
		err     error
	}
	ended := make(chan outcome, 1)
	go func() {
		results, err := e.opts.Runner.Run(runCtx, run, gpu)
		ended <- outcome{results, err}
	}()
	var out outcome
	if claimed.unwritten == nil {
		out = <-ended
	} else {
		timer := e.opts.Clock.NewTimer(e.opts.RunningAfter)
		select {
		case out = <-ended:
			timer.Stop()
		case <-timer.C():
			ours, err := e.recordRunning(ctx, &claimed)
			switch {
			case err != nil:
				// Keep running: the end's write, conditional on the
				// version decided on and retried until it lands, records
				// the run all the same (nothing would requeue a run left
				// bound here).
				log.Error(err, "Recording a run Running failed; its end will be recorded")
			case !ours:
				ex.cancel()
				<-ended
				log.Info("Run changed hands before it was recorded Running, stopped")
				return
			}
			out = <-ended
		}
	}
	results, err := out.results, out.err

	if ex.deleted.Load() || e.root.Err() != nil {
		return
	}
	now := metav1.NewTime(e.opts.Clock.Now())
	st := runstatus.Status{
		AgentID:        e.opts.AgentID,
		BindTime:       run.Status.BindTime,
		StartTime:      run.Status.StartTime,
		CompletionTime: &now,
		AllocatedGPU:   run.Status.AllocatedGPU,
		Conditions:     ownConditions(run),
	}
	switch {
	case err == nil && results != nil:
		st.Phase, st.Results, st.Message = v1alpha1.RunPhaseSucceeded, results, results.FinishedMessage(ex.gpu, run.Spec.Tolerances)
		if ex.draining.Load() {
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{
				Type: v1alpha1.RunConditionAbandoned, Status: metav1.ConditionFalse, Reason: ReasonFinishedDuringShutdown,
				Message: "the agent was shutting down and the run finished within the grace period",
			})
		}
	case ex.abandoned.Load():
		st.Phase, st.Message = v1alpha1.RunPhaseFailed, "abandoned: the agent shut down before the run finished"
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: v1alpha1.RunConditionAbandoned, Status: metav1.ConditionTrue, Reason: ReasonShutdownGraceExpired,
			Message: "the agent was shutting down and the run did not finish within the grace period",
		})
	case err == nil:
		st.Phase, st.Message = v1alpha1.RunPhaseFailed, "the runner returned no results"
	default:
		// "GPUInUse: ..." when the guard stopped it, as a run pod says it.
		st.Phase, st.Message = v1alpha1.RunPhaseFailed, gpuguard.TerminationMessage(err)
	}
	if err := e.finish(ctx, ex.key, run.ResourceVersion, claimed.unwritten == nil, st); err != nil {
		log.Error(err, "Recording the end of a run failed")
		return
	}
	e.count(st.Phase)
	if e.opts.Metrics != nil {
		e.opts.Metrics.duration.WithLabelValues(string(st.Phase)).Observe(e.opts.Clock.Since(started).Seconds())
		if st.Results != nil && st.Results.Performance != nil {
			e.opts.Metrics.observeBandwidth(e.opts.NodeName, gpu, ex.gpu, run.Spec.Recipe.Name, st.Results.Performance.BandwidthGBps)
		}
	}
	log.Info("Run ended", "phase", st.Phase, "message", st.Message)
}

// errNotOurs stops a retry: the run is no longer Running under this agent.
var errNotOurs = errors.New("run no longer running under this agent")

// finishRetryCap bounds the wait between attempts to record a run's end.
const finishRetryCap = 10 * time.Second

// finish applies the end state, unless the run changed hands meanwhile (the
// controller failed it as NodeLost or for its deadline): that decision
// stands. claimedRV is the run's resourceVersion as this agent's claim left
// it, recorded (Running under this agent) or not (still bound: the run
// ended before RunningAfter): the first attempt writes conditional on it
// without reading (unchanged since the claim means still this agent's),
// and a conflict sends every retry through a fresh read. Transient failures (the API server restarting, timeouts) are
// retried until the write lands or the agent stops: a run whose end is not
// recorded stays Running under this agent, whose Lease stays fresh, so
// nothing else would ever finish or retry it (test/e2e's control-plane
// restart found runs stuck that way). Meanwhile the run keeps its GPU, which
// matches what the controller sees.
func (e *Executor) finish(ctx context.Context, key types.NamespacedName, claimedRV string, recorded bool, st runstatus.Status) error {
	delay := 200 * time.Millisecond
	for {
		err := e.finishOnce(ctx, key, claimedRV, recorded, st)
		if err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		logging.FromContext(ctx).Info("Recording the end of a run failed, retrying", "err", err.Error(), "after", delay.String())
		select {
		case <-ctx.Done():
			return err
		case <-e.opts.Clock.After(delay):
		}
		delay = min(2*delay, finishRetryCap)
	}
}

// transient reports whether a failed write may succeed later unchanged: no
// answer from the API server at all, or one that says try again.
func transient(err error) bool {
	return apierrors.ReasonForError(err) == metav1.StatusReasonUnknown ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err)
}

func (e *Executor) finishOnce(ctx context.Context, key types.NamespacedName, claimedRV string, recorded bool, st runstatus.Status) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		run := &v1alpha1.QuantRun{}
		if claimedRV != "" {
			run.Namespace, run.Name, run.ResourceVersion = key.Namespace, key.Name, claimedRV
			claimedRV = ""
			_, err := applyStatus(ctx, e.opts.Client, run, st)
			return err
		}
		if err := e.opts.APIReader.Get(ctx, key, run); err != nil {
			if apierrors.IsNotFound(err) {
				return errNotOurs
			}
			return fmt.Errorf("reading run %s: %w", key, err)
		}
		runningHere := run.Status.Phase == v1alpha1.RunPhaseRunning && run.Status.AgentID == e.opts.AgentID
		if !runningHere && (recorded || !e.boundHere(run)) {
			return errNotOurs
		}
		_, err := applyStatus(ctx, e.opts.Client, run, st)
		return err
	})
	if errors.Is(err, errNotOurs) {
		logging.FromContext(ctx).Info("Run changed hands while running, result dropped")
		return nil
	}
	return err
}
