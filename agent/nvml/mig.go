// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nvml

import (
	"fmt"
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/kquant/kquant/api/v1alpha1"
)

// MIGDevice is one MIG device (a compute instance of a GPU instance) of a
// MIG-enabled GPU, as NVML lists it on its parent.
type MIGDevice struct {
	UUID string
	// GPUInstanceID and ComputeInstanceID are -1 when NVML does not say.
	GPUInstanceID     int
	ComputeInstanceID int
	// Profile is the device plugin's name of the slice ("1g.10gb"); empty
	// when NVML gives no attributes.
	Profile   string
	MemoryMiB int64
}

// migMode converts an NVML MIG mode.
func migMode(mode int) v1alpha1.MIGMode {
	if mode == nvml.DEVICE_MIG_ENABLE {
		return v1alpha1.MIGEnabled
	}
	return v1alpha1.MIGDisabled
}

// readMIG fills gpu's MIG mode, pending mode and MIG devices. A GPU without
// MIG support stays NotSupported; its MIG devices are read only when MIG is
// on now.
func readMIG(dev nvml.Device, gpu *GPU) error {
	current, pending, ret := dev.GetMigMode()
	if ret != nvml.SUCCESS {
		gpu.MIGMode = v1alpha1.MIGNotSupported
		return nil //nolint:nilerr // a GPU whose MIG mode cannot be read has no MIG: that is the answer, not a failure
	}
	gpu.MIGMode = migMode(current)
	if pending != current {
		gpu.MIGModePending = migMode(pending)
	}
	if gpu.MIGMode != v1alpha1.MIGEnabled {
		return nil
	}
	migs, err := MIGDevices(dev, uint64(gpu.MemoryMiB)<<20)
	if err != nil {
		return err
	}
	gpu.MIGDevices = migs
	return nil
}

// MIGDevices lists the MIG devices of a MIG-enabled GPU in slot order:
// empty slots (no such compute instance) are skipped. parentMemoryBytes is the
// parent GPU's total memory, from which the profile's memory size is named.
// It is an error only when the slots cannot be counted or a listed device
// has no UUID.
func MIGDevices(dev nvml.Device, parentMemoryBytes uint64) ([]MIGDevice, error) {
	var out []MIGDevice
	err := EachMIGDevice(dev, func(_ int, uuid string, mig nvml.Device) error {
		m := MIGDevice{UUID: uuid, GPUInstanceID: -1, ComputeInstanceID: -1}
		if id, ret := mig.GetGpuInstanceId(); ret == nvml.SUCCESS {
			m.GPUInstanceID = id
		}
		if id, ret := mig.GetComputeInstanceId(); ret == nvml.SUCCESS {
			m.ComputeInstanceID = id
		}
		if attrs, ret := mig.GetAttributes(); ret == nvml.SUCCESS {
			m.MemoryMiB = int64(attrs.MemorySizeMB)
			m.Profile = MIGProfileName(attrs.GpuInstanceSliceCount, attrs.ComputeInstanceSliceCount, attrs.MemorySizeMB, parentMemoryBytes)
		}
		out = append(out, m)
		return nil
	})
	return out, err
}

// EachMIGDevice calls fn with the slot, UUID and handle of each MIG device of
// a MIG-enabled GPU, in slot order, skipping empty slots: the one walk over
// NVML's MIG slots, for discovery and for the kubelet's MIG device names.
func EachMIGDevice(dev nvml.Device, fn func(slot int, uuid string, mig nvml.Device) error) error {
	slots, ret := dev.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("counting MIG devices: %w", ret)
	}
	for i := range slots {
		mig, ret := dev.GetMigDeviceHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue // an empty slot
		}
		uuid, ret := mig.GetUUID()
		if ret != nvml.SUCCESS || uuid == "" {
			return fmt.Errorf("MIG device %d: reading UUID: %w", i, ret)
		}
		if err := fn(i, uuid, mig); err != nil {
			return err
		}
	}
	return nil
}

// MIGProfileName names a MIG device as NVIDIA's device plugin (go-nvlib)
// does, and so as the mixed strategy's resource nvidia.com/mig-<name>:
// "<g>g.<gb>gb" when the compute instance spans the whole GPU instance,
// "<c>c.<g>g.<gb>gb" otherwise. The memory is named in GB as a fraction of
// the parent's memory rounded up to eighths (an A100-40GB slice of
// 4864 MiB is "5gb", an H100-80GB one of 9856 MiB "10gb"). Profiles with
// attributes (media extensions, "+me") are not told apart: NVML's device
// attributes do not carry them.
func MIGProfileName(gpuSlices, computeSlices uint32, memoryMiB, parentMemoryBytes uint64) string {
	gb := migMemoryGB(parentMemoryBytes, memoryMiB)
	if computeSlices == 0 || computeSlices == gpuSlices {
		return fmt.Sprintf("%dg.%dgb", gpuSlices, gb)
	}
	return fmt.Sprintf("%dc.%dg.%dgb", computeSlices, gpuSlices, gb)
}

// migMemoryGB is go-nvlib's rounding of a MIG device's memory: its share of
// the parent rounded up to eighths, times the parent's memory in whole GB.
func migMemoryGB(parentBytes, migMiB uint64) uint64 {
	const eighths, mib, gib = 8, 1 << 20, 1 << 30
	if parentBytes == 0 {
		return (migMiB + 1023) / 1024
	}
	frac := float64(migMiB) * mib / float64(parentBytes)
	frac = math.Ceil(frac*eighths) / eighths
	parentGB := float64((parentBytes + gib - 1) / gib)
	return uint64(math.Round(frac * parentGB))
}
