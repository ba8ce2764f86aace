// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package podresources

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/kquant/kquant/test/fakekubelet"
)

func TestReaderAgainstFakeKubelet(t *testing.T) {
	f := fakekubelet.New(
		&podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
			pod("ml", "train", &podresourcesv1.ContainerResources{Name: "main",
				Devices: []*podresourcesv1.ContainerDevices{devices(GPUResourceName, "GPU-zero")}}),
			pod("kquant", "run-a", &podresourcesv1.ContainerResources{Name: "run",
				DynamicResources: []*podresourcesv1.DynamicResource{claim("kquant", "run-a-gpu",
					&podresourcesv1.ClaimResource{DriverName: DefaultDRADriver, PoolName: "node-a", DeviceName: "gpu-1-mig"})}}),
		}},
		&podresourcesv1.AllocatableResourcesResponse{Devices: []*podresourcesv1.ContainerDevices{
			devices(GPUResourceName, "0", "1"),
		}}, false)
	r, err := Dial(fakekubelet.Serve(t, f), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })

	snap, err := r.List(t.Context(), node)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	wantAlloc := []Allocation{
		{Device: Device{GPUUUID: "GPU-one", MIGDevice: "MIG-slice", Source: SourceDRA, ResourceName: DefaultDRADriver, DeviceID: "node-a/gpu-1-mig"},
			Container: Container{Namespace: "kquant", Pod: "run-a", Container: "run"}, Claim: "kquant/run-a-gpu"},
		{Device: Device{GPUUUID: "GPU-zero", Source: SourceDevicePlugin, ResourceName: GPUResourceName, DeviceID: "GPU-zero"},
			Container: Container{Namespace: "ml", Pod: "train", Container: "main"}},
	}
	if diff := cmp.Diff(wantAlloc, snap.Allocations); diff != "" {
		t.Errorf("List allocations (-want +got):\n%s", diff)
	}

	alloc, err := r.Allocatable(t.Context(), node)
	if err != nil {
		t.Fatalf("Allocatable: %v", err)
	}
	if diff := cmp.Diff([]string{"GPU-one", "GPU-zero"}, alloc.GPUs()); diff != "" {
		t.Errorf("Allocatable GPUs (-want +got):\n%s", diff)
	}
}

func TestReaderWithoutKubelet(t *testing.T) {
	r, err := Dial(filepath.Join(os.TempDir(), "no-such-kubelet.sock"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 2e9)
	defer cancel()
	if _, err := r.List(ctx, node); err == nil {
		t.Fatal("List without a kubelet succeeded, want an error")
	}
}

func TestReaderPod(t *testing.T) {
	list := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
		pod("ml", "train", &podresourcesv1.ContainerResources{Name: "main",
			Devices: []*podresourcesv1.ContainerDevices{devices(GPUResourceName, "GPU-zero")}}),
		pod("kquant", "run-a", &podresourcesv1.ContainerResources{Name: "run",
			Devices: []*podresourcesv1.ContainerDevices{devices(GPUResourceName, "1")}}),
	}}
	want := []Allocation{{
		Device:    Device{GPUUUID: "GPU-one", Source: SourceDevicePlugin, ResourceName: GPUResourceName, DeviceID: "1"},
		Container: Container{Namespace: "kquant", Pod: "run-a", Container: "run"},
	}}
	for _, serveGet := range []bool{true, false} {
		t.Run(fmt.Sprintf("kubelet serves Get: %v", serveGet), func(t *testing.T) {
			r, err := Dial(fakekubelet.Serve(t, fakekubelet.New(list, nil, serveGet)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = r.Close() })
			got, err := r.Pod(t.Context(), node, "kquant", "run-a")
			if err != nil {
				t.Fatalf("Pod: %v", err)
			}
			if diff := cmp.Diff(want, got.Allocations); diff != "" {
				t.Errorf("Pod allocations (-want +got):\n%s", diff)
			}
		})
	}
}
