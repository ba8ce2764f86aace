// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package podresources

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	resourcev1 "k8s.io/api/resource/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"k8s.io/utils/ptr"
)

// node is a two-GPU node: GPU 1 is MIG-partitioned.
var node = Inventory{
	GPUsByIndex: map[string]string{"0": "GPU-zero", "1": "GPU-one"},
	MIGParents:  map[string]string{"MIG-slice": "GPU-one", "MIG-other": "GPU-one"},
	MIGAliases:  map[string]string{"MIG-GPU-one/1/0": "MIG-slice", "1:0": "MIG-slice", "1:1": "MIG-other"},
	DRADevices: map[DRAKey]DRADevice{
		{Driver: DefaultDRADriver, Pool: "node-a", Device: "gpu-0"}:     {UUID: "GPU-zero"},
		{Driver: DefaultDRADriver, Pool: "node-a", Device: "gpu-1-mig"}: {UUID: "MIG-slice", ParentUUID: "GPU-one"},
	},
}

func pod(ns, name string, ctrs ...*podresourcesv1.ContainerResources) *podresourcesv1.PodResources {
	return &podresourcesv1.PodResources{Namespace: ns, Name: name, Containers: ctrs}
}

func devices(resource string, ids ...string) *podresourcesv1.ContainerDevices {
	return &podresourcesv1.ContainerDevices{ResourceName: resource, DeviceIds: ids}
}

func claim(ns, name string, res ...*podresourcesv1.ClaimResource) *podresourcesv1.DynamicResource {
	return &podresourcesv1.DynamicResource{ClaimNamespace: ns, ClaimName: name, ClaimResources: res}
}

func TestFromList(t *testing.T) {
	train := Container{Namespace: "ml", Pod: "train", Container: "main"}
	tests := []struct {
		name           string
		pods           []*podresourcesv1.PodResources
		opts           Options
		wantAlloc      []Allocation
		wantUnresolved []Unresolved
	}{
		{
			name: "whole GPUs by UUID and by index",
			pods: []*podresourcesv1.PodResources{pod("ml", "train", &podresourcesv1.ContainerResources{
				Name: "main", Devices: []*podresourcesv1.ContainerDevices{devices(GPUResourceName, "GPU-one", "0")}})},
			wantAlloc: []Allocation{
				{Device: Device{GPUUUID: "GPU-one", Source: SourceDevicePlugin, ResourceName: GPUResourceName, DeviceID: "GPU-one"}, Container: train},
				{Device: Device{GPUUUID: "GPU-zero", Source: SourceDevicePlugin, ResourceName: GPUResourceName, DeviceID: "0"}, Container: train},
			},
		},
		{
			name: "MIG slices and replicas map to their physical GPU",
			pods: []*podresourcesv1.PodResources{pod("ml", "train", &podresourcesv1.ContainerResources{
				Name: "main", Devices: []*podresourcesv1.ContainerDevices{
					devices("nvidia.com/mig-1g.10gb", "MIG-slice"),
					devices(GPUResourceName, "GPU-zero::2"),
				}})},
			wantAlloc: []Allocation{
				{Device: Device{GPUUUID: "GPU-one", MIGDevice: "MIG-slice", Source: SourceDevicePlugin, ResourceName: "nvidia.com/mig-1g.10gb", DeviceID: "MIG-slice"}, Container: train},
				{Device: Device{GPUUUID: "GPU-zero", Replica: "2", Source: SourceDevicePlugin, ResourceName: GPUResourceName, DeviceID: "GPU-zero::2"}, Container: train},
			},
		},
		{
			name: "legacy and index MIG names are named by the MIG device's UUID",
			pods: []*podresourcesv1.PodResources{pod("ml", "train", &podresourcesv1.ContainerResources{
				Name: "main", Devices: []*podresourcesv1.ContainerDevices{
					devices("nvidia.com/mig-1g.10gb", "MIG-GPU-one/1/0", "1:1", "MIG-GPU-one/9/0"),
				}})},
			wantAlloc: []Allocation{
				{Device: Device{GPUUUID: "GPU-one", MIGDevice: "MIG-other", Source: SourceDevicePlugin, ResourceName: "nvidia.com/mig-1g.10gb", DeviceID: "1:1"}, Container: train},
				{Device: Device{GPUUUID: "GPU-one", MIGDevice: "MIG-slice", Source: SourceDevicePlugin, ResourceName: "nvidia.com/mig-1g.10gb", DeviceID: "MIG-GPU-one/1/0"}, Container: train},
				{Device: Device{GPUUUID: "GPU-one", MIGDevice: "MIG-GPU-one/9/0", Source: SourceDevicePlugin, ResourceName: "nvidia.com/mig-1g.10gb", DeviceID: "MIG-GPU-one/9/0"}, Container: train},
			},
		},
		{
			name: "other resources are not GPUs unless named",
			pods: []*podresourcesv1.PodResources{pod("ml", "train", &podresourcesv1.ContainerResources{
				Name: "main", Devices: []*podresourcesv1.ContainerDevices{
					devices("example.com/fpga", "GPU-zero"),
					devices("nvidia.com/gpu.shared", "GPU-one::0"),
				}})},
			opts: Options{ResourceNames: []string{"nvidia.com/gpu.shared"}},
			wantAlloc: []Allocation{
				{Device: Device{GPUUUID: "GPU-one", Replica: "0", Source: SourceDevicePlugin, ResourceName: "nvidia.com/gpu.shared", DeviceID: "GPU-one::0"}, Container: train},
			},
		},
		{
			name: "DRA devices resolve through the ResourceSlices",
			pods: []*podresourcesv1.PodResources{pod("ml", "train", &podresourcesv1.ContainerResources{
				Name: "main", DynamicResources: []*podresourcesv1.DynamicResource{
					claim("ml", "gpus",
						&podresourcesv1.ClaimResource{DriverName: DefaultDRADriver, PoolName: "node-a", DeviceName: "gpu-0"},
						&podresourcesv1.ClaimResource{DriverName: DefaultDRADriver, PoolName: "node-a", DeviceName: "gpu-1-mig"},
						&podresourcesv1.ClaimResource{DriverName: "net.example.com", PoolName: "node-a", DeviceName: "nic-0"}),
				}})},
			wantAlloc: []Allocation{
				{Device: Device{GPUUUID: "GPU-one", MIGDevice: "MIG-slice", Source: SourceDRA, ResourceName: DefaultDRADriver, DeviceID: "node-a/gpu-1-mig"}, Container: train, Claim: "ml/gpus"},
				{Device: Device{GPUUUID: "GPU-zero", Source: SourceDRA, ResourceName: DefaultDRADriver, DeviceID: "node-a/gpu-0"}, Container: train, Claim: "ml/gpus"},
			},
		},
		{
			name: "unknown devices are reported, not dropped",
			pods: []*podresourcesv1.PodResources{pod("ml", "train", &podresourcesv1.ContainerResources{
				Name: "main",
				Devices: []*podresourcesv1.ContainerDevices{
					devices(GPUResourceName, "7", "MIG-elsewhere", "weird"),
				},
				DynamicResources: []*podresourcesv1.DynamicResource{
					claim("ml", "gpus", &podresourcesv1.ClaimResource{DriverName: DefaultDRADriver, PoolName: "node-a", DeviceName: "gpu-9"}),
				}})},
			wantUnresolved: []Unresolved{
				{Container: train, ResourceName: GPUResourceName, DeviceID: "7", Reason: "no GPU with index 7 on this node"},
				{Container: train, ResourceName: GPUResourceName, DeviceID: "MIG-elsewhere", Reason: "no GPU holds MIG device MIG-elsewhere"},
				{Container: train, ResourceName: GPUResourceName, DeviceID: "weird", Reason: `device ID "weird" has no known GPU naming`},
				{Container: train, ResourceName: DefaultDRADriver, DeviceID: "node-a/gpu-9", Reason: "no ResourceSlice of driver gpu.nvidia.com names a UUID for device node-a/gpu-9"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FromList(&podresourcesv1.ListPodResourcesResponse{PodResources: tt.pods}, node, tt.opts)
			if diff := cmp.Diff(tt.wantAlloc, got.Allocations); diff != "" {
				t.Errorf("allocations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantUnresolved, got.Unresolved); diff != "" {
				t.Errorf("unresolved (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSnapshotAllocatedTo(t *testing.T) {
	s := Snapshot{Allocations: []Allocation{
		{Device: Device{GPUUUID: "GPU-a", DeviceID: "GPU-a::0"}},
		{Device: Device{GPUUUID: "GPU-b", DeviceID: "GPU-b"}},
		{Device: Device{GPUUUID: "GPU-a", DeviceID: "GPU-a::1"}},
	}}
	var got []string
	for _, a := range s.AllocatedTo("GPU-a") {
		got = append(got, a.DeviceID)
	}
	if diff := cmp.Diff([]string{"GPU-a::0", "GPU-a::1"}, got); diff != "" {
		t.Errorf("AllocatedTo (-want +got):\n%s", diff)
	}
}

func TestFromAllocatable(t *testing.T) {
	resp := &podresourcesv1.AllocatableResourcesResponse{Devices: []*podresourcesv1.ContainerDevices{
		devices(GPUResourceName, "GPU-zero::0", "GPU-zero::1"),
		devices("nvidia.com/mig-1g.10gb", "MIG-GPU-one/1/0"),
		devices("example.com/fpga", "fpga-0"),
	}}
	got := FromAllocatable(resp, node, Options{})
	if diff := cmp.Diff([]string{"GPU-one", "GPU-zero"}, got.GPUs()); diff != "" {
		t.Errorf("GPUs (-want +got):\n%s", diff)
	}
	if len(got.Devices) != 3 || len(got.Unresolved) != 0 {
		t.Errorf("got %d devices and %d unresolved, want 3 and 0: %+v", len(got.Devices), len(got.Unresolved), got)
	}
}

func TestDRADevicesFromSlices(t *testing.T) {
	str := func(s string) resourcev1.DeviceAttribute { return resourcev1.DeviceAttribute{StringValue: ptr.To(s)} }
	slices := []resourcev1.ResourceSlice{
		{Spec: resourcev1.ResourceSliceSpec{Driver: DefaultDRADriver, Pool: resourcev1.ResourcePool{Name: "node-a"},
			Devices: []resourcev1.Device{
				{Name: "gpu-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"type": str("gpu"), "uuid": str("GPU-zero")}},
				{Name: "gpu-1-mig", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
					"gpu.nvidia.com/type": str("mig"), "gpu.nvidia.com/uuid": str("MIG-slice"), "gpu.nvidia.com/parentUUID": str("GPU-one")}},
				{Name: "no-uuid", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"type": str("gpu")}},
			}}},
		{Spec: resourcev1.ResourceSliceSpec{Driver: "net.example.com", Pool: resourcev1.ResourcePool{Name: "node-a"},
			Devices: []resourcev1.Device{{Name: "nic-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"uuid": str("NIC")}}}}},
	}
	got := DRADevicesFromSlices(DefaultDRADriver, "", slices)
	if diff := cmp.Diff(node.DRADevices, got); diff != "" {
		t.Errorf("DRADevicesFromSlices (-want +got):\n%s", diff)
	}
}

// A driver of another name (the local cluster's test driver) that publishes
// its attributes in NVIDIA's domain resolves when told the domain.
func TestDRADevicesFromSlicesInAnotherDomain(t *testing.T) {
	const driver = "gpu.test.example"
	uuid := resourcev1.DeviceAttribute{StringValue: ptr.To("GPU-zero")}
	slices := []resourcev1.ResourceSlice{{Spec: resourcev1.ResourceSliceSpec{Driver: driver, Pool: resourcev1.ResourcePool{Name: "node-a"},
		Devices: []resourcev1.Device{{Name: "gpu-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"gpu.nvidia.com/uuid": uuid}}}}}}
	want := map[DRAKey]DRADevice{{Driver: driver, Pool: "node-a", Device: "gpu-0"}: {UUID: "GPU-zero"}}
	if diff := cmp.Diff(want, DRADevicesFromSlices(driver, "gpu.nvidia.com", slices)); diff != "" {
		t.Errorf("DRADevicesFromSlices in domain gpu.nvidia.com (-want +got):\n%s", diff)
	}
	if got := DRADevicesFromSlices(driver, "", slices); len(got) != 0 {
		t.Errorf("in the driver's own domain nothing resolves, got %v", got)
	}
}
