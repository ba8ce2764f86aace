// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nvml_test

import (
	"context"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/google/go-cmp/cmp"

	"github.com/kquant/kquant/agent/nvml"
	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/api/v1alpha1"
)

// migDevice is a mock MIG device with NVML's attributes of a slice.
func migDevice(uuid string, gi, ci int, gSlices, cSlices uint32, memMiB uint64) *mock.Device {
	return &mock.Device{
		GetUUIDFunc:              func() (string, gonvml.Return) { return uuid, gonvml.SUCCESS },
		GetGpuInstanceIdFunc:     func() (int, gonvml.Return) { return gi, gonvml.SUCCESS },
		GetComputeInstanceIdFunc: func() (int, gonvml.Return) { return ci, gonvml.SUCCESS },
		GetAttributesFunc: func() (gonvml.DeviceAttributes, gonvml.Return) {
			return gonvml.DeviceAttributes{GpuInstanceSliceCount: gSlices, ComputeInstanceSliceCount: cSlices, MemorySizeMB: memMiB}, gonvml.SUCCESS
		},
	}
}

func TestDiscoverMIG(t *testing.T) {
	slots := func(devs ...gonvml.Device) func(int) (gonvml.Device, gonvml.Return) {
		return func(i int) (gonvml.Device, gonvml.Return) {
			if i >= len(devs) || devs[i] == nil {
				return nil, gonvml.ERROR_NOT_FOUND
			}
			return devs[i], gonvml.SUCCESS
		}
	}
	cases := []struct {
		name   string
		modify func(d *mock.Device)
		want   nvml.GPU
	}{
		{
			name: "MIG devices in slot order, empty slots skipped, profiles named as the device plugin does",
			modify: func(d *mock.Device) {
				d.GetMigDeviceHandleByIndexFunc = slots(
					migDevice("MIG-a", 2, 0, 3, 3, 71424),
					nil,
					migDevice("MIG-b", 5, 0, 1, 1, 16384),
					migDevice("MIG-c", 1, 1, 2, 1, 33792))
			},
			want: nvml.GPU{MIGMode: v1alpha1.MIGEnabled, MIGDevices: []nvml.MIGDevice{
				{UUID: "MIG-a", GPUInstanceID: 2, ComputeInstanceID: 0, Profile: "3g.71gb", MemoryMiB: 71424},
				{UUID: "MIG-b", GPUInstanceID: 5, ComputeInstanceID: 0, Profile: "1g.18gb", MemoryMiB: 16384},
				{UUID: "MIG-c", GPUInstanceID: 1, ComputeInstanceID: 1, Profile: "1c.2g.35gb", MemoryMiB: 33792},
			}},
		},
		{
			name: "MIG enabled with no GPU instance",
			want: nvml.GPU{MIGMode: v1alpha1.MIGEnabled},
		},
		{
			name: "MIG pending: disabled now, enabled at the next reset",
			modify: func(d *mock.Device) {
				d.GetMigModeFunc = func() (int, int, gonvml.Return) {
					return gonvml.DEVICE_MIG_DISABLE, gonvml.DEVICE_MIG_ENABLE, gonvml.SUCCESS
				}
			},
			want: nvml.GPU{MIGMode: v1alpha1.MIGDisabled, MIGModePending: v1alpha1.MIGEnabled},
		},
		{
			name: "no MIG support",
			modify: func(d *mock.Device) {
				d.GetMigModeFunc = func() (int, int, gonvml.Return) { return 0, 0, gonvml.ERROR_NOT_SUPPORTED }
			},
			want: nvml.GPU{MIGMode: v1alpha1.MIGNotSupported},
		},
		{
			name: "unreadable MIG devices leave the GPU without slices, Degraded",
			modify: func(d *mock.Device) {
				d.GetMaxMigDeviceCountFunc = func() (int, gonvml.Return) { return 0, gonvml.ERROR_UNKNOWN }
			},
			want: nvml.GPU{MIGMode: v1alpha1.MIGEnabled, Health: v1alpha1.HealthDegraded,
				HealthMessage: "MIG devices unreadable: counting MIG devices: ERROR_UNKNOWN"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dev := device("GPU-mig")
			if tc.modify != nil {
				tc.modify(dev)
			}
			d, err := nvml.Open(ctx, library(dev))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = d.Close() }()
			node, err := d.Discover(ctx)
			if err != nil || len(node.GPUs) != 1 {
				t.Fatalf("Discover = %v, %v; want one GPU", node, err)
			}
			got := node.GPUs[0]
			want := tc.want
			if want.Health == "" {
				want.Health = v1alpha1.HealthHealthy
			}
			got.Index, got.UUID, got.Product, got.ComputeCapability, got.MemoryMiB = 0, "", "", want.ComputeCapability, 0
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("MIG (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMIGProfileName(t *testing.T) {
	const mib, gib = 1 << 20, 1 << 30
	cases := []struct {
		name                 string
		gSlices, cSlices     uint32
		memMiB, parentMemory uint64
		want                 string
	}{
		{name: "A100-40GB 1g.5gb", gSlices: 1, cSlices: 1, memMiB: 4864, parentMemory: 40960 * mib, want: "1g.5gb"},
		{name: "A100-80GB 3g.40gb", gSlices: 3, cSlices: 3, memMiB: 40192, parentMemory: 81920 * mib, want: "3g.40gb"},
		{name: "H100-80GB 1g.10gb", gSlices: 1, cSlices: 1, memMiB: 9856, parentMemory: 81559 * mib, want: "1g.10gb"},
		{name: "H100-80GB 7g.80gb", gSlices: 7, cSlices: 7, memMiB: 80896, parentMemory: 81559 * mib, want: "7g.80gb"},
		{name: "a compute instance of part of its GPU instance", gSlices: 4, cSlices: 2, memMiB: 40192, parentMemory: 81920 * mib, want: "2c.4g.40gb"},
		{name: "no parent memory: whole GB", gSlices: 1, cSlices: 1, memMiB: 9856, want: "1g.10gb"},
		{name: "exactly one GiB share", gSlices: 1, cSlices: 0, memMiB: 1024, parentMemory: 8 * gib, want: "1g.1gb"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := nvml.MIGProfileName(tc.gSlices, tc.cSlices, tc.memMiB, tc.parentMemory); got != tc.want {
				t.Errorf("MIGProfileName(%d, %d, %d, %d) = %q, want %q", tc.gSlices, tc.cSlices, tc.memMiB, tc.parentMemory, got, tc.want)
			}
		})
	}
}

func TestDiscoverSimulatedMIGNode(t *testing.T) {
	ctx := context.Background()
	spec, err := simulate.Parse("H100:1,A100/mig:1")
	if err != nil {
		t.Fatal(err)
	}
	if spec.String() != "H100:1,A100/mig:1" {
		t.Errorf("spec %q does not read back", spec.String())
	}
	sim := simulate.NewNode("mig-1", spec)
	view := func(lib gonvml.Interface) *nvml.Node {
		t.Helper()
		d, err := nvml.Open(ctx, lib)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = d.Close() }()
		node, err := d.Discover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return node
	}
	node := view(sim.Library())
	var profiles []string
	for _, m := range node.GPUs[1].MIGDevices {
		profiles = append(profiles, m.Profile)
	}
	if node.GPUs[0].MIGMode != v1alpha1.MIGDisabled || node.GPUs[1].MIGMode != v1alpha1.MIGEnabled ||
		!cmp.Equal(profiles, []string{"3g.40gb", "2g.20gb", "2g.20gb"}) || node.GPUs[1].MIGDevices[1].UUID != simulate.MIGUUID("mig-1", 1, 1) {
		t.Errorf("GPUs %+v, profiles %v", node.GPUs, profiles)
	}

	// A run pod given one slice sees its parent with that slice alone, and
	// the slice's own processes.
	slice := simulate.MIGUUID("mig-1", 1, 2)
	only, ok := sim.Only(slice)
	if !ok {
		t.Fatal("Only(slice) found no such MIG device")
	}
	pod := view(only.Library())
	if len(pod.GPUs) != 1 || len(pod.GPUs[0].MIGDevices) != 1 || pod.GPUs[0].MIGDevices[0].UUID != slice {
		t.Errorf("the pod's view: %+v", pod.GPUs)
	}
	sim.SetProcesses(slice, 4242)
	dev, ret := only.Library().DeviceGetHandleByUUID(slice)
	if ret != gonvml.SUCCESS {
		t.Fatalf("DeviceGetHandleByUUID(%s): %v", slice, ret)
	}
	if procs, _ := dev.GetComputeRunningProcesses(); len(procs) != 1 || procs[0].Pid != 4242 {
		t.Errorf("processes on the slice: %v", procs)
	}
	if _, ok := sim.Only(simulate.MIGUUID("mig-1", 0, 0)); ok {
		t.Error("Only found a MIG device on a GPU without MIG")
	}
	if _, err := simulate.Parse("L40S/mig:1"); err == nil {
		t.Error("L40S/mig parsed; L40S has no MIG")
	}
}
