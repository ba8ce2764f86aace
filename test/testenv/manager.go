package testenv

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// StartManager starts a controller manager against the control plane, with
// no metrics or probe listeners, after setup has registered what a test
// needs (indexes, controllers, informers); it returns once the cache has
// synced, and the manager stops with ctx.
func (e *Env) StartManager(ctx context.Context, setup func(manager.Manager) error) (manager.Manager, error) {
	mgr, err := ctrl.NewManager(e.Config, manager.Options{
		Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: new(true)}, Logger: logr.Discard(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := setup(mgr); err != nil {
		return nil, err
	}
	go func() { _ = mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("manager cache did not sync")
	}
	return mgr, nil
}

// CreateWithStatus creates obj and then writes its status, as the object's
// controller or agent would (the API server ignores status on create).
func CreateWithStatus(ctx context.Context, c client.Client, obj client.Object) error {
	want, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%T is not a client.Object", obj)
	}
	if err := c.Create(ctx, obj); err != nil {
		return fmt.Errorf("creating %s: %w", obj.GetName(), err)
	}
	want.SetResourceVersion(obj.GetResourceVersion())
	want.SetUID(obj.GetUID())
	if err := c.Status().Update(ctx, want); err != nil {
		return fmt.Errorf("writing the status of %s: %w", obj.GetName(), err)
	}
	return nil
}
