// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nvml_test

import (
	"context"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/google/go-cmp/cmp"

	"github.com/kquant/kquant/agent/nvml"
	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/capability"
)

func mustParse(t *testing.T, s string) simulate.Spec {
	t.Helper()
	spec, err := simulate.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func TestDiscoverMixedNodeReportsEachGPU(t *testing.T) {
	ctx := context.Background()
	sim := simulate.NewNode("mixed-1", mustParse(t, "H100:2,A100:1,RTX-PRO-6000:1,L40S:1"))
	d, err := nvml.Open(ctx, sim.Library())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Close() }()

	got, err := d.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	healthy := func(i int, product string, cc capability.Version, mem int64, mig v1alpha1.MIGMode) nvml.GPU {
		return nvml.GPU{
			Index: i, UUID: simulate.UUID("mixed-1", i), Product: product, ComputeCapability: cc,
			MemoryMiB: mem, MIGMode: mig, Health: v1alpha1.HealthHealthy,
		}
	}
	want := &nvml.Node{
		DriverVersion:     simulate.DriverVersion,
		CUDADriverVersion: capability.V(13, 0),
		GPUs: []nvml.GPU{
			healthy(0, "NVIDIA H100 80GB HBM3", capability.V(9, 0), 81559, v1alpha1.MIGDisabled),
			healthy(1, "NVIDIA H100 80GB HBM3", capability.V(9, 0), 81559, v1alpha1.MIGDisabled),
			healthy(2, "NVIDIA A100-SXM4-80GB", capability.V(8, 0), 81920, v1alpha1.MIGDisabled),
			healthy(3, "NVIDIA RTX PRO 6000 Blackwell Server Edition", capability.V(12, 0), 97887, v1alpha1.MIGDisabled),
			healthy(4, "NVIDIA L40S", capability.V(8, 9), 46068, v1alpha1.MIGNotSupported),
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Discover mismatch (-want +got):\n%s", diff)
	}
}

// device is a healthy mock GPU whose health answers a test can override.
func device(uuid string) *mock.Device {
	return &mock.Device{
		GetUUIDFunc:                  func() (string, gonvml.Return) { return uuid, gonvml.SUCCESS },
		GetNameFunc:                  func() (string, gonvml.Return) { return "NVIDIA H200", gonvml.SUCCESS },
		GetCudaComputeCapabilityFunc: func() (int, int, gonvml.Return) { return 9, 0, gonvml.SUCCESS },
		GetMemoryInfoFunc: func() (gonvml.Memory, gonvml.Return) {
			return gonvml.Memory{Total: 143771 << 20}, gonvml.SUCCESS
		},
		GetMigModeFunc: func() (int, int, gonvml.Return) {
			return gonvml.DEVICE_MIG_ENABLE, gonvml.DEVICE_MIG_ENABLE, gonvml.SUCCESS
		},
		GetMaxMigDeviceCountFunc:      func() (int, gonvml.Return) { return 7, gonvml.SUCCESS },
		GetMigDeviceHandleByIndexFunc: func(int) (gonvml.Device, gonvml.Return) { return nil, gonvml.ERROR_NOT_FOUND },
		GetRemappedRowsFunc: func() (int, int, bool, bool, gonvml.Return) {
			return 0, 0, false, false, gonvml.SUCCESS
		},
		GetRetiredPagesPendingStatusFunc: func() (gonvml.EnableState, gonvml.Return) {
			return gonvml.FEATURE_DISABLED, gonvml.SUCCESS
		},
		GetTemperatureFunc:          func(gonvml.TemperatureSensors) (uint32, gonvml.Return) { return 40, gonvml.SUCCESS },
		GetTemperatureThresholdFunc: func(gonvml.TemperatureThresholds) (uint32, gonvml.Return) { return 90, gonvml.SUCCESS },
		GetSupportedEventTypesFunc:  func() (uint64, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED },
	}
}

func library(devs ...gonvml.Device) *mock.Interface {
	return &mock.Interface{
		InitFunc:                       func() gonvml.Return { return gonvml.SUCCESS },
		ShutdownFunc:                   func() gonvml.Return { return gonvml.SUCCESS },
		SystemGetDriverVersionFunc:     func() (string, gonvml.Return) { return "570.86.15", gonvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, gonvml.Return) { return 12080, gonvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, gonvml.Return) { return len(devs), gonvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (gonvml.Device, gonvml.Return) {
			if devs[i] == nil {
				return nil, gonvml.ERROR_GPU_IS_LOST
			}
			return devs[i], gonvml.SUCCESS
		},
		EventSetCreateFunc: func() (gonvml.EventSet, gonvml.Return) { return nil, gonvml.ERROR_NOT_SUPPORTED },
	}
}

func TestDiscoverHealth(t *testing.T) {
	cases := []struct {
		name        string
		modify      func(d *mock.Device)
		wantHealth  v1alpha1.Health
		wantMessage string
	}{
		{
			name:       "healthy GPU",
			modify:     func(*mock.Device) {},
			wantHealth: v1alpha1.HealthHealthy,
		},
		{
			name: "nothing supported is no evidence of a problem",
			modify: func(d *mock.Device) {
				d.GetRemappedRowsFunc = func() (int, int, bool, bool, gonvml.Return) {
					return 0, 0, false, false, gonvml.ERROR_NOT_SUPPORTED
				}
				d.GetRetiredPagesPendingStatusFunc = func() (gonvml.EnableState, gonvml.Return) {
					return 0, gonvml.ERROR_NOT_SUPPORTED
				}
				d.GetTemperatureFunc = func(gonvml.TemperatureSensors) (uint32, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
			},
			wantHealth: v1alpha1.HealthHealthy,
		},
		{
			name: "failed row remapping is unhealthy",
			modify: func(d *mock.Device) {
				d.GetRemappedRowsFunc = func() (int, int, bool, bool, gonvml.Return) {
					return 0, 3, false, true, gonvml.SUCCESS
				}
			},
			wantHealth:  v1alpha1.HealthUnhealthy,
			wantMessage: "row remapping failed",
		},
		{
			name: "pending row remapping is degraded",
			modify: func(d *mock.Device) {
				d.GetRemappedRowsFunc = func() (int, int, bool, bool, gonvml.Return) {
					return 1, 0, true, false, gonvml.SUCCESS
				}
			},
			wantHealth:  v1alpha1.HealthDegraded,
			wantMessage: "row remapping pending (reset the GPU)",
		},
		{
			name: "pending page retirement is degraded",
			modify: func(d *mock.Device) {
				d.GetRetiredPagesPendingStatusFunc = func() (gonvml.EnableState, gonvml.Return) {
					return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
				}
			},
			wantHealth:  v1alpha1.HealthDegraded,
			wantMessage: "retired pages pending (reboot the node)",
		},
		{
			name: "temperature at the slowdown threshold is degraded",
			modify: func(d *mock.Device) {
				d.GetTemperatureFunc = func(gonvml.TemperatureSensors) (uint32, gonvml.Return) { return 90, gonvml.SUCCESS }
			},
			wantHealth:  v1alpha1.HealthDegraded,
			wantMessage: "temperature 90 C at or above slowdown threshold 90 C",
		},
		{
			name: "unhealthy and degraded findings are all reported",
			modify: func(d *mock.Device) {
				d.GetRemappedRowsFunc = func() (int, int, bool, bool, gonvml.Return) {
					return 0, 3, false, true, gonvml.SUCCESS
				}
				d.GetRetiredPagesPendingStatusFunc = func() (gonvml.EnableState, gonvml.Return) {
					return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
				}
			},
			wantHealth:  v1alpha1.HealthUnhealthy,
			wantMessage: "row remapping failed; retired pages pending (reboot the node)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dev := device("GPU-test")
			tc.modify(dev)
			d, err := nvml.Open(ctx, library(dev))
			if err != nil {
				t.Fatal(err)
			}
			node, err := d.Discover(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(node.GPUs) != 1 {
				t.Fatalf("got %d GPUs, want 1", len(node.GPUs))
			}
			gpu := node.GPUs[0]
			if gpu.Health != tc.wantHealth || gpu.HealthMessage != tc.wantMessage {
				t.Errorf("health = %s %q, want %s %q", gpu.Health, gpu.HealthMessage, tc.wantHealth, tc.wantMessage)
			}
			if gpu.MIGMode != v1alpha1.MIGEnabled || gpu.MemoryMiB != 143771 {
				t.Errorf("MIG %s memory %d, want Enabled 143771", gpu.MIGMode, gpu.MemoryMiB)
			}
		})
	}
}

func TestDiscoverXIDsAreStickyAndSkipApplicationErrors(t *testing.T) {
	ctx := context.Background()
	sim := simulate.NewNode("xid-node", mustParse(t, "B200:2"))
	d, err := nvml.Open(ctx, sim.Library())
	if err != nil {
		t.Fatal(err)
	}
	sim.InjectXID(0, 13) // application error: the GPU stays healthy
	sim.InjectXID(1, 79) // GPU fell off the bus
	for round := range 2 {
		node, err := d.Discover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := node.GPUs[0].Health; got != v1alpha1.HealthHealthy {
			t.Errorf("round %d: GPU 0 health %s after XID 13, want Healthy", round, got)
		}
		if got := node.GPUs[1]; got.Health != v1alpha1.HealthUnhealthy || got.HealthMessage != "XID critical errors [79]" {
			t.Errorf("round %d: GPU 1 health %s %q, want Unhealthy after XID 79", round, got.Health, got.HealthMessage)
		}
	}
}

func TestDiscoverSkipsUnidentifiableGPU(t *testing.T) {
	ctx := context.Background()
	d, err := nvml.Open(ctx, library(device("GPU-a"), nil, device("GPU-c")))
	if err != nil {
		t.Fatal(err)
	}
	node, err := d.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var uuids []string
	for _, g := range node.GPUs {
		uuids = append(uuids, g.UUID)
	}
	if diff := cmp.Diff([]string{"GPU-a", "GPU-c"}, uuids); diff != "" {
		t.Errorf("UUIDs mismatch (-want +got):\n%s", diff)
	}
	if len(node.Problems) != 1 || !strings.Contains(node.Problems[0], "GPU 1") {
		t.Errorf("problems = %q, want one naming GPU 1", node.Problems)
	}
	if node.CUDADriverVersion != capability.V(12, 8) || node.DriverVersion != "570.86.15" {
		t.Errorf("driver %s CUDA %s", node.DriverVersion, node.CUDADriverVersion)
	}
}

func TestOpenFailsWhenInitFails(t *testing.T) {
	lib := library()
	lib.InitFunc = func() gonvml.Return { return gonvml.ERROR_LIBRARY_NOT_FOUND }
	if _, err := nvml.Open(context.Background(), lib); err == nil {
		t.Fatal("Open succeeded with a library that does not initialise")
	}
}

func TestAutoFallsBackToNullWithoutLibrary(t *testing.T) {
	d, _ := nvml.Auto(context.Background())
	defer func() { _ = d.Close() }()
	null, ok := d.(nvml.Null)
	if !ok {
		t.Skip("this machine has NVML; the fallback is not exercised")
	}
	if null.Reason == "" {
		t.Error("Null has no reason")
	}
	node, err := d.Discover(context.Background())
	if err != nil || len(node.GPUs) != 0 {
		t.Errorf("Null.Discover = %v, %v; want no GPUs", node, err)
	}
}
