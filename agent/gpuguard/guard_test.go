// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpuguard

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/google/go-cmp/cmp"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

const gpu = "GPU-11111111-2222-3333-4444-555555555555"

// gpuWith is a mock NVML with one GPU whose process lists are given; a nil
// list answers NOT_SUPPORTED.
func gpuWith(compute, mps, graphics []nvml.ProcessInfo) *mock.Interface {
	list := func(l []nvml.ProcessInfo) func() ([]nvml.ProcessInfo, nvml.Return) {
		return func() ([]nvml.ProcessInfo, nvml.Return) {
			if l == nil {
				return nil, nvml.ERROR_NOT_SUPPORTED
			}
			return l, nvml.SUCCESS
		}
	}
	dev := &mock.Device{
		GetComputeRunningProcessesFunc:    list(compute),
		GetMPSComputeRunningProcessesFunc: list(mps),
		GetGraphicsRunningProcessesFunc:   list(graphics),
	}
	return &mock.Interface{DeviceGetHandleByUUIDFunc: func(uuid string) (nvml.Device, nvml.Return) {
		if uuid != gpu {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return dev, nvml.SUCCESS
	}}
}

func TestCheck(t *testing.T) {
	none := []nvml.ProcessInfo{}
	tests := []struct {
		name        string
		lib         *mock.Interface
		uuid        string
		allowed     Allowed
		wantForeign []Process
		wantErr     error
		wantNVMLErr bool
	}{
		{name: "idle GPU", lib: gpuWith(none, nil, nil), uuid: gpu},
		{name: "only the run's own process", lib: gpuWith([]nvml.ProcessInfo{{Pid: 100, UsedGpuMemory: 1 << 30}}, none, none),
			uuid: gpu, allowed: PIDs(100)},
		{
			name:    "a training process before the run started",
			lib:     gpuWith([]nvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 40 << 30}}, nil, nil),
			uuid:    gpu,
			allowed: NoProcessAllowed,
			wantForeign: []Process{
				{PID: 4242, UsedMemoryBytes: 40 << 30, Kind: KindCompute},
			},
			wantErr: ErrGPUInUse,
		},
		{
			name:    "nil allowed means none",
			lib:     gpuWith([]nvml.ProcessInfo{{Pid: 7}}, nil, nil),
			uuid:    gpu,
			wantErr: ErrGPUInUse, wantForeign: []Process{{PID: 7, Kind: KindCompute}},
		},
		{
			name: "foreign MPS and graphics processes beside the run",
			lib: gpuWith([]nvml.ProcessInfo{{Pid: 100}},
				[]nvml.ProcessInfo{{Pid: 300, UsedGpuMemory: ^uint64(0)}},
				[]nvml.ProcessInfo{{Pid: 200, UsedGpuMemory: 1 << 20}, {Pid: 100}}),
			uuid:    gpu,
			allowed: PIDs(100),
			wantForeign: []Process{
				{PID: 200, UsedMemoryBytes: 1 << 20, Kind: KindGraphics},
				{PID: 300, Kind: KindMPSCompute},
			},
			wantErr: ErrGPUInUse,
		},
		{name: "unknown GPU", lib: gpuWith(none, nil, nil), uuid: "GPU-other", wantNVMLErr: true},
		{name: "compute list unavailable", lib: gpuWith(nil, nil, nil), uuid: gpu, wantNVMLErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := New(tt.lib).Check(tt.uuid, tt.allowed)
			if tt.wantNVMLErr {
				var ret nvml.Return
				if !errors.As(err, &ret) || errors.Is(err, ErrGPUInUse) {
					t.Fatalf("Check = %v, want a wrapped NVML error", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Check = %v, want %v", err, tt.wantErr)
			}
			var inUse *InUseError
			if errors.As(err, &inUse) {
				if diff := cmp.Diff(tt.wantForeign, inUse.Processes); diff != "" {
					t.Errorf("foreign processes (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestTerminationMessage(t *testing.T) {
	err := &InUseError{GPU: gpu, Processes: []Process{{PID: 4242, UsedMemoryBytes: 2 << 30, Kind: KindCompute}, {PID: 7, Kind: KindGraphics}}}
	want := kquantv1alpha1.RunReasonGPUInUse + ": GPU " + gpu + " is used by other processes: 4242 (compute, 2048 MiB), 7 (graphics)"
	if got := TerminationMessage(err); got != want {
		t.Errorf("TerminationMessage = %q, want %q", got, want)
	}
	if got := TerminationMessage(errors.New("boom")); got != "boom" {
		t.Errorf("TerminationMessage(other) = %q", got)
	}
}

func TestPodProcesses(t *testing.T) {
	proc := t.TempDir()
	write := func(pid, cgroup string) {
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, pid, "cgroup"), []byte(cgroup), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const uid = "0f1e2d3c-aaaa-bbbb-cccc-123456789abc"
	write("10", "0::/kubepods/burstable/pod"+uid+"/c0ffee\n")
	write("11", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0f1e2d3c_aaaa_bbbb_cccc_123456789abc.slice/cri-containerd-1.scope\n")
	write("20", "0::/kubepods/burstable/pod99999999-aaaa-bbbb-cccc-123456789abc/beef\n")
	write("30", "0::/system.slice/sshd.service\n")

	allowed := PodProcesses(proc, uid)
	tests := []struct {
		pid  uint32
		want bool
	}{
		{pid: 10, want: true},  // cgroupfs driver
		{pid: 11, want: true},  // systemd driver
		{pid: 20, want: false}, // another pod
		{pid: 30, want: false}, // a host process
		{pid: 40, want: false}, // gone
	}
	for _, tt := range tests {
		if got := allowed(tt.pid); got != tt.want {
			t.Errorf("PodProcesses(%d) = %v, want %v", tt.pid, got, tt.want)
		}
	}
}
