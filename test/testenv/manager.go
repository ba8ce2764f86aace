// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package testenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

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

// Main is the body of a package's TestMain for tests that share one control
// plane and one manager: under -short it runs the tests without either;
// otherwise it starts both, with setup registering what the tests need
// before the manager starts, then runs the tests and exits.
func Main(m *testing.M, setup func(ctx context.Context, env *Env, mgr manager.Manager) error) {
	flag.Parse()
	code, err := runMain(m, setup)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func runMain(m *testing.M, setup func(ctx context.Context, env *Env, mgr manager.Manager) error) (int, error) {
	if testing.Short() {
		return m.Run(), nil
	}
	env, err := Start()
	if err != nil {
		return 0, err
	}
	defer func() { _ = env.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := env.StartManager(ctx, func(mgr manager.Manager) error { return setup(ctx, env, mgr) }); err != nil {
		return 0, err
	}
	return m.Run(), nil
}
