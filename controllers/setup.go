package controllers

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/binder"
	"github.com/kquant/kquant/controllers/gate"
	"github.com/kquant/kquant/controllers/indexer"
	"github.com/kquant/kquant/controllers/metrics"
	"github.com/kquant/kquant/controllers/nodelabels"
	"github.com/kquant/kquant/controllers/nodelifecycle"
	"github.com/kquant/kquant/controllers/quantcronjob"
	"github.com/kquant/kquant/controllers/quantjob"
	"github.com/kquant/kquant/controllers/quantrecipe"
)

// DefaultLeaseNamespace is where agents renew their Leases by default.
const DefaultLeaseNamespace = "kquant-system"

// EventSource is the name the manager's Events are reported by.
const EventSource = "kquant-manager"

// Options configure the controllers.
type Options struct {
	// LeaseNamespace is the namespace of the agents' Leases.
	LeaseNamespace string
	// Clock tells the time; the real clock when nil.
	Clock clock.PassiveClock
	// Registerer takes the metrics; controller-runtime's registry when nil.
	Registerer prometheus.Registerer
}

// CacheOptions are the manager's cache options: Leases only from the agents'
// namespace (a cluster has many others, renewed all the time), and no
// managedFields in memory.
func CacheOptions(leaseNamespace string) cache.Options {
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{leaseNamespace: {}}},
		},
		DefaultTransform: cache.TransformStripManagedFields(),
	}
}

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=create;update
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
	m := metrics.New(mgr.GetCache())
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
	setups := []struct {
		name  string
		setup func(ctrl.Manager) error
	}{
		{quantrecipe.ControllerName, quantrecipe.New(c, rec, opts.Clock, opts.LeaseNamespace).SetupWithManager},
		{quantrecipe.ClusterControllerName, quantrecipe.NewCluster(c, rec, opts.Clock, opts.LeaseNamespace).SetupWithManager},
		{quantjob.ControllerName, quantjob.New(c, rec, opts.Clock, opts.LeaseNamespace).SetupWithManager},
		{binder.ControllerName, binder.New(c, rec, opts.Clock, m, opts.LeaseNamespace).SetupWithManager},
		{nodelifecycle.ControllerName, nodelifecycle.New(c, rec, opts.Clock).SetupWithManager},
		{nodelabels.ControllerName, nodelabels.New(c).SetupWithManager},
		{gate.ControllerName, gate.New(c, mgr.GetAPIReader()).SetupWithManager},
		{quantcronjob.ControllerName, quantcronjob.New(c, rec, opts.Clock).SetupWithManager},
	}
	for _, s := range setups {
		if err := s.setup(mgr); err != nil {
			return fmt.Errorf("setting up controller %s: %w", s.name, err)
		}
	}
	return nil
}
