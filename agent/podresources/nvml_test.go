// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package podresources

import (
	"errors"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/google/go-cmp/cmp"
)

func mockGPU(uuid string, migMode int, migs ...string) *mock.Device {
	return &mock.Device{
		GetUUIDFunc: func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
		GetMigModeFunc: func() (int, int, nvml.Return) {
			if migMode < 0 {
				return 0, 0, nvml.ERROR_NOT_SUPPORTED
			}
			return migMode, migMode, nvml.SUCCESS
		},
		GetMaxMigDeviceCountFunc: func() (int, nvml.Return) { return 7, nvml.SUCCESS },
		GetMigDeviceHandleByIndexFunc: func(j int) (nvml.Device, nvml.Return) {
			if j >= len(migs) || migs[j] == "" {
				return nil, nvml.ERROR_NOT_FOUND
			}
			return &mock.Device{
				GetUUIDFunc:              func() (string, nvml.Return) { return migs[j], nvml.SUCCESS },
				GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return j + 1, nvml.SUCCESS },
				GetComputeInstanceIdFunc: func() (int, nvml.Return) { return 0, nvml.SUCCESS },
			}, nvml.SUCCESS
		},
	}
}

func mockNVML(devs ...nvml.Device) *mock.Interface {
	return &mock.Interface{
		DeviceGetCountFunc: func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			return devs[i], nvml.SUCCESS
		},
	}
}

func TestInventoryFromNVML(t *testing.T) {
	tests := []struct {
		name    string
		lib     *mock.Interface
		want    Inventory
		wantErr bool
	}{
		{
			name: "a plain GPU, a GPU without MIG support, a MIG GPU with an empty slot",
			lib: mockNVML(
				mockGPU("GPU-zero", nvml.DEVICE_MIG_DISABLE),
				mockGPU("GPU-one", -1),
				mockGPU("GPU-two", nvml.DEVICE_MIG_ENABLE, "MIG-a", "", "MIG-b"),
			),
			want: Inventory{
				GPUsByIndex: map[string]string{"0": "GPU-zero", "1": "GPU-one", "2": "GPU-two"},
				MIGParents:  map[string]string{"MIG-a": "GPU-two", "MIG-b": "GPU-two"},
				MIGAliases:  map[string]string{"2:0": "MIG-a", "MIG-GPU-two/1/0": "MIG-a", "2:2": "MIG-b", "MIG-GPU-two/3/0": "MIG-b"},
			},
		},
		{
			name:    "NVML cannot count",
			lib:     &mock.Interface{DeviceGetCountFunc: func() (int, nvml.Return) { return 0, nvml.ERROR_UNINITIALIZED }},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := InventoryFromNVML(tt.lib)
			if (err != nil) != tt.wantErr {
				t.Fatalf("InventoryFromNVML error = %v, want error %v", err, tt.wantErr)
			}
			var ret nvml.Return
			if err != nil && !errors.As(err, &ret) {
				t.Errorf("error %v does not wrap the NVML return", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("InventoryFromNVML (-want +got):\n%s", diff)
			}
		})
	}
}
