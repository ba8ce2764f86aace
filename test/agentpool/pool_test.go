// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package agentpool_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers"
	"github.com/kquant/kquant/test/agentpool"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
)

// A small pool, with the manager's controllers in-process, publishes every
// node and completes an EachGPU job over all of their GPUs: the pool's code
// path works end to end outside `make scale`.
func TestPoolCompletesAnEachGPUJob(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	env := testenv.ForTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const leaseNS = "kquant-system"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNS}}); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(env.Config, manager.Options{
		Scheme: env.Scheme, Cache: controllers.CacheOptions(leaseNS),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := controllers.SetupControllers(ctx, mgr, controllers.Options{LeaseNamespace: leaseNS, Registerer: prometheus.NewRegistry()}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	spec, err := simulate.Parse("H100:4")
	if err != nil {
		t.Fatal(err)
	}
	nodes := []string{"pool-a", "pool-b", "pool-c"}
	pool := agentpool.New(agentpool.Options{Config: env.Config, Namespace: leaseNS, Nodes: nodes, Spec: spec})
	ready := make(chan struct{})
	errc := make(chan error, 1)
	go func() { errc <- pool.Run(ctx, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("pool: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("pool not ready within a minute")
	}
	for _, n := range nodes {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: n}, &v1alpha1.GPUNodeProfile{}); err != nil {
			t.Errorf("profile of %s: %v", n, err)
		}
	}

	ns, err := env.CreateNamespace(ctx, "pool")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, builders.MakeQuantRecipe("fp8", ns).Obj()); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, builders.MakeQuantJob("each", ns).Recipe("fp8").EachGPU().MaxParallel(12).Obj()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		job := &v1alpha1.QuantJob{}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "each"}, job)
		if err == nil && job.Status.Phase == v1alpha1.JobPhaseSucceeded {
			if job.Status.Total != 12 || job.Status.Succeeded != 12 {
				t.Errorf("job: %d/%d succeeded, want 12/12", job.Status.Succeeded, job.Status.Total)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job not Succeeded within a minute: %v %s", err, fmt.Sprint(job.Status.Phase, " ", job.Status.Progress))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
