// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package simulate

import (
	"crypto/sha256"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	agentnvml "github.com/kquant/kquant/agent/nvml"
)

// MIGSuffix marks a group of MIG-enabled GPUs in a spec: "A100/mig:1".
const MIGSuffix = "/mig"

// maxMIGDevices is NVML's GetMaxMigDeviceCount on the simulated models.
const maxMIGDevices = 7

// MIGSlice is one MIG device of a simulated MIG-enabled GPU.
type MIGSlice struct {
	UUID              string
	GPUInstanceID     int
	ComputeInstanceID int
	// GPUSlices is the slice count of its GPU instance (its compute instance
	// spans it all).
	GPUSlices int
	MemoryMiB int64
	// Profile is the device plugin's name for it ("3g.40gb").
	Profile string
}

// migLayout is how every simulated MIG-enabled GPU is partitioned: one
// 3-slice instance with half the memory and two 2-slice instances with a
// quarter each (seven compute slices, eight memory eighths, as on an A100 or
// H100), so a node has two profiles and two slices of one of them.
var migLayout = []struct{ gpuSlices, memoryEighths int }{{3, 4}, {2, 2}, {2, 2}}

// MIGSlices lists the MIG devices of GPU index of node nodeName in slot
// order; none unless p is MIG-enabled.
func MIGSlices(nodeName string, index int, p Product) []MIGSlice {
	if !p.MIGEnabled {
		return nil
	}
	out := make([]MIGSlice, len(migLayout))
	for i, l := range migLayout {
		// A little less than the share, as real MIG devices have.
		mem := p.MemoryMiB*int64(l.memoryEighths)/8 - 256
		out[i] = MIGSlice{
			UUID: MIGUUID(nodeName, index, i), GPUInstanceID: i + 1, ComputeInstanceID: 0, GPUSlices: l.gpuSlices, MemoryMiB: mem,
			Profile: agentnvml.MIGProfileName(uint32(l.gpuSlices), uint32(l.gpuSlices), uint64(mem), uint64(p.MemoryMiB)<<20),
		}
	}
	return out
}

// MIGUUID is the stable UUID of MIG device slot of GPU index on a simulated
// node, in the current (R470 and later) MIG-<uuid> form.
func MIGUUID(nodeName string, index, slot int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "kquant-simulated/%s/%d/mig/%d", nodeName, index, slot))
	return fmt.Sprintf("MIG-%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}

// newMIGDevice is the NVML handle of one MIG device of parent.
func (n *Node) newMIGDevice(parent nvml.Device, m MIGSlice) *mock.Device {
	return &mock.Device{
		GetUUIDFunc:              func() (string, nvml.Return) { return m.UUID, nvml.SUCCESS },
		GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return m.GPUInstanceID, nvml.SUCCESS },
		GetComputeInstanceIdFunc: func() (int, nvml.Return) { return m.ComputeInstanceID, nvml.SUCCESS },
		GetAttributesFunc: func() (nvml.DeviceAttributes, nvml.Return) {
			return nvml.DeviceAttributes{GpuInstanceSliceCount: uint32(m.GPUSlices), ComputeInstanceSliceCount: uint32(m.GPUSlices),
				MemorySizeMB: uint64(m.MemoryMiB)}, nvml.SUCCESS
		},
		IsMigDeviceHandleFunc:                  func() (bool, nvml.Return) { return true, nvml.SUCCESS },
		GetDeviceHandleFromMigDeviceHandleFunc: func() (nvml.Device, nvml.Return) { return parent, nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			total := uint64(m.MemoryMiB) << 20
			return nvml.Memory{Total: total, Free: total}, nvml.SUCCESS
		},
		GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
			return n.computeProcesses(m.UUID)
		},
		GetMPSComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED },
		GetGraphicsRunningProcessesFunc:   func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED },
	}
}
