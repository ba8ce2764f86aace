// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kquant/kquant/agent/baseline"
	"github.com/kquant/kquant/agent/driverupgrade"
	"github.com/kquant/kquant/agent/executor"
	"github.com/kquant/kquant/agent/gpuguard"
	"github.com/kquant/kquant/agent/nvml"
	"github.com/kquant/kquant/agent/profile"
	"github.com/kquant/kquant/agent/runner"
	"github.com/kquant/kquant/agent/simulate"
	kquantscheme "github.com/kquant/kquant/api/scheme"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/gpulabels"
	"github.com/kquant/kquant/internal/logging"
	"github.com/kquant/kquant/internal/metricsreg"
)

// Backend choices of --backend.
const (
	BackendAuto      = "auto"
	BackendCUDA      = "cuda"
	BackendReference = "reference"
)

// Execution choices of --execution: where the node's runs execute.
const (
	// ExecutionRunPod (the default): each run executes in its own run pod,
	// which the kubelet gives its GPU; the agent only observes (NVML
	// discovery and health, the kubelet's allocations, the profile and the
	// Lease) and never creates a CUDA context.
	ExecutionRunPod = "RunPod"
	// ExecutionNone (gpuAllocation None): the agent executes the node's
	// runs itself, only for nodes drained of other GPU work; the GPU guard
	// still applies.
	ExecutionNone = "None"
)

// DefaultShutdownGrace is how long running runs may take to finish once
// the agent is asked to stop (a DaemonSet's default termination grace is
// 30 s; this leaves time to record the outcome).
const DefaultShutdownGrace = 20 * time.Second

// Options configure one agent.
type Options struct {
	NodeName  string
	Namespace string
	// AgentID must differ between agent processes of the same node.
	AgentID      string
	AgentVersion string
	// Backend is auto, cuda or reference.
	Backend string
	// Execution is ExecutionRunPod (empty) or ExecutionNone.
	Execution string
	// PodResourcesSocket is the kubelet's PodResources socket whose
	// allocations the profile publishes; empty reads none (simulated nodes
	// without a kubelet).
	PodResourcesSocket string
	// DRADriver is the DRA driver whose devices are GPUs (ResourceSlices of
	// this node map them to UUIDs); empty is podresources.DefaultDRADriver.
	DRADriver string
	// DRAAttributeDomain is the domain of the uuid, type and parentUUID
	// attributes of the driver's devices; empty is the driver's name.
	DRAAttributeDomain string
	// GuardNVML is the library the GPU guard of in-agent execution asks;
	// nil takes the discovery's (the simulated node's, or the driver's).
	GuardNVML gonvml.Interface
	// Open creates a run's CUDA context before its first kernel (in-agent
	// execution on the CUDA backend), for the guard.
	Open runner.Opener
	// Simulate, when set, replaces NVML with a simulated node of these GPUs.
	Simulate simulate.Spec
	// Discoverer replaces NVML discovery (tests); ignored when Simulate is set.
	Discoverer nvml.Discoverer
	// Prober measures baselines; nil is baseline.Null (reference backend).
	Prober baseline.Prober
	// Runner executes runs; nil is simulate.Runner (synthetic results;
	// cmd/agent passes the measurement harness).
	Runner runner.Runner
	// Registerer receives the agent's metrics; nil registers nowhere.
	Registerer prometheus.Registerer
	// GPULabels name the node and UUID labels of per-GPU metrics, as the
	// fleet's dcgm-exporter does; its current names when zero.
	GPULabels              gpulabels.Names
	MetricsBindAddress     string
	HealthProbeBindAddress string
	LeaseRenewInterval     time.Duration
	LeaseDuration          time.Duration
	RefreshInterval        time.Duration
	AllocationInterval     time.Duration
	ShutdownGrace          time.Duration
	BusyRequeue            time.Duration
	// RunningAfter is executor.Options.RunningAfter (zero: its default).
	RunningAfter time.Duration
	Clock        clock.WithTicker
}

// Run runs the agent until ctx ends or shutdown is closed. When shutdown is
// closed the agent shuts down gracefully: it stops taking runs, gives the
// running ones ShutdownGrace to finish, records which it abandoned and
// marks the profile not Ready. When ctx ends it stops at once and writes
// nothing more, as if killed.
func Run(ctx context.Context, cfg *rest.Config, opts Options, shutdown <-chan struct{}) error {
	if opts.NodeName == "" {
		return errors.New("node name is required (--node-name or NODE_NAME)")
	}
	if err := defaults(&opts); err != nil {
		return err
	}
	log := logging.FromContext(ctx).WithValues("node", opts.NodeName, "agentID", opts.AgentID)
	ctx = logr.NewContext(ctx, log)

	// Profile, Node and Lease are read and written directly: a cached read
	// would watch every Node and Lease of the cluster.
	direct, err := kquantscheme.NewClient(cfg)
	if err != nil {
		return err
	}
	discoverer, lib, sim, err := openDiscoverer(ctx, opts)
	if err != nil {
		return err
	}
	if opts.GuardNVML == nil {
		opts.GuardNVML = lib
	}
	if opts.Execution == ExecutionRunPod {
		opts.Prober = baseline.Elsewhere{Runs: runPodBackend(ctx, opts, discoverer)}
	}
	allocations, err := openAllocations(ctx, opts, direct, lib)
	if err != nil {
		return err
	}
	if allocations != nil {
		defer allocations.close()
	}
	defer func() {
		if err := discoverer.Close(); err != nil {
			log.Error(err, "Closing NVML failed")
		}
	}()

	reporter := profile.NewReporter(profile.ReporterOptions{
		Discoverer:         discoverer,
		Prober:             opts.Prober,
		Publisher:          profile.NewPublisher(direct, opts.NodeName),
		Clock:              opts.Clock,
		Simulated:          opts.Simulate != nil,
		AgentVersion:       opts.AgentVersion,
		RefreshInterval:    opts.RefreshInterval,
		Allocations:        allocations.source(),
		AllocationInterval: opts.AllocationInterval,
	})
	if err := reporter.Start(ctx); err != nil {
		return fmt.Errorf("publishing the first GPUNodeProfile: %w", err)
	}
	if err := registerDriverMetrics(opts.Registerer, reporter, sim); err != nil {
		return err
	}
	lease := profile.NewLeaseKeeper(direct, opts.Clock, opts.Namespace, opts.NodeName, opts.AgentID,
		opts.LeaseRenewInterval, opts.LeaseDuration)

	mgr, err := newManager(ctx, cfg, direct.Scheme(), opts)
	if err != nil {
		return err
	}
	exec, err := setupExecutor(mgr, opts, reporter)
	if err != nil {
		return err
	}
	if exec == nil {
		if err := setupRunBaselines(mgr, opts, reporter); err != nil {
			return err
		}
	}
	upgrades := &driverupgrade.Watcher{NodeName: opts.NodeName, Client: mgr.GetClient(), Profile: reporter}
	if err := upgrades.SetupWithManager(mgr); err != nil {
		return err
	}
	for _, run := range []func(context.Context) error{lease.Run, reporter.Run} {
		// The manager hands runnables a context of its own: give them the
		// agent's logger back, or their failures would go unlogged.
		r := manager.RunnableFunc(func(c context.Context) error { return run(logr.NewContext(c, log)) })
		if err := mgr.Add(r); err != nil {
			return fmt.Errorf("adding agent loop: %w", err)
		}
	}

	mgrCtx, stopManager := context.WithCancel(ctx)
	defer stopManager()
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	log.Info("Agent started", "backend", opts.Prober.Backend(), "simulated", opts.Simulate != nil,
		"execution", opts.Execution, "podResources", opts.PodResourcesSocket)

	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return <-done
	case <-shutdown:
	}
	log.Info("Agent shutting down", "grace", opts.ShutdownGrace.String())
	if exec != nil {
		exec.Drain(ctx, opts.ShutdownGrace)
	}
	if err := reporter.Stop(ctx); err != nil {
		log.Error(err, "Marking GPUNodeProfile not Ready failed")
	}
	stopManager()
	return <-done
}

// setupExecutor registers the in-agent executor (ExecutionNone), its
// runner guarded as a run pod's; nil for ExecutionRunPod, where the agent
// runs nothing.
func setupExecutor(mgr ctrl.Manager, opts Options, reporter *profile.Reporter) (*executor.Executor, error) {
	if opts.Execution != ExecutionNone {
		return nil, nil
	}
	var metrics *executor.Metrics
	if opts.Registerer != nil {
		var err error
		labels := opts.GPULabels
		if labels == (gpulabels.Names{}) {
			labels = gpulabels.Default()
		}
		if metrics, err = executor.NewMetrics(opts.Registerer, labels); err != nil {
			return nil, err
		}
	}
	r := opts.Runner
	if opts.GuardNVML != nil {
		r = gpuguard.Guarded(r, gpuguard.RunOptions{
			Guard: gpuguard.New(opts.GuardNVML), Open: opts.Open, Clock: opts.Clock,
		})
	}
	exec := executor.New(executor.Options{
		NodeName:     opts.NodeName,
		AgentID:      opts.AgentID,
		Client:       mgr.GetClient(),
		APIReader:    mgr.GetAPIReader(),
		GPUs:         reporter,
		Runner:       r,
		Clock:        opts.Clock,
		Metrics:      metrics,
		BusyRequeue:  opts.BusyRequeue,
		RunningAfter: opts.RunningAfter,
	})
	if err := exec.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	return exec, nil
}

// runPodBackend is the backend the node's run pods use, as the observer
// tells without a CUDA context: cuda when NVML reports a CUDA driver on real
// GPUs (and --backend is not reference), else the reference.
func runPodBackend(ctx context.Context, opts Options, d nvml.Discoverer) v1alpha1.Backend {
	if opts.Simulate != nil || opts.Backend == BackendReference {
		return v1alpha1.BackendReference
	}
	node, err := d.Discover(ctx)
	if err != nil || node.CUDADriverVersion.IsZero() || len(node.GPUs) == 0 {
		return v1alpha1.BackendReference
	}
	return v1alpha1.BackendCUDA
}

func defaults(opts *Options) error {
	if opts.Execution == "" {
		opts.Execution = ExecutionRunPod
	}
	switch opts.Execution {
	case ExecutionRunPod, ExecutionNone:
	default:
		return fmt.Errorf("execution %q: want %s or %s", opts.Execution, ExecutionRunPod, ExecutionNone)
	}
	if opts.Namespace == "" {
		opts.Namespace = "kquant-system"
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.AgentID == "" {
		opts.AgentID = fmt.Sprintf("%s-%d", opts.NodeName, opts.Clock.Now().UnixNano())
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = DefaultShutdownGrace
	}
	if opts.Runner == nil {
		opts.Runner = simulate.Runner{Clock: opts.Clock}
	}
	if opts.Backend == "" {
		opts.Backend = BackendAuto
	}
	if opts.Prober == nil || opts.Simulate != nil {
		opts.Prober = baseline.Null{}
	}
	switch opts.Backend {
	case BackendAuto:
	case BackendReference:
		opts.Prober = baseline.Null{}
	case BackendCUDA:
		if opts.Execution == ExecutionNone && opts.Prober.Backend() != v1alpha1.BackendCUDA {
			return errors.New("backend cuda requested, but this agent has no CUDA backend (simulated node, or CUDA not available)")
		}
	default:
		return fmt.Errorf("backend %q: want auto, cuda or reference", opts.Backend)
	}
	return nil
}

// openDiscoverer returns the node's discovery, the NVML library behind it
// (nil when there is none: NVML absent, or a test's Discoverer) and the
// simulated node (nil unless Simulate is set).
func openDiscoverer(ctx context.Context, opts Options) (nvml.Discoverer, gonvml.Interface, *simulate.Node, error) {
	switch {
	case opts.Simulate != nil:
		sim := simulate.NewNode(opts.NodeName, opts.Simulate)
		d, err := nvml.Open(ctx, sim.Library())
		if err != nil {
			return nil, nil, nil, fmt.Errorf("opening simulated node %s: %w", opts.Simulate, err)
		}
		return d, sim.Library(), sim, nil
	case opts.Discoverer != nil:
		return opts.Discoverer, nil, nil, nil
	default:
		d, lib := nvml.Auto(ctx)
		return d, lib, nil, nil
	}
}

// registerDriverMetrics exports whether the agent stepped aside for a driver
// upgrade and, on a simulated node, how many handles it holds to the
// simulated driver, so that the cluster tests can check that an upgrade
// finds none.
func registerDriverMetrics(reg prometheus.Registerer, reporter *profile.Reporter, sim *simulate.Node) error {
	if reg == nil {
		return nil
	}
	collectors := []prometheus.Collector{prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "kquant_agent_driver_upgrade",
		Help: "1 while the agent has released the GPU driver for a GPU Operator driver upgrade, else 0.",
	}, func() float64 {
		if reporter.DriverUpgrade() != "" {
			return 1
		}
		return 0
	})}
	if sim != nil {
		collectors = append(collectors, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "kquant_agent_simulated_driver_handles",
			Help: "Handles the agent holds to its simulated driver: NVML initialisations and event sets not yet closed.",
		}, func() float64 { return float64(sim.OpenHandles()) }))
	}
	if err := metricsreg.Register(reg, collectors...); err != nil {
		return fmt.Errorf("registering driver metrics: %w", err)
	}
	return nil
}

func newManager(ctx context.Context, cfg *rest.Config, scheme *apiruntime.Scheme, opts Options) (ctrl.Manager, error) {
	onNode := labels.SelectorFromSet(labels.Set{v1alpha1.LabelNode: opts.NodeName})
	metricsAddr := opts.MetricsBindAddress
	if metricsAddr == "" {
		metricsAddr = "0"
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		Logger: logging.FromContext(ctx),
		Cache: cache.Options{
			// The agent's only watches: runs labelled with this node, and
			// this Node itself (its GPU driver upgrade label).
			ByObject: map[client.Object]cache.ByObject{
				&v1alpha1.QuantRun{}: {Label: onNode},
				&corev1.Node{}:       {Field: fields.OneTermEqualSelector("metadata.name", opts.NodeName)},
			},
			// Any other cached read would start a cluster-wide watch; fail
			// loudly instead.
			ReaderFailOnMissingInformer: true,
		},
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: opts.HealthProbeBindAddress,
		// Controller names are checked for uniqueness across the process,
		// and several agents (simulated nodes, tests) may share one, each
		// with its own manager and the same controllers.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if opts.HealthProbeBindAddress != "" && opts.HealthProbeBindAddress != "0" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return nil, fmt.Errorf("adding health check: %w", err)
		}
		if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
			return nil, fmt.Errorf("adding ready check: %w", err)
		}
	}
	return mgr, nil
}
