// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
)

// runPodsThroughDRA switches the release to gpuAllocation DRA, where the
// test DRA driver's DeviceClass (named as NVIDIA's) serves the claims: every
// run pod gets a ResourceClaim whose CEL selector pins its run's GPU, and
// each run executes on exactly that GPU. The release goes back to the device
// plugin afterwards.
func runPodsThroughDRA(t *testing.T, cl *cluster) {
	setAllocation := func(mode string) {
		t.Helper()
		out, err := cl.helm(t, chartArgs("--timeout", "4m", "--set", "gpuAllocation="+mode)...)
		if err != nil {
			t.Fatalf("helm upgrade --set gpuAllocation=%s: %v\n%s", mode, err, out)
		}
	}
	setAllocation("DRA")
	// A defer, not t.Cleanup: t.Context() (which helm runs under) is
	// canceled before cleanups run.
	defer setAllocation("DevicePlugin")

	ns := cl.namespace(t, "e2e-dra-runs")
	cl.apply(t, ns, nil, filepath.Join(testenv.RepoRoot(), "recipes", "fp8-current-scaling.yaml"))
	job := builders.MakeQuantJob("dra", ns).Recipe("fp8-current-scaling").EachGPU().BackoffLimit(2).Obj()
	if err := cl.c.Create(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	done := cl.waitJob(t, ns, "dra", v1alpha1.JobPhaseSucceeded, 5*time.Minute)
	if done.Status.Succeeded != simulatedGPUs {
		t.Errorf("job dra: %d runs succeeded, want %d", done.Status.Succeeded, simulatedGPUs)
	}
	for _, r := range cl.runs(t, ns) {
		if r.Status.Phase != v1alpha1.RunPhaseSucceeded {
			continue
		}
		got := r.Status.AllocatedGPU
		if got == nil || got.UUID != r.Spec.GPUUUID || got.Source != v1alpha1.AllocationSourceDRA {
			t.Errorf("run %s, bound to %s: allocatedGPU %+v, want that GPU through DRA", r.Name, r.Spec.GPUUUID, got)
		}
	}
	// The claims were the run pods' and go with them: each one that is left
	// was allocated one device of the test driver.
	claims := &resourcev1.ResourceClaimList{}
	if err := cl.c.List(t.Context(), claims, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, c := range claims.Items {
		if c.Status.Allocation == nil || len(c.Status.Allocation.Devices.Results) != 1 {
			t.Errorf("claim %s: allocation %+v, want one device", c.Name, c.Status.Allocation)
		}
	}
	pods := &corev1.PodList{}
	if err := cl.c.List(t.Context(), pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if len(p.Spec.ResourceClaims) != 1 || p.Spec.NodeName != node {
			t.Errorf("run pod %s: claims %+v on node %q, want one claim, scheduled onto %s", p.Name, p.Spec.ResourceClaims, p.Spec.NodeName, node)
		}
		if _, ok := p.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; ok {
			t.Errorf("run pod %s asks the device plugin too: %v", p.Name, p.Spec.Containers[0].Resources.Limits)
		}
	}
	t.Logf("runs through DRA:\n%s\n%s", cl.kubectl(t, "get", "quantruns", "-n", ns, "-o", "wide"),
		cl.kubectl(t, "get", "resourceclaims", "-n", ns))
	// In the same DRA window, so that the release switches once.
	t.Run("faults: a job deleted mid-flight leaves no runs, pods or claims", func(t *testing.T) {
		start := time.Now()
		defer func() { t.Logf("wall time %s", time.Since(start).Round(time.Second)) }()
		jobDeletedMidFlight(t, cl)
	})
}
