// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpuguard

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	clocktesting "k8s.io/utils/clock/testing"
)

// changingGPU is a mock GPU whose compute processes a test swaps, and whose
// NVML answers can fail.
func changingGPU(procs *atomic.Pointer[[]nvml.ProcessInfo], fail *atomic.Bool) *mock.Interface {
	dev := &mock.Device{
		GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
			if fail.Load() {
				return nil, nvml.ERROR_UNKNOWN
			}
			return *procs.Load(), nvml.SUCCESS
		},
		GetMPSComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED },
		GetGraphicsRunningProcessesFunc:   func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED },
	}
	return &mock.Interface{DeviceGetHandleByUUIDFunc: func(string) (nvml.Device, nvml.Return) { return dev, nvml.SUCCESS }}
}

func TestWatchCancelsWhenAForeignProcessAppears(t *testing.T) {
	var procs atomic.Pointer[[]nvml.ProcessInfo]
	var fail atomic.Bool
	procs.Store(&[]nvml.ProcessInfo{{Pid: 100}})
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))

	ctx, stop := New(changingGPU(&procs, &fail)).Watch(t.Context(), clk, gpu, PIDs(100), time.Second)
	defer stop()

	// tick fires the watcher's ticker. The fake ticker drops a tick only
	// while one is still unread, so every tick is followed by a check.
	tick := func() { clk.Step(time.Second) }
	stillRunning := func(what string) {
		t.Helper()
		select {
		case <-ctx.Done():
			t.Fatalf("%s: watch cancelled the run: %v", what, context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}

	tick()
	stillRunning("only the run's own process")

	fail.Store(true)
	tick()
	stillRunning("an NVML error")
	fail.Store(false)

	procs.Store(&[]nvml.ProcessInfo{{Pid: 100}, {Pid: 4242}})
	tick()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("watch did not cancel the run when a foreign process appeared")
	}
	var inUse *InUseError
	if cause := context.Cause(ctx); !errors.As(cause, &inUse) || len(inUse.Processes) != 1 || inUse.Processes[0].PID != 4242 {
		t.Errorf("cause = %v, want GPUInUse naming PID 4242", cause)
	}
}

func TestWatchStop(t *testing.T) {
	var procs atomic.Pointer[[]nvml.ProcessInfo]
	var fail atomic.Bool
	procs.Store(&[]nvml.ProcessInfo{})
	ctx, stop := New(changingGPU(&procs, &fail)).Watch(t.Context(), clocktesting.NewFakeClock(time.Unix(0, 0)), gpu, nil, time.Second)
	stop()
	<-ctx.Done()
	if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) || errors.Is(cause, ErrGPUInUse) {
		t.Errorf("cause after stop = %v, want context.Canceled", cause)
	}
}
