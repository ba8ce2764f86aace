// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nvml

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/capability"
	"github.com/kquant/kquant/internal/logging"
)

// applicationXIDs are XIDs caused by user programs, not by the GPU (the
// device plugin's default skip list): a crashing CUDA program must not mark
// the GPU Unhealthy.
var applicationXIDs = map[uint64]bool{
	13:  true, // graphics engine exception
	31:  true, // GPU memory page fault
	43:  true, // GPU stopped processing
	45:  true, // preemptive cleanup after a previous error
	68:  true, // video processor exception
	109: true, // context switch timeout
}

// NVML is the Discoverer backed by a go-nvml Interface.
type NVML struct {
	lib nvml.Interface
	// events is nil where the driver has no XID events (some vGPU and MIG
	// set-ups, mocks without events).
	events nvml.EventSet

	mu sync.Mutex
	// xids remembers the critical XIDs seen per GPU UUID.
	xids map[string][]uint64

	// driver serialises discovery with Release and Reopen, so that no
	// discovery reads a library being shut down.
	driver sync.Mutex
	// released is true between Release and Reopen: the library is shut
	// down and the driver free to be unloaded.
	released bool
}

var _ Releaser = (*NVML)(nil)

// Open initialises lib and registers for XID events on every GPU that
// supports them. The caller must Close it.
func Open(ctx context.Context, lib nvml.Interface) (*NVML, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("initialising NVML: %w", ret)
	}
	n := &NVML{lib: lib, xids: map[string][]uint64{}}
	n.registerXIDEvents(ctx)
	return n, nil
}

// Auto opens the real NVML library, and falls back to Null when it cannot be
// loaded (no driver, no GPU, a container without the library mounted). It
// also returns the library, initialised, for the other readers of NVML (the
// GPU guard, the PodResources resolver); nil with Null.
func Auto(ctx context.Context) (Discoverer, nvml.Interface) {
	lib := nvml.New()
	n, err := Open(ctx, lib)
	if err != nil {
		logging.FromContext(ctx).Info("NVML unavailable, reporting no GPUs", "reason", err.Error())
		return Null{Reason: err.Error()}, nil
	}
	return n, lib
}

// registerXIDEvents is best effort: a GPU without event support is still
// discovered, only without XID health.
func (n *NVML) registerXIDEvents(ctx context.Context) {
	log := logging.FromContext(ctx)
	set, ret := n.lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		log.V(logging.Debug).Info("XID events unavailable", "reason", ret.Error())
		return
	}
	count, ret := n.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		_ = set.Free()
		return
	}
	registered := 0
	for i := range count {
		dev, ret := n.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		supported, ret := dev.GetSupportedEventTypes()
		if ret != nvml.SUCCESS || supported&nvml.EventTypeXidCriticalError == 0 {
			continue
		}
		if ret := dev.RegisterEvents(nvml.EventTypeXidCriticalError, set); ret != nvml.SUCCESS {
			log.V(logging.Debug).Info("XID events not registered", "gpu", i, "reason", ret.Error())
			continue
		}
		registered++
	}
	if registered == 0 {
		_ = set.Free()
		return
	}
	n.events = set
}

// Close frees the event set and shuts NVML down; after Release it does
// nothing more.
func (n *NVML) Close() error {
	return n.Release()
}

// Release lets go of the driver so that it can be unloaded (a GPU Operator
// driver upgrade): it frees the event set and shuts NVML down, which closes
// the process's /dev/nvidia* descriptors once no other Init is outstanding
// (NVML counts them). Discover fails with ErrReleased until Reopen. Calling
// it again does nothing.
func (n *NVML) Release() error {
	n.driver.Lock()
	defer n.driver.Unlock()
	if n.released {
		return nil
	}
	n.released = true
	var errs []error
	if n.events != nil {
		if ret := n.events.Free(); ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("freeing NVML event set: %w", ret))
		}
		n.events = nil
	}
	if ret := n.lib.Shutdown(); ret != nvml.SUCCESS {
		errs = append(errs, fmt.Errorf("shutting NVML down: %w", ret))
	}
	return errors.Join(errs...)
}

// Reopen initialises NVML again after Release, on whatever driver is loaded
// now, and registers for XID events anew. The XIDs seen before are
// forgotten: a reloaded driver starts the GPUs afresh, as the restarted
// device plugin does. Reopening an open library does nothing.
func (n *NVML) Reopen(ctx context.Context) error {
	n.driver.Lock()
	defer n.driver.Unlock()
	if !n.released {
		return nil
	}
	if ret := n.lib.Init(); ret != nvml.SUCCESS {
		return fmt.Errorf("initialising NVML again: %w", ret)
	}
	n.released = false
	n.mu.Lock()
	n.xids = map[string][]uint64{}
	n.mu.Unlock()
	n.registerXIDEvents(ctx)
	return nil
}

// Discover reads the driver and every GPU; ErrReleased between Release and
// Reopen.
func (n *NVML) Discover(ctx context.Context) (*Node, error) {
	n.driver.Lock()
	defer n.driver.Unlock()
	if n.released {
		return nil, ErrReleased
	}
	node := &Node{}
	driver, ret := n.lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("reading driver version: %w", ret)
	}
	node.DriverVersion = driver
	// Unknown CUDA version stays zero, which fails every CUDA gate in the
	// capability rules rather than claiming support.
	if cuda, ret := n.lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		node.CUDADriverVersion = capability.CUDAFromNVML(cuda)
	}
	count, ret := n.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("counting GPUs: %w", ret)
	}
	n.drainXIDs(ctx)
	for i := range count {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("discovering GPU %d: %w", i, err)
		}
		gpu, err := n.gpu(i)
		if err != nil {
			node.Problems = append(node.Problems, err.Error())
			continue
		}
		node.GPUs = append(node.GPUs, gpu)
	}
	return node, nil
}

// gpu reads one device. Only a missing handle or UUID is an error; every
// other unreadable attribute is left empty.
func (n *NVML) gpu(i int) (GPU, error) {
	dev, ret := n.lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		return GPU{}, fmt.Errorf("GPU %d: getting handle: %w", i, ret)
	}
	uuid, ret := dev.GetUUID()
	if ret != nvml.SUCCESS || uuid == "" {
		return GPU{}, fmt.Errorf("GPU %d: reading UUID: %w", i, ret)
	}
	gpu := GPU{Index: i, UUID: uuid, MIGMode: v1alpha1.MIGNotSupported}
	if name, ret := dev.GetName(); ret == nvml.SUCCESS {
		gpu.Product = name
	}
	if major, minor, ret := dev.GetCudaComputeCapability(); ret == nvml.SUCCESS {
		gpu.ComputeCapability = capability.V(major, minor)
	}
	if mem, ret := dev.GetMemoryInfo(); ret == nvml.SUCCESS {
		gpu.MemoryMiB = int64(mem.Total >> 20)
	}
	migErr := readMIG(dev, &gpu)
	gpu.Health, gpu.HealthMessage = n.health(dev, uuid)
	if migErr != nil {
		// The GPU is MIG-enabled but its slices are unknown: none is offered.
		if gpu.Health == v1alpha1.HealthHealthy {
			gpu.Health = v1alpha1.HealthDegraded
		}
		gpu.HealthMessage = strings.TrimPrefix(gpu.HealthMessage+"; MIG devices unreadable: "+migErr.Error(), "; ")
	}
	return gpu, nil
}

// health checks what NVML exposes; NOT_SUPPORTED answers are no evidence
// either way and are skipped.
func (n *NVML) health(dev nvml.Device, uuid string) (v1alpha1.Health, string) {
	var unhealthy, degraded []string
	if xids := n.seenXIDs(uuid); len(xids) > 0 {
		unhealthy = append(unhealthy, fmt.Sprintf("XID critical errors %v", xids))
	}
	if _, _, pending, failed, ret := dev.GetRemappedRows(); ret == nvml.SUCCESS {
		switch {
		case failed:
			unhealthy = append(unhealthy, "row remapping failed")
		case pending:
			degraded = append(degraded, "row remapping pending (reset the GPU)")
		}
	}
	if state, ret := dev.GetRetiredPagesPendingStatus(); ret == nvml.SUCCESS && state == nvml.FEATURE_ENABLED {
		degraded = append(degraded, "retired pages pending (reboot the node)")
	}
	if temp, ret := dev.GetTemperature(nvml.TEMPERATURE_GPU); ret == nvml.SUCCESS {
		if limit, ret := dev.GetTemperatureThreshold(nvml.TEMPERATURE_THRESHOLD_SLOWDOWN); ret == nvml.SUCCESS && limit > 0 && temp >= limit {
			degraded = append(degraded, fmt.Sprintf("temperature %d C at or above slowdown threshold %d C", temp, limit))
		}
	}
	switch {
	case len(unhealthy) > 0:
		return v1alpha1.HealthUnhealthy, strings.Join(append(unhealthy, degraded...), "; ")
	case len(degraded) > 0:
		return v1alpha1.HealthDegraded, strings.Join(degraded, "; ")
	default:
		return v1alpha1.HealthHealthy, ""
	}
}

// drainXIDs collects the events that arrived since the last call without
// blocking: a zero timeout returns ERROR_TIMEOUT when none is queued.
func (n *NVML) drainXIDs(ctx context.Context) {
	if n.events == nil {
		return
	}
	log := logging.FromContext(ctx)
	// Bounded, so that a storm of events cannot stall discovery.
	for range 1024 {
		ev, ret := n.events.Wait(0)
		if ret != nvml.SUCCESS {
			return
		}
		if ev.EventType != nvml.EventTypeXidCriticalError || applicationXIDs[ev.EventData] || ev.Device == nil {
			continue
		}
		uuid, ret := ev.Device.GetUUID()
		if ret != nvml.SUCCESS {
			continue
		}
		log.Info("XID critical error", "gpu", uuid, "xid", ev.EventData)
		n.mu.Lock()
		n.xids[uuid] = append(n.xids[uuid], ev.EventData)
		n.mu.Unlock()
	}
}

func (n *NVML) seenXIDs(uuid string) []uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]uint64(nil), n.xids[uuid]...)
}
