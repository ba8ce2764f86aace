// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package executor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kquant/kquant/agent/runner"
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
	Runner    runner.Runner
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
		// Reconciles only claim runs; execution runs in goroutines.
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
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
