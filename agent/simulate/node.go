package simulate

import (
	"crypto/sha256"
	"fmt"
	"sync"

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

	mu sync.Mutex
	// pending holds injected events until NVML's event set hands them out.
	pending []nvml.EventData
}

// NewNode builds the mock library of node nodeName with the GPUs of spec.
func NewNode(nodeName string, spec Spec) *Node {
	n := &Node{}
	for i, p := range spec.Products() {
		n.devices = append(n.devices, newDevice(i, UUID(nodeName, i), p))
	}
	events := &mock.EventSet{
		WaitFunc: n.wait,
		FreeFunc: func() nvml.Return { return nvml.SUCCESS },
	}
	n.lib = &mock.Interface{
		InitFunc:                       func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:                   func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc:     func() (string, nvml.Return) { return DriverVersion, nvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, nvml.Return) { return CUDADriverVersion, nvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, nvml.Return) { return len(n.devices), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(n.devices) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return n.devices[i], nvml.SUCCESS
		},
		EventSetCreateFunc: func() (nvml.EventSet, nvml.Return) { return events, nvml.SUCCESS },
	}
	return n
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

func newDevice(index int, uuid string, p Product) *mock.Device {
	migMode := func() (int, int, nvml.Return) {
		if !p.MIG {
			return 0, 0, nvml.ERROR_NOT_SUPPORTED
		}
		return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS
	}
	return &mock.Device{
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
	}
}
