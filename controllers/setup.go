// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/binder"
	"github.com/kquant/kquant/controllers/execution"
	"github.com/kquant/kquant/controllers/gate"
	"github.com/kquant/kquant/controllers/gatepolicy"
	"github.com/kquant/kquant/controllers/idlevalidation"
	"github.com/kquant/kquant/controllers/internal/indexer"
	"github.com/kquant/kquant/controllers/metrics"
	"github.com/kquant/kquant/controllers/nodelabels"
	"github.com/kquant/kquant/controllers/nodelifecycle"
	"github.com/kquant/kquant/controllers/quantcronjob"
	"github.com/kquant/kquant/controllers/quantjob"
	"github.com/kquant/kquant/controllers/quantrecipe"
	"github.com/kquant/kquant/domain/runpod"
	"github.com/kquant/kquant/internal/gpulabels"
)

// DefaultLeaseNamespace is where agents renew their Leases by default.
const DefaultLeaseNamespace = "kquant-system"

// EventSource is the name the manager's Events are reported by.
const EventSource = "kquant-manager"

// Options configure the controllers.
type Options struct {
	// LeaseNamespace is the manager's own namespace (the release namespace):
	// the agents' Leases and the QuantGatePolicies' validation jobs live
	// there, and only runs there can gate a node.
	LeaseNamespace string
	// Clock tells the time; the real clock when nil.
	Clock clock.PassiveClock
	// Registerer takes the metrics; controller-runtime's registry when nil.
	Registerer prometheus.Registerer
	// MetricsGPULabels name the node and UUID labels of the per-GPU series,
	// as the fleet's dcgm-exporter does; its current names when zero.
	MetricsGPULabels gpulabels.Names
	// Execution configures run pods. With Allocation DevicePlugin or DRA the
	// execution controller runs every bound run in a run pod; empty or None
	// leaves runs to the agents (in-agent execution, for nodes drained of
	// other GPU work, and for tests without a kubelet).
	Execution execution.Options
	// AllowSharedGPUs lets runs onto GPUs whose allocations are shared
	// (time-slicing or MPS replicas, MIG slices): there "allocated" does not
	// mean "exclusive", and a measurement shares the GPU with other work.
	AllowSharedGPUs bool
}

// runsInPods reports whether opts run QuantRuns in run pods.
func (opts Options) runsInPods() bool {
	a := opts.Execution.RunPod.Allocation
	return a == runpod.AllocationDevicePlugin || a == runpod.AllocationDRA
}

// CacheOptions are the manager's cache options: Leases only from the agents'
// namespace (a cluster has many others, renewed all the time), Pods and
// ResourceClaims only kquant's run pods' (app.kubernetes.io/name=kquant,component=run),
// QuantRuns only those a job expanded (never a workload's preflight
// records, kquant.dev/preflight, which no controller binds, counts, gates on
// or exports), no managedFields in memory, and of a run pod only what the
// manager reads (runpod.CachedPod).
func CacheOptions(leaseNamespace string) cache.Options {
	runPods := labels.SelectorFromSet(labels.Set{"app.kubernetes.io/name": "kquant", runpod.LabelComponent: runpod.ComponentRun})
	notPreflight, err := labels.NewRequirement(kquantv1alpha1.LabelPreflight, selection.DoesNotExist, nil)
	if err != nil {
		// The key is a constant and valid; a test holds it.
		panic(fmt.Sprintf("selector of preflight runs: %v", err))
	}
	stripManagedFields := cache.TransformStripManagedFields()
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{leaseNamespace: {}}},
			// A type's own transform replaces the default one.
			&corev1.Pod{}: {Label: runPods, Transform: func(obj any) (any, error) {
				obj, err := stripManagedFields(obj)
				if err != nil {
					return nil, err
				}
				return runpod.CachedPod(obj)
			}},
			&resourcev1.ResourceClaim{}: {Label: runPods},
			&kquantv1alpha1.QuantRun{}:  {Label: labels.NewSelector().Add(*notPreflight)},
		},
		DefaultTransform: stripManagedFields,
	}
}

// Leases: the manager reads the agents' Leases (namespace=kquant-system
// markers, a Role in the release namespace) and holds its leader-election
// Lease through the leader-election Role of the same namespace; it has no
// Lease rights anywhere else (kube-node-lease included).
//
// The manager's secure metrics (--metrics-secure) ask the API server who a
// scraper is and whether it may GET /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// SetupControllers registers kquant's indexes, metrics and controllers with mgr.
func SetupControllers(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.LeaseNamespace == "" {
		opts.LeaseNamespace = DefaultLeaseNamespace
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Registerer == nil {
		opts.Registerer = ctrlmetrics.Registry
	}
	if err := indexer.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	labels := opts.MetricsGPULabels
	if labels == (gpulabels.Names{}) {
		labels = gpulabels.Default()
	}
	if err := labels.Validate(metrics.SeriesLabels()...); err != nil {
		return fmt.Errorf("metrics GPU labels: %w", err)
	}
	m := metrics.New(mgr.GetCache(), mgr.Elected(), labels)
	if err := m.Register(opts.Registerer); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	runInformer, err := mgr.GetCache().GetInformer(ctx, &kquantv1alpha1.QuantRun{})
	if err != nil {
		return fmt.Errorf("getting QuantRun informer: %w", err)
	}
	if _, err := runInformer.AddEventHandler(m.RunPhaseHandler()); err != nil {
		return fmt.Errorf("counting run phases: %w", err)
	}
	c, rec := mgr.GetClient(), mgr.GetEventRecorder(EventSource)
	// One binder: its passes and the job controller's bindings at creation
	// decide on each other's assumptions.
	bind := binder.New(c, rec, opts.Clock, m, opts.LeaseNamespace, binder.Options{AllowSharedGPUs: opts.AllowSharedGPUs})
	if err := bind.TrackRuns(runInformer); err != nil {
		return err
	}
	setups := []struct {
		name  string
		setup func(ctrl.Manager) error
	}{
		{quantrecipe.ControllerName, quantrecipe.New(c, rec, opts.Clock, opts.LeaseNamespace).SetupWithManager},
		{quantrecipe.ClusterControllerName, quantrecipe.NewCluster(c, rec, opts.Clock, opts.LeaseNamespace).SetupWithManager},
		{quantjob.ControllerName, quantjob.New(c, rec, opts.Clock, opts.LeaseNamespace, bind).SetupWithManager},
		{binder.ControllerName, bind.SetupWithManager},
		{nodelabels.ControllerName, nodelabels.New(c, rec).SetupWithManager},
		{gate.ControllerName, gate.New(c, mgr.GetAPIReader(), rec, opts.Clock, opts.LeaseNamespace).SetupWithManager},
		{gatepolicy.ControllerName, gatepolicy.New(c, rec, opts.Clock, opts.LeaseNamespace).SetupWithManager},
		{idlevalidation.ControllerName, idlevalidation.New(c, rec, opts.Clock, opts.LeaseNamespace).SetupWithManager},
		{quantcronjob.ControllerName, quantcronjob.New(c, rec, opts.Clock).SetupWithManager},
	}
	// A run follows what executes it: in run-pod mode its pod and, through
	// the pod, its Node (execution; an agent away only stops new placements,
	// a scheduling predicate), in-agent mode the agent, whose Lease expiry
	// fails its runs as NodeLost (nodelifecycle).
	if opts.runsInPods() {
		setups = append(setups, struct {
			name  string
			setup func(ctrl.Manager) error
		}{execution.ControllerName, execution.New(c, rec, opts.Clock, opts.Execution).SetupWithManager})
	} else {
		setups = append(setups, struct {
			name  string
			setup func(ctrl.Manager) error
		}{nodelifecycle.ControllerName, nodelifecycle.New(c, rec, opts.Clock).SetupWithManager})
	}
	for _, s := range setups {
		if err := s.setup(mgr); err != nil {
			return fmt.Errorf("setting up controller %s: %w", s.name, err)
		}
	}
	return nil
}
