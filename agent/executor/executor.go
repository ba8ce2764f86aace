// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kquant/kquant/agent/gpuguard"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/logging"
)

// GPULookup finds a GPU of this node by UUID (the profile's current view).
type GPULookup interface {
	GPU(uuid string) (v1alpha1.GPU, bool)
}

// DefaultBusyRequeue is how soon a run waiting for its GPU is looked at again.
const DefaultBusyRequeue = 2 * time.Second

// DefaultRunningAfter is how long a run executes before the agent records
// it Running (Options.RunningAfter).
const DefaultRunningAfter = time.Second

// Options configure an Executor.
type Options struct {
	NodeName string
	// AgentID identifies this agent process; it must differ between
	// restarts, since that is how a restarted agent recognises the runs its
	// predecessor left Running.
	AgentID string
	// Client writes status; its reads come from the label-selected cache.
	Client client.Client
	// APIReader reads one run fresh from the API server before each
	// decision, so a stale cache can never start a run twice.
	APIReader client.Reader
	GPUs      GPULookup
	Runner    Runner
	Clock     clock.Clock
	// Metrics may be nil.
	Metrics *Metrics
	// BusyRequeue is how soon a run that waits for its GPU is looked at
	// again; zero takes DefaultBusyRequeue.
	BusyRequeue time.Duration
	// RunningAfter is how long a run executes before the agent records it
	// Running; a run that ends sooner goes from bound to its end in one
	// status write. Zero takes DefaultRunningAfter. Status writes are what
	// a burst of short runs is limited by (docs/benchmarks.md), and a phase
	// shorter than this is one nobody could act on.
	RunningAfter time.Duration
}

// execution is one run in flight.
type execution struct {
	key    types.NamespacedName
	gpu    string
	cancel context.CancelFunc
	done   chan struct{}
	// draining is set when shutdown began while the run was in flight;
	// abandoned when the grace period ran out; deleted when the run went away.
	draining, abandoned, deleted atomic.Bool
}

// Executor runs this node's QuantRuns.
type Executor struct {
	opts Options

	// root is the agent's life; set by Start. Runs derive their contexts from
	// it, so a hard stop cancels them without any status write.
	root    context.Context
	started chan struct{}

	mu       sync.Mutex
	active   map[types.NamespacedName]*execution
	busyGPU  map[string]types.NamespacedName
	draining bool
	wg       sync.WaitGroup
}

// New returns an Executor; register it with SetupWithManager.
func New(opts Options) *Executor {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.BusyRequeue <= 0 {
		opts.BusyRequeue = DefaultBusyRequeue
	}
	if opts.RunningAfter <= 0 {
		opts.RunningAfter = DefaultRunningAfter
	}
	return &Executor{
		opts:    opts,
		started: make(chan struct{}),
		active:  map[types.NamespacedName]*execution{},
		busyGPU: map[string]types.NamespacedName{},
	}
}

// SetupWithManager registers the controller and the Executor's own
// lifecycle with mgr. The manager's cache must be restricted to this node's
// runs (cache.ByObject with a kquant.dev/node label selector); the predicate
// here only guards against a misconfigured cache.
func (e *Executor) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.Add(e); err != nil {
		return fmt.Errorf("adding executor: %w", err)
	}
	onNode := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[v1alpha1.LabelNode] == e.opts.NodeName
	})
	err := ctrl.NewControllerManagedBy(mgr).
		Named("kquant-agent-quantrun").
		For(&v1alpha1.QuantRun{}, builder.WithPredicates(onNode)).
		WithOptions(controller.Options{
			// Several agents (simulated nodes) may share one process.
			SkipNameValidation: ptr.To(true),
			// Reconciles only claim runs; execution runs in goroutines.
			MaxConcurrentReconciles: 2,
		}).
		Complete(e)
	if err != nil {
		return fmt.Errorf("building QuantRun controller: %w", err)
	}
	return nil
}

// Start holds the agent's root context until it ends, then waits for the
// run goroutines, which stop without writing anything.
func (e *Executor) Start(ctx context.Context) error {
	e.root = ctx
	close(e.started)
	<-ctx.Done()
	e.wg.Wait()
	return nil
}

// Active returns the number of runs in flight.
func (e *Executor) Active() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.active)
}

// Reconcile looks at one run and starts it when it is this node's to run.
func (e *Executor) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logging.FromContext(ctx)
	select {
	case <-e.started:
	case <-ctx.Done():
		return ctrl.Result{}, ctx.Err()
	}
	run := &v1alpha1.QuantRun{}
	if err := e.opts.Client.Get(ctx, req.NamespacedName, run); err != nil {
		if apierrors.IsNotFound(err) {
			e.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading run %s: %w", req, err)
	}
	if !e.mine(run) {
		log.V(logging.Debug).Info("Ignoring run bound to another node", "node", run.Spec.NodeName)
		return ctrl.Result{}, nil
	}
	switch {
	case awaitsStart(run):
	case run.Status.Phase == v1alpha1.RunPhaseRunning && run.Status.AgentID != e.opts.AgentID:
		// Left Running by a previous agent process on this node.
	default:
		return ctrl.Result{}, nil
	}
	return e.start(ctx, run)
}

// awaitsStart reports whether a run of this node is bound and not started
// yet. Binding writes no status, so the stored phase of such a run is Pending
// (as a scheduled Pod's), unset on runs created before the CRD defaulted it,
// or Bound on runs bound by earlier managers.
func awaitsStart(run *v1alpha1.QuantRun) bool {
	if run.Spec.GPUUUID == "" {
		return false
	}
	switch run.Status.Phase {
	case "", v1alpha1.RunPhasePending, v1alpha1.RunPhaseBound:
		return true
	}
	return false
}

func (e *Executor) mine(run *v1alpha1.QuantRun) bool {
	return run.Spec.NodeName == e.opts.NodeName && run.Labels[v1alpha1.LabelNode] == e.opts.NodeName
}

// boundHere reports whether run is still this node's and not started: what
// a run claimed without a write (Options.RunningAfter) must still be for
// this agent's next write to it.
func (e *Executor) boundHere(run *v1alpha1.QuantRun) bool {
	return e.mine(run) && awaitsStart(run)
}

// forget cancels a run that was deleted while in flight.
func (e *Executor) forget(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ex, ok := e.active[key]; ok {
		ex.deleted.Store(true)
		ex.cancel()
	}
}

// start reserves the run's GPU, claims the run (Running) and executes it.
func (e *Executor) start(ctx context.Context, run *v1alpha1.QuantRun) (ctrl.Result, error) {
	log := logging.FromContext(ctx)
	key := client.ObjectKeyFromObject(run)
	gpu := run.Spec.GPUUUID

	e.mu.Lock()
	if e.draining {
		e.mu.Unlock()
		return ctrl.Result{}, nil
	}
	if _, ok := e.active[key]; ok {
		e.mu.Unlock()
		return ctrl.Result{}, nil
	}
	if holder, busy := e.busyGPU[gpu]; busy {
		e.mu.Unlock()
		log.V(logging.Debug).Info("Run waits for its GPU", "gpu", gpu, "busyWith", holder.String())
		return ctrl.Result{RequeueAfter: e.opts.BusyRequeue}, nil
	}
	runCtx, cancel := context.WithCancel(e.root)
	ex := &execution{key: key, gpu: gpu, cancel: cancel, done: make(chan struct{})}
	e.active[key] = ex
	e.busyGPU[gpu] = key
	e.wg.Add(1)
	e.mu.Unlock()

	claimed, gpuInfo, err := e.claim(ctx, run)
	if err != nil || claimed.run == nil {
		e.release(ex)
		return ctrl.Result{}, err
	}
	go e.execute(runCtx, ex, claimed, gpuInfo)
	return ctrl.Result{}, nil
}

// claimedRun is a run this agent executes: run carries the status the
// agent gave it and the resourceVersion its next write is conditional on;
// unwritten holds that status while it is not recorded yet (the run is
// still stored as bound; see Options.RunningAfter), nil once it is.
type claimedRun struct {
	run       *v1alpha1.QuantRun
	unwritten *Status
}

// release frees the run's GPU slot.
func (e *Executor) release(ex *execution) {
	ex.cancel()
	e.mu.Lock()
	delete(e.active, ex.key)
	if e.busyGPU[ex.gpu] == ex.key {
		delete(e.busyGPU, ex.gpu)
	}
	e.mu.Unlock()
	close(ex.done)
	e.wg.Done()
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
		st := Status{
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
func (e *Executor) failUnrunnable(ctx context.Context, run *v1alpha1.QuantRun, st Status, msg string) error {
	now := metav1.NewTime(e.opts.Clock.Now())
	st.Phase, st.CompletionTime, st.Message = v1alpha1.RunPhaseFailed, &now, msg
	if _, err := applyStatus(ctx, e.opts.Client, run, st); err != nil {
		return err
	}
	logging.FromContext(ctx).Info("Run failed before starting", "message", msg)
	e.count(v1alpha1.RunPhaseFailed)
	return nil
}

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
	st := Status{
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
func (e *Executor) finish(ctx context.Context, key types.NamespacedName, claimedRV string, recorded bool, st Status) error {
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

func (e *Executor) finishOnce(ctx context.Context, key types.NamespacedName, claimedRV string, recorded bool, st Status) error {
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

func (e *Executor) count(phase v1alpha1.RunPhase) {
	if e.opts.Metrics != nil {
		e.opts.Metrics.runs.WithLabelValues(string(phase)).Inc()
	}
}

// Drain stops taking runs and gives the runs in flight grace to finish;
// those still running then are cancelled and recorded as abandoned. It
// returns when every run has recorded its end, or when ctx ends. The root
// context must still be live (call Drain before stopping the manager).
func (e *Executor) Drain(ctx context.Context, grace time.Duration) {
	log := logging.FromContext(ctx)
	e.mu.Lock()
	e.draining = true
	inFlight := make([]*execution, 0, len(e.active))
	for _, ex := range e.active {
		ex.draining.Store(true)
		inFlight = append(inFlight, ex)
	}
	e.mu.Unlock()
	if len(inFlight) == 0 {
		return
	}
	log.Info("Draining runs", "inFlight", len(inFlight), "grace", grace.String())
	timer := e.opts.Clock.NewTimer(grace)
	defer timer.Stop()
	for _, ex := range inFlight {
		select {
		case <-ex.done:
			continue
		case <-ctx.Done():
			return
		case <-timer.C():
		}
		// Grace is over: abandon this and every run still in flight.
		for _, rest := range inFlight {
			select {
			case <-rest.done:
			default:
				rest.abandoned.Store(true)
				rest.cancel()
			}
		}
		break
	}
	for _, ex := range inFlight {
		select {
		case <-ex.done:
		case <-ctx.Done():
			return
		}
	}
}
