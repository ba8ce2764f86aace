// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package execution_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/runpod"
	"github.com/kquant/kquant/test/builders"
)

// migRun creates a run bound to a MIG device, as the binder leaves a run of
// a job with spec.placement.migSlices: Include.
func migRun(t *testing.T, ns, name string) *kquantv1alpha1.QuantRun {
	t.Helper()
	run := builders.MakeQuantRun(name, ns, "job").Bound("gpu-node-1", 1).Obj()
	run.Spec.GPUUUID, run.Spec.MIGProfile = builders.MIGUUID("gpu-node-1", 1, 2), "2g.20gb"
	run.Status = kquantv1alpha1.QuantRunStatus{}
	if err := env.Client.Create(t.Context(), run); err != nil {
		t.Fatalf("creating run: %v", err)
	}
	return run
}

// TestMIGRunPodAsksForItsProfile: under the device plugin the run pod asks
// for its slice's profile (the mixed strategy's resource), never for a
// whole GPU.
func TestMIGRunPodAsksForItsProfile(t *testing.T) {
	ns := namespace(t)
	start(t, ns, runpod.AllocationDevicePlugin)
	pod := runPod(t, migRun(t, ns, "mig-0-0"))
	limits := pod.Spec.Containers[0].Resources.Limits
	if q := limits[corev1.ResourceName("nvidia.com/mig-2g.20gb")]; q.String() != "1" {
		t.Errorf("run pod limits %v, want nvidia.com/mig-2g.20gb: 1", limits)
	}
	if _, whole := limits["nvidia.com/gpu"]; whole {
		t.Errorf("run pod limits %v ask for a whole GPU", limits)
	}
}

// TestMIGRunPodClaimPinsTheMIGDevice: with DRA the claim asks NVIDIA's MIG
// device class for the run's MIG device by UUID.
func TestMIGRunPodClaimPinsTheMIGDevice(t *testing.T) {
	ns := namespace(t)
	start(t, ns, runpod.AllocationDRA)
	run := migRun(t, ns, "mig-dra-0-0")
	runPod(t, run)
	claim := &resourcev1.ResourceClaim{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: runpod.ClaimName(run)}, claim); err != nil {
		t.Fatalf("run's ResourceClaim: %v", err)
	}
	req := claim.Spec.Devices.Requests[0].Exactly
	want := runpod.UUIDSelector(runpod.DefaultUUIDAttributeDomain, builders.MIGUUID("gpu-node-1", 1, 2))
	if req.DeviceClassName != runpod.DefaultMIGDeviceClassName || req.Selectors[0].CEL.Expression != want {
		t.Errorf("claim class %q selector %q, want %q and %q", req.DeviceClassName, req.Selectors[0].CEL.Expression, runpod.DefaultMIGDeviceClassName, want)
	}
}
