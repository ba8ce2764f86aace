// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kquant/kquant/controllers"
	"github.com/kquant/kquant/test/testenv"
)

// leaseNamespace is where the tests' agents renew their Leases.
const leaseNamespace = "kquant-system"

// suite is the control plane and the running manager every test shares. The
// fleet (GPUNodeProfiles, Leases, Nodes) is cluster-scoped, so tests run one
// after the other, each with its own namespace and uniquely named nodes, and
// take their nodes away when they end.
type suite struct {
	env    *testenv.Env
	client client.Client
	// cache is the manager's own cache: what its controllers decide on. A
	// test that changes an object and then needs a decision on the new
	// version waits until the cache has it.
	cache    client.Reader
	registry *prometheus.Registry
}

var s suite

func TestMain(m *testing.M) {
	code, err := runSuite(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func runSuite(m *testing.M) (int, error) {
	env, err := testenv.Start()
	if err != nil {
		return 0, err
	}
	defer func() { _ = env.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := logr.Discard()
	if os.Getenv("KQUANT_TEST_LOG") != "" {
		log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 2})
	}
	ctrl.SetLogger(log)
	ctx = ctrl.LoggerInto(ctx, log)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}); err != nil {
		return 0, err
	}
	mgr, err := ctrl.NewManager(env.Config, manager.Options{
		Scheme:                 env.Scheme,
		Cache:                  controllers.CacheOptions(leaseNamespace),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: new(true)},
		Logger:                 log,
	})
	if err != nil {
		return 0, err
	}
	reg := prometheus.NewRegistry()
	if err := controllers.SetupControllers(ctx, mgr, controllers.Options{LeaseNamespace: leaseNamespace, Registerer: reg}); err != nil {
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return 0, fmt.Errorf("manager cache did not sync")
	}
	s = suite{env: env, client: env.Client, cache: mgr.GetCache(), registry: reg}
	code := m.Run()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			return code, fmt.Errorf("manager: %w", err)
		}
	case <-time.After(30 * time.Second):
		return code, fmt.Errorf("manager did not stop")
	}
	return code, nil
}
