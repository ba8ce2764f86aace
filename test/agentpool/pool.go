// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package agentpool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kquant/kquant/agent/baseline"
	"github.com/kquant/kquant/agent/executor"
	"github.com/kquant/kquant/agent/nvml"
	"github.com/kquant/kquant/agent/profile"
	"github.com/kquant/kquant/agent/runner"
	"github.com/kquant/kquant/agent/simulate"
	kquantscheme "github.com/kquant/kquant/api/scheme"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/logging"
)

// Options configure a Pool.
type Options struct {
	// Config reaches the API server; the pool's requests go through it.
	Config *rest.Config
	// Namespace holds the nodes' Leases.
	Namespace string
	// Nodes are the simulated nodes' names; every node has the GPUs of Spec.
	Nodes []string
	Spec  simulate.Spec
	// Runner executes runs; nil is simulate.Runner (what the agent's
	// --results synthetic selects).
	Runner runner.Runner
	// Workers is how many runs are claimed at once across the pool.
	Workers int
	// Observe makes the agents observers, as with run pods (gpuAllocation
	// DevicePlugin or DRA, the chart's default): they publish their profile
	// and renew their Lease, and execute nothing, so the pool has no
	// executors and no watch of runs.
	Observe bool
	// StartParallelism is how many nodes publish their first profile at once.
	StartParallelism   int
	LeaseRenewInterval time.Duration
	LeaseDuration      time.Duration
}

// Pool is a running set of simulated agents.
type Pool struct {
	opts      Options
	executors map[string]*executor.Executor
	// nodeOf remembers each run's node, to route a deletion (the run is no
	// longer in the cache to say where it was bound).
	nodeOf sync.Map
	client client.Client
}

// New returns a Pool; Run starts it.
func New(opts Options) *Pool {
	if opts.Runner == nil {
		opts.Runner = simulate.Runner{}
	}
	if opts.Workers <= 0 {
		opts.Workers = 16
	}
	if opts.StartParallelism <= 0 {
		opts.StartParallelism = 16
	}
	if opts.Namespace == "" {
		opts.Namespace = "kquant-system"
	}
	return &Pool{opts: opts, executors: map[string]*executor.Executor{}}
}

// Run publishes every node's profile, then runs Leases, health refresh and
// executors until ctx ends. ready is called once every node has published
// its profile and the executors are started.
func (p *Pool) Run(ctx context.Context, ready func()) error {
	if len(p.opts.Nodes) == 0 {
		return ErrNoNodes
	}
	log := logging.FromContext(ctx)
	direct, err := kquantscheme.NewClient(p.opts.Config)
	if err != nil {
		return err
	}
	hasNode, err := labels.NewRequirement(v1alpha1.LabelNode, selection.Exists, nil)
	if err != nil {
		return fmt.Errorf("building node selector: %w", err)
	}
	mgr, err := ctrl.NewManager(p.opts.Config, ctrl.Options{
		Scheme: direct.Scheme(),
		Logger: log,
		Cache: cache.Options{
			ByObject: map[client.Object]cache.ByObject{
				&v1alpha1.QuantRun{}: {Label: labels.NewSelector().Add(*hasNode)},
			},
			ReaderFailOnMissingInformer: true,
		},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("creating pool manager: %w", err)
	}
	p.client = mgr.GetClient()

	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.opts.StartParallelism)
	for _, node := range p.opts.Nodes {
		g.Go(func() error {
			exec, runnables, err := p.startNode(gctx, direct, mgr, node)
			if err != nil {
				return err
			}
			mu.Lock()
			p.executors[node] = exec
			mu.Unlock()
			for _, r := range runnables {
				if err := mgr.Add(r); err != nil {
					return fmt.Errorf("adding node %s loop: %w", node, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if !p.opts.Observe {
		err = ctrl.NewControllerManagedBy(mgr).
			Named("kquant-agent-pool").
			For(&v1alpha1.QuantRun{}).
			WithOptions(controller.Options{MaxConcurrentReconciles: p.opts.Workers, SkipNameValidation: ptr.To(true)}).
			Complete(p)
		if err != nil {
			return fmt.Errorf("building pool controller: %w", err)
		}
	}
	if ready != nil {
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			if mgr.GetCache().WaitForCacheSync(ctx) {
				ready()
			}
			<-ctx.Done()
			return nil
		})); err != nil {
			return fmt.Errorf("adding readiness signal: %w", err)
		}
	}
	log.Info("Agent pool started", "nodes", len(p.opts.Nodes))
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running agent pool: %w", err)
	}
	return nil
}

// startNode does for one node what nodeagent.Run does before its manager
// starts: discover the simulated GPUs, publish the first profile, and build
// the Lease keeper, the health refresher and the executor (none for an
// observer).
func (p *Pool) startNode(ctx context.Context, direct client.Client, mgr ctrl.Manager, node string) (*executor.Executor, []manager.Runnable, error) {
	clk := clock.RealClock{}
	discoverer, err := nvml.Open(ctx, simulate.NewNode(node, p.opts.Spec).Library())
	if err != nil {
		return nil, nil, fmt.Errorf("opening simulated node %s: %w", node, err)
	}
	reporter := profile.NewReporter(profile.ReporterOptions{
		Discoverer: discoverer,
		Prober:     baseline.Null{},
		Publisher:  profile.NewPublisher(direct, node),
		Clock:      clk,
		Simulated:  true,
	})
	if err := reporter.Start(ctx); err != nil {
		return nil, nil, fmt.Errorf("publishing the first GPUNodeProfile of %s: %w", node, err)
	}
	agentID := fmt.Sprintf("%s-pool-%d", node, clk.Now().UnixNano())
	lease := profile.NewLeaseKeeper(direct, clk, p.opts.Namespace, node, agentID, p.opts.LeaseRenewInterval, p.opts.LeaseDuration)
	loops := []manager.Runnable{manager.RunnableFunc(lease.Run), manager.RunnableFunc(reporter.Run)}
	if p.opts.Observe {
		return nil, loops, nil
	}
	exec := executor.New(executor.Options{
		NodeName:  node,
		AgentID:   agentID,
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		GPUs:      reporter,
		Runner:    p.opts.Runner,
		Clock:     clk,
	})
	return exec, append(loops, exec), nil
}

// Reconcile hands a run to the Executor of the node it is bound to.
func (p *Pool) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	run := &v1alpha1.QuantRun{}
	node := ""
	switch err := p.client.Get(ctx, req.NamespacedName, run); {
	case err == nil:
		node = run.Labels[v1alpha1.LabelNode]
		p.nodeOf.Store(req.NamespacedName, node)
	case client.IgnoreNotFound(err) == nil:
		if n, ok := p.nodeOf.LoadAndDelete(req.NamespacedName); ok {
			node = n.(string)
		}
	default:
		return ctrl.Result{}, fmt.Errorf("reading run %s: %w", req, err)
	}
	exec := p.executors[node]
	if exec == nil {
		// Bound to a node this pool does not simulate.
		return ctrl.Result{}, nil
	}
	return exec.Reconcile(ctx, req)
}

// ErrNoNodes is returned when a pool has nothing to simulate.
var ErrNoNodes = errors.New("agent pool: no nodes")
