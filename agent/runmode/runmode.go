// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runmode

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/agent/gpuguard"
	"github.com/kquant/kquant/agent/runner"
	"github.com/kquant/kquant/agent/runstatus"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
	"github.com/kquant/kquant/internal/logging"
	"github.com/kquant/kquant/internal/runoutcome"
)

// FieldManager is the run pod's field manager.
const FieldManager = apply.ManagerRunPod

// DefaultFinishTimeout bounds recording the end of a run once the run pod was
// asked to stop: a pod's default termination grace is 30 s. It is also the
// least time a finished run's write is retried for, however close the run
// came to its time limit.
const DefaultFinishTimeout = 15 * time.Second

// DefaultFinishBackoff is how the final status write is retried: from 200 ms,
// doubling, up to 10 s between tries, for as long as the write's context
// allows (the run's time limit). Steps is only a ceiling the context reaches
// first.
func DefaultFinishBackoff() wait.Backoff {
	return wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Cap: 10 * time.Second, Steps: math.MaxInt32}
}

// Waiting for the manager to record this pod as the run's (status.runPod),
// which it does right after creating the pod: DefaultRecordTimeout bounds
// the wait, DefaultRecordPoll is how often the run is read meanwhile.
const (
	DefaultRecordTimeout = 2 * time.Minute
	DefaultRecordPoll    = 500 * time.Millisecond
)

// ErrNotRecorded is returned when the run's status.runPod does not name this
// pod: another pod was recorded (this one is stale or forged), or none was
// within RecordTimeout. The run-pod admission policy refuses this pod's
// status writes either way, so it writes nothing.
var ErrNotRecorded = errors.New("this pod is not the run pod recorded in the run's status.runPod")

// ErrTerminated is the cause the caller cancels Execute's context with when
// the run pod is asked to stop (SIGTERM: the pod was deleted, evicted or
// preempted). The run is then recorded Failed with the retryable reason
// RunPodLost, never left Running.
var ErrTerminated = errors.New("the run pod was asked to stop (SIGTERM) before the run finished")

// Pod is the run pod's identity, from the downward API.
type Pod struct {
	Namespace, Name string
	UID             types.UID
	// Node is the node the pod runs on; empty skips the check that it is
	// the run's.
	Node string
}

// AgentID is what the run pod writes as the run's status.agentID
// (v1alpha1.RunPodAgentID).
func (p Pod) AgentID() string { return v1alpha1.RunPodAgentID(p.Name, p.UID) }

// Options configure Execute.
type Options struct {
	// Run names the QuantRun to execute.
	Run types.NamespacedName
	Pod Pod
	// Client reads and writes the run directly (no cache), with the run
	// pod's own service account.
	Client client.Client
	// NVML returns the library the run pod sees its GPU through (go-nvml's
	// nvml.New() in a pod; a simulated node's view of the run's GPU in
	// tests); Execute initialises and shuts it down.
	NVML func(run *v1alpha1.QuantRun) gonvml.Interface
	// Source is how the kubelet allocated the GPU (DevicePlugin or DRA).
	Source v1alpha1.AllocationSource
	// Runner executes the run: the measurement harness, as in the agent.
	Runner runner.Runner
	// Open creates the run's CUDA context before its first kernel (see
	// gpuguard.RunOptions); nil on the reference backend.
	Open runner.Opener
	// Baselines measures the GPU's reference costs after a finished run, for
	// the node's profile (results.baselines); nil measures none (reference
	// backend). A failure is logged, never fails the run.
	Baselines     func(ctx context.Context, gpu v1alpha1.GPU) (*v1alpha1.Baselines, error)
	GuardInterval time.Duration
	FinishTimeout time.Duration
	// FinishBackoff paces the final status write's retries
	// (DefaultFinishBackoff() when its Duration is zero).
	FinishBackoff wait.Backoff
	// RecordTimeout and RecordPoll bound the wait for status.runPod
	// (DefaultRecordTimeout, DefaultRecordPoll when zero).
	RecordTimeout time.Duration
	RecordPoll    time.Duration
	Clock         clock.WithTicker
}

// Outcome is how the run ended, for the pod's exit code and termination
// message.
type Outcome struct {
	// Phase is the run's phase as this pod left it: Succeeded or Failed,
	// or empty when the pod found nothing to run.
	Phase v1alpha1.RunPhase
	// Reason is a RunReason* for a Failed run.
	Reason  string
	Message string
	// Results and CompletionTime are the run's, once it finished here.
	Results        *v1alpha1.RunResults
	CompletionTime *metav1.Time
}

// Ran reports whether the run finished here (any verdict): the pod then
// exits 0.
func (o Outcome) Ran() bool { return o.Phase == v1alpha1.RunPhaseSucceeded }

// TerminationMessage is what the pod leaves in its termination log: for a
// run that ended here, the runoutcome encoding ("<Reason>: <message>" on
// the first line, which runpod.PodOutcome also reads, then the outcome with
// the results that fit), from which the manager records the run if this
// pod's own write never landed; otherwise the message alone.
func (o Outcome) TerminationMessage() string {
	if o.Phase.IsTerminal() {
		msg, err := runoutcome.Encode(runoutcome.Document{
			Phase: o.Phase, Reason: o.Reason, Message: o.Message, CompletionTime: o.CompletionTime, Results: o.Results,
		})
		if err == nil {
			return msg
		}
	}
	return runoutcome.Summary(o.Reason, o.Message)
}

// outcomeOf is the Outcome of a run that ended here with st.
func outcomeOf(st runstatus.Status) Outcome {
	return Outcome{Phase: st.Phase, Reason: st.Reason, Message: st.Message, Results: st.Results, CompletionTime: st.CompletionTime}
}

// Execute runs one QuantRun in this pod: it reads the run, finds the GPU
// the kubelet allocated, records it and Running, runs the guarded runner and
// records the end. It returns an error only when it could not record
// anything about the run (no API server, no such run); every other failure
// is recorded on the run and returned as a Failed Outcome.
func Execute(ctx context.Context, opts Options) (Outcome, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.FinishTimeout <= 0 {
		opts.FinishTimeout = DefaultFinishTimeout
	}
	if opts.RecordTimeout <= 0 {
		opts.RecordTimeout = DefaultRecordTimeout
	}
	if opts.RecordPoll <= 0 {
		opts.RecordPoll = DefaultRecordPoll
	}
	if opts.FinishBackoff.Duration <= 0 {
		opts.FinishBackoff = DefaultFinishBackoff()
	}
	started := opts.Clock.Now()
	log := logging.FromContext(ctx).WithValues("quantRun", opts.Run.String(), "pod", opts.Pod.Name)
	ctx = logging.IntoContext(ctx, log)
	// Status writes outlive a SIGTERM, within FinishTimeout.
	writeCtx := context.WithoutCancel(ctx)

	run, err := awaitRecord(ctx, opts)
	if err != nil {
		return Outcome{}, err
	}
	if run.Status.Phase.IsTerminal() {
		log.Info("Run already finished, nothing to do", "phase", run.Status.Phase)
		return Outcome{Message: "run already " + string(run.Status.Phase)}, nil
	}
	lib := opts.NVML(run)
	if ret := lib.Init(); ret != gonvml.SUCCESS {
		return failEarly(writeCtx, opts, run, nil, fmt.Errorf("no GPU visible to the run pod: initialising NVML: %w", ret))
	}
	defer lib.Shutdown()
	if opts.Pod.Node != "" && run.Spec.NodeName != opts.Pod.Node {
		return failEarly(writeCtx, opts, run, nil, fmt.Errorf("run pod is on node %s, the run is bound to %s", opts.Pod.Node, run.Spec.NodeName))
	}
	gpu, err := findAllocated(ctx, lib, run, opts.Source)
	if err != nil {
		return failEarly(writeCtx, opts, run, nil, err)
	}
	log = log.WithValues("gpu", gpu.gpu.UUID)
	ctx = logging.IntoContext(ctx, log)

	claimed, err := claim(writeCtx, opts, run, gpu.status)
	if err != nil || claimed == nil {
		return Outcome{}, err
	}
	log.Info("Run started", "allocatedGPU", gpu.status.UUID, "boundGPU", run.Spec.GPUUUID, "source", gpu.status.Source)

	guarded := gpuguard.Guarded(opts.Runner, gpuguard.RunOptions{
		Guard: gpuguard.New(lib), Open: opts.Open, Interval: opts.GuardInterval, Clock: opts.Clock,
	})
	results, err := guarded.Run(ctx, claimed, gpu.gpu)
	if err == nil && results != nil && opts.Baselines != nil && ctx.Err() == nil {
		b, berr := opts.Baselines(ctx, gpu.gpu)
		if berr != nil {
			log.Error(berr, "Measuring baselines failed")
		}
		results.Baselines = b
	}
	st := end(claimed, opts, results, err, context.Cause(ctx))
	finishCtx, cancel := context.WithDeadline(writeCtx, finishDeadline(ctx, opts, claimed, started))
	defer cancel()
	if err := finish(finishCtx, opts, claimed, st); err != nil {
		return outcomeOf(st), fmt.Errorf("recording the end of run %s: %w", opts.Run, err)
	}
	log.Info("Run ended", "phase", st.Phase, "reason", st.Reason, "message", st.Message)
	return outcomeOf(st), nil
}

// finishDeadline bounds the final status write's retries. A pod asked to
// stop has its termination grace, FinishTimeout of it. Otherwise the run's
// time limit (kquantv1alpha1.RunTimeout, counted here from the pod's start,
// a little after the manager starts counting) bounds them: past it the
// manager fails the run and deletes the pod anyway, and until then it waits
// for this pod. A run that ended near its limit still gets FinishTimeout.
func finishDeadline(ctx context.Context, opts Options, run *v1alpha1.QuantRun, started time.Time) time.Time {
	least := opts.Clock.Now().Add(opts.FinishTimeout)
	if errors.Is(context.Cause(ctx), ErrTerminated) {
		return least
	}
	if limit := started.Add(v1alpha1.RunTimeout(run.Spec.Execution)); limit.After(least) {
		return limit
	}
	return least
}

// awaitRecord reads the run until its status.runPod names this pod (or the
// run finished): until the manager records the pod, which it does right
// after creating it, the run-pod admission policy refuses every status write
// of this pod's token. A run that records another pod is not this pod's to
// run; neither is one that records none within RecordTimeout.
func awaitRecord(ctx context.Context, opts Options) (*v1alpha1.QuantRun, error) {
	deadline := opts.Clock.Now().Add(opts.RecordTimeout)
	for {
		run := &v1alpha1.QuantRun{}
		if err := opts.Client.Get(ctx, opts.Run, run); err != nil {
			return nil, fmt.Errorf("reading run %s: %w", opts.Run, err)
		}
		rec := run.Status.RunPod
		switch {
		case run.Status.Phase.IsTerminal(), rec != nil && rec.UID == opts.Pod.UID:
			return run, nil
		case rec != nil:
			return nil, fmt.Errorf("%w: run %s records pod %s (UID %s), this is pod %s (UID %s)",
				ErrNotRecorded, opts.Run, rec.Name, rec.UID, opts.Pod.Name, opts.Pod.UID)
		case !opts.Clock.Now().Before(deadline):
			return nil, fmt.Errorf("%w: run %s recorded no pod within %s", ErrNotRecorded, opts.Run, opts.RecordTimeout)
		}
		logging.FromContext(ctx).V(logging.Debug).Info("Waiting for the manager to record this pod as the run's")
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for run %s to record this pod: %w", opts.Run, context.Cause(ctx))
		case <-opts.Clock.After(opts.RecordPoll):
		}
	}
}

// end is the run's final status from what the runner returned.
func end(run *v1alpha1.QuantRun, opts Options, results *v1alpha1.RunResults, err, cause error) runstatus.Status {
	now := metav1.NewTime(opts.Clock.Now())
	st := running(run, opts, run.Status.AllocatedGPU)
	st.CompletionTime = &now
	switch {
	case err == nil && results != nil:
		// Finished, even if SIGTERM came meanwhile: the results stand.
		st.Phase, st.Results = v1alpha1.RunPhaseSucceeded, results
		st.Message = results.FinishedMessage(run.Status.AllocatedGPU.UUID, run.Spec.Tolerances)
	case errors.Is(cause, ErrTerminated):
		st.Phase, st.Reason, st.Message = v1alpha1.RunPhaseFailed, v1alpha1.RunReasonRunPodLost, ErrTerminated.Error()
	case errors.Is(err, gpuguard.ErrGPUInUse):
		st.Phase, st.Reason, st.Message = v1alpha1.RunPhaseFailed, v1alpha1.RunReasonGPUInUse, err.Error()
	case err != nil:
		st.Phase, st.Reason, st.Message = v1alpha1.RunPhaseFailed, v1alpha1.RunReasonRunPodFailed, err.Error()
	default:
		st.Phase, st.Reason, st.Message = v1alpha1.RunPhaseFailed, v1alpha1.RunReasonRunPodFailed, "the runner returned no results"
	}
	return st
}

// running is the Running status of run on gpu.
func running(run *v1alpha1.QuantRun, opts Options, gpu *v1alpha1.AllocatedGPU) runstatus.Status {
	st := runstatus.Status{
		Phase: v1alpha1.RunPhaseRunning, AgentID: opts.Pod.AgentID(), BindTime: run.BindTime(),
		StartTime: run.Status.StartTime, AllocatedGPU: gpu,
	}
	if gpu != nil {
		st.Message = "running on GPU " + gpu.UUID
	}
	return st
}

// claim records Running and the allocated GPU, conditional on the run as
// read; a conflict decides again on a fresh read. It returns the run as
// claimed, or nil when it finished meanwhile (the controller failed it).
func claim(ctx context.Context, opts Options, run *v1alpha1.QuantRun, gpu *v1alpha1.AllocatedGPU) (*v1alpha1.QuantRun, error) {
	var claimed *v1alpha1.QuantRun
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		claimed = nil
		cur := run.DeepCopy()
		if !first {
			if err := opts.Client.Get(ctx, opts.Run, cur); err != nil {
				return fmt.Errorf("reading run %s: %w", opts.Run, err)
			}
		}
		first = false
		if cur.Status.Phase.IsTerminal() {
			logging.FromContext(ctx).Info("Run finished before it started here", "phase", cur.Status.Phase)
			return nil
		}
		now := metav1.NewTime(opts.Clock.Now())
		cur.Status.StartTime = &now
		st := running(cur, opts, gpu)
		rv, err := runstatus.Apply(ctx, opts.Client, FieldManager, cur, st)
		if err != nil {
			return err
		}
		cur.ResourceVersion = rv
		cur.Status.Phase, cur.Status.AgentID, cur.Status.BindTime, cur.Status.AllocatedGPU = st.Phase, st.AgentID, st.BindTime, st.AllocatedGPU
		claimed = cur
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claiming run %s: %w", opts.Run, err)
	}
	return claimed, nil
}

// failEarly records a run that this pod cannot run at all (no GPU, the
// wrong node) as Failed with RunPodFailed.
func failEarly(ctx context.Context, opts Options, run *v1alpha1.QuantRun, gpu *v1alpha1.AllocatedGPU, cause error) (Outcome, error) {
	now := metav1.NewTime(opts.Clock.Now())
	st := running(run, opts, gpu)
	st.StartTime, st.CompletionTime = &now, &now
	st.Phase, st.Reason, st.Message = v1alpha1.RunPhaseFailed, v1alpha1.RunReasonRunPodFailed, cause.Error()
	out := Outcome{Phase: st.Phase, Reason: st.Reason, Message: st.Message}
	logging.FromContext(ctx).Info("Run failed before starting", "message", st.Message)
	if _, err := runstatus.Apply(ctx, opts.Client, FieldManager, run, st); err != nil {
		return out, fmt.Errorf("recording that run %s cannot run here: %w", opts.Run, err)
	}
	return out, nil
}

// finish records the end, unless the run changed hands meanwhile (the
// controller failed it, or a newer pod of it runs): that decision stands.
// The first write is conditional on the claim's resourceVersion; a conflict
// re-reads. Every error but a final one (isFinal) is retried with
// FinishBackoff until ctx ends: an API server that is restarting, a
// connection refused or reset, a timeout all pass, and the results are what
// the run was for.
func finish(ctx context.Context, opts Options, claimed *v1alpha1.QuantRun, st runstatus.Status) error {
	log := logging.FromContext(ctx)
	rv := claimed.ResourceVersion
	backoff := opts.FinishBackoff
	var last error
	for tries := 1; ; tries++ {
		err := finishOnce(ctx, opts, claimed, st, rv)
		if err == nil || isFinal(err) {
			return err
		}
		if last == nil || ctx.Err() == nil {
			// A try cut short by the deadline says nothing about why the
			// ones before it failed.
			last = err
		}
		rv = ""
		delay := backoff.Step()
		log.Info("Recording the end of the run failed, retrying", "error", err.Error(), "tries", tries, "retryIn", delay.String())
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up after %d tries (%w): %w", tries, context.Cause(ctx), last)
		case <-opts.Clock.After(delay):
		}
	}
}

// finishOnce makes one try of finish: conditional on rv when set, else on a
// fresh read that must still show this pod running the run.
func finishOnce(ctx context.Context, opts Options, claimed *v1alpha1.QuantRun, st runstatus.Status, rv string) error {
	cur := &v1alpha1.QuantRun{ObjectMeta: metav1.ObjectMeta{Namespace: claimed.Namespace, Name: claimed.Name, ResourceVersion: rv}}
	if rv == "" {
		if err := opts.Client.Get(ctx, opts.Run, cur); err != nil {
			return fmt.Errorf("reading run %s: %w", opts.Run, err)
		}
		if cur.Status.Phase != v1alpha1.RunPhaseRunning || cur.Status.AgentID != opts.Pod.AgentID() {
			logging.FromContext(ctx).Info("Run changed hands while running, result dropped", "phase", cur.Status.Phase, "agentID", cur.Status.AgentID)
			return nil
		}
	}
	_, err := runstatus.Apply(ctx, opts.Client, FieldManager, cur, st)
	return err
}

// isFinal reports whether a failed final write can never succeed: the
// run-pod admission policy refused it (the run finished or changed hands,
// which the next read would show too), the run is gone, or the write itself
// is invalid (a transition rule refused it). A conflict and everything else,
// connection errors included, may pass on a later try.
func isFinal(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
}
