// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package simulate

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// Driver and CUDA versions every simulated node reports: a current
// production branch, new enough for every CUDA gate in the capability rules.
const (
	DriverVersion     = "580.95.05"
	CUDADriverVersion = 13000
	// idleTemperatureC and slowdownC make simulated GPUs cool and healthy.
	idleTemperatureC = 34
	slowdownC        = 87
)

// Node is a simulated node's NVML library.
type Node struct {
	lib     *mock.Interface
	devices []*mock.Device
	// gpus are the node's GPUs as specified, for views (Only).
	gpus []gpu
	// migs are the visible MIG devices by UUID, for DeviceGetHandleByUUID.
	migs map[string]*mock.Device

	mu sync.Mutex
	// pending holds injected events until NVML's event set hands them out.
	pending []nvml.EventData
	// processes are the compute processes on each GPU, by UUID.
	processes map[string][]nvml.ProcessInfo
	// driverVersion is what NVML reports; DriverVersion until
	// SetDriverVersion (a simulated driver upgrade).
	driverVersion string
	// share is the node an Only view was made from; its lock guards processes.
	share *Node

	// inits counts Init calls not yet matched by Shutdown, and eventSets the
	// event sets created and not freed: what a real driver would see as the
	// process's open handles (OpenHandles).
	inits, eventSets atomic.Int64
}

// gpu is one simulated GPU as specified.
type gpu struct {
	index   int
	uuid    string
	product Product
	migs    []MIGSlice
}

// NewNode builds the mock library of node nodeName with the GPUs of spec.
func NewNode(nodeName string, spec Spec) *Node {
	n := &Node{processes: map[string][]nvml.ProcessInfo{}, driverVersion: DriverVersion}
	for i, p := range spec.Products() {
		n.gpus = append(n.gpus, gpu{index: i, uuid: UUID(nodeName, i), product: p, migs: MIGSlices(nodeName, i, p)})
	}
	n.addDevices(func(string) bool { return true })
	n.build()
	return n
}

// addDevices makes the handles of n.gpus, with the MIG devices visible
// says.
func (n *Node) addDevices(visible func(migUUID string) bool) {
	n.migs = map[string]*mock.Device{}
	for _, g := range n.gpus {
		n.devices = append(n.devices, n.newDevice(g, visible))
	}
}

// Only returns the node as a container given the GPUs or MIG devices with
// these UUIDs sees it: those GPUs alone, numbered from 0 in the node's order
// (what a device plugin or DRA driver gives a run pod), a MIG device's
// parent showing that MIG device alone, sharing this node's process lists.
// False when a UUID names no GPU or MIG device of the node.
func (n *Node) Only(uuids ...string) (*Node, bool) {
	only := &Node{processes: n.processes, share: n, driverVersion: n.driverVersion}
	found := 0
	for _, g := range n.gpus {
		whole := slices.Contains(uuids, g.uuid)
		migs := 0
		for _, m := range g.migs {
			if slices.Contains(uuids, m.UUID) {
				migs++
			}
		}
		if whole || migs > 0 {
			only.gpus = append(only.gpus, g)
			found += migs
			if whole {
				found++
			}
		}
	}
	if found != len(uuids) {
		return nil, false
	}
	only.addDevices(func(u string) bool { return slices.Contains(uuids, u) })
	only.build()
	return only, true
}

// SetProcesses sets the compute processes NVML reports on the GPU with this
// UUID (none when pids is empty), as if other containers used it.
func (n *Node) SetProcesses(uuid string, pids ...uint32) {
	owner := n.owner()
	owner.mu.Lock()
	defer owner.mu.Unlock()
	infos := make([]nvml.ProcessInfo, 0, len(pids))
	for _, pid := range pids {
		infos = append(infos, nvml.ProcessInfo{Pid: pid, UsedGpuMemory: 1 << 30})
	}
	n.processes[uuid] = infos
}

// owner is the node whose lock guards the process lists.
func (n *Node) owner() *Node {
	if n.share != nil {
		return n.share
	}
	return n
}

func (n *Node) computeProcesses(uuid string) ([]nvml.ProcessInfo, nvml.Return) {
	owner := n.owner()
	owner.mu.Lock()
	defer owner.mu.Unlock()
	return append([]nvml.ProcessInfo{}, n.processes[uuid]...), nvml.SUCCESS
}

func (n *Node) build() {
	n.lib = &mock.Interface{
		InitFunc: func() nvml.Return {
			n.inits.Add(1)
			return nvml.SUCCESS
		},
		ShutdownFunc: func() nvml.Return {
			// A Shutdown without a matching Init fails, as NVML's does.
			if n.inits.Add(-1) < 0 {
				n.inits.Add(1)
				return nvml.ERROR_UNINITIALIZED
			}
			return nvml.SUCCESS
		},
		SystemGetDriverVersionFunc: func() (string, nvml.Return) {
			n.mu.Lock()
			defer n.mu.Unlock()
			return n.driverVersion, nvml.SUCCESS
		},
		SystemGetCudaDriverVersionFunc: func() (int, nvml.Return) { return CUDADriverVersion, nvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, nvml.Return) { return len(n.devices), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(n.devices) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return n.devices[i], nvml.SUCCESS
		},
		DeviceGetHandleByUUIDFunc: func(uuid string) (nvml.Device, nvml.Return) {
			for _, d := range n.devices {
				if u, _ := d.GetUUID(); u == uuid {
					return d, nvml.SUCCESS
				}
			}
			if m, ok := n.migs[uuid]; ok {
				return m, nvml.SUCCESS
			}
			return nil, nvml.ERROR_NOT_FOUND
		},
		EventSetCreateFunc: func() (nvml.EventSet, nvml.Return) {
			n.eventSets.Add(1)
			var freed atomic.Bool
			return &mock.EventSet{
				WaitFunc: n.wait,
				FreeFunc: func() nvml.Return {
					if freed.Swap(true) {
						return nvml.ERROR_INVALID_ARGUMENT
					}
					n.eventSets.Add(-1)
					return nvml.SUCCESS
				},
			}, nvml.SUCCESS
		},
	}
}

// SetDriverVersion makes NVML report version from now on, as a driver
// upgrade would.
func (n *Node) SetDriverVersion(version string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.driverVersion = version
}

// OpenHandles is how many handles to the simulated driver are open: NVML
// initialisations not yet shut down plus event sets not yet freed. A real
// driver can be unloaded only when every process's count is 0, which is
// what a driver upgrade waits for.
func (n *Node) OpenHandles() int {
	return int(n.inits.Load() + n.eventSets.Load())
}

// Library is the node's NVML, for nvml.Open.
func (n *Node) Library() nvml.Interface { return n.lib }

// InjectXID queues an XID critical error on GPU index, as the driver would
// report it, for health tests.
func (n *Node) InjectXID(index int, xid uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pending = append(n.pending, nvml.EventData{
		Device:    n.devices[index],
		EventType: nvml.EventTypeXidCriticalError,
		EventData: xid,
	})
}

// wait hands out one queued event; it never blocks, which a zero-timeout
// caller cannot tell from a real driver with an empty queue.
func (n *Node) wait(uint32) (nvml.EventData, nvml.Return) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.pending) == 0 {
		return nvml.EventData{}, nvml.ERROR_TIMEOUT
	}
	ev := n.pending[0]
	n.pending = n.pending[1:]
	return ev, nvml.SUCCESS
}

// UUID is the stable UUID of GPU index on a simulated node.
func UUID(nodeName string, index int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "kquant-simulated/%s/%d", nodeName, index))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}

// newDevice is the NVML handle of g; with MIG on, its MIG devices that
// visible admits are listed in their slots.
func (n *Node) newDevice(g gpu, visible func(migUUID string) bool) *mock.Device {
	index, uuid, p := g.index, g.uuid, g.product
	migMode := func() (int, int, nvml.Return) {
		switch {
		case !p.MIG:
			return 0, 0, nvml.ERROR_NOT_SUPPORTED
		case p.MIGEnabled:
			return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
		}
		return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS
	}
	dev := &mock.Device{}
	slots := make([]nvml.Device, len(g.migs))
	for i, m := range g.migs {
		if visible(m.UUID) {
			md := n.newMIGDevice(dev, m)
			slots[i], n.migs[m.UUID] = md, md
		}
	}
	*dev = mock.Device{
		GetMaxMigDeviceCountFunc: func() (int, nvml.Return) {
			if !p.MIG {
				return 0, nvml.ERROR_NOT_SUPPORTED
			}
			return maxMIGDevices, nvml.SUCCESS
		},
		GetMigDeviceHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(slots) || slots[i] == nil {
				return nil, nvml.ERROR_NOT_FOUND
			}
			return slots[i], nvml.SUCCESS
		},
		GetIndexFunc: func() (int, nvml.Return) { return index, nvml.SUCCESS },
		GetUUIDFunc:  func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
		GetNameFunc:  func() (string, nvml.Return) { return p.Name, nvml.SUCCESS },
		GetCudaComputeCapabilityFunc: func() (int, int, nvml.Return) {
			return p.ComputeCapability.Major, p.ComputeCapability.Minor, nvml.SUCCESS
		},
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			total := uint64(p.MemoryMiB) << 20
			return nvml.Memory{Total: total, Free: total}, nvml.SUCCESS
		},
		GetMigModeFunc: migMode,
		GetRemappedRowsFunc: func() (int, int, bool, bool, nvml.Return) {
			return 0, 0, false, false, nvml.SUCCESS
		},
		GetRetiredPagesPendingStatusFunc: func() (nvml.EnableState, nvml.Return) {
			return nvml.FEATURE_DISABLED, nvml.SUCCESS
		},
		GetTemperatureFunc: func(nvml.TemperatureSensors) (uint32, nvml.Return) {
			return idleTemperatureC, nvml.SUCCESS
		},
		GetTemperatureThresholdFunc: func(nvml.TemperatureThresholds) (uint32, nvml.Return) {
			return slowdownC, nvml.SUCCESS
		},
		GetSupportedEventTypesFunc: func() (uint64, nvml.Return) {
			return nvml.EventTypeXidCriticalError, nvml.SUCCESS
		},
		RegisterEventsFunc: func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS },
		GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
			return n.computeProcesses(uuid)
		},
		GetMPSComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED },
		GetGraphicsRunningProcessesFunc:   func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED },
	}
	return dev
}
