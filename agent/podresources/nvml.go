// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package podresources

import (
	"fmt"
	"strconv"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	kqnvml "github.com/kquant/kquant/agent/nvml"
)

// NVML is the part of go-nvml's Interface that InventoryFromNVML reads;
// nvml.New() and go-nvml's mock.Interface both satisfy it. The caller
// initialises it.
type NVML interface {
	DeviceGetCount() (int, nvml.Return)
	DeviceGetHandleByIndex(index int) (nvml.Device, nvml.Return)
}

// InventoryFromNVML fills an Inventory's index and MIG tables from NVML: each
// GPU's UUID by index, and each MIG device's parent. DRA devices come from
// ResourceSlices (DRADevicesFromSlices), not from NVML.
func InventoryFromNVML(lib NVML) (Inventory, error) {
	inv := Inventory{GPUsByIndex: map[string]string{}, MIGParents: map[string]string{}, MIGAliases: map[string]string{}}
	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return Inventory{}, fmt.Errorf("counting GPUs: %w", ret)
	}
	for i := range count {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return Inventory{}, fmt.Errorf("opening GPU %d: %w", i, ret)
		}
		uuid, ret := dev.GetUUID()
		if ret != nvml.SUCCESS {
			return Inventory{}, fmt.Errorf("reading GPU %d's UUID: %w", i, ret)
		}
		inv.GPUsByIndex[strconv.Itoa(i)] = uuid
		if err := addMIGDevices(&inv, dev, i, uuid); err != nil {
			return Inventory{}, fmt.Errorf("reading GPU %d's MIG devices: %w", i, err)
		}
	}
	return inv, nil
}

// addMIGDevices records the parent and the other names of each MIG device
// of a MIG-enabled GPU; GPUs without MIG, or with it off, add nothing.
func addMIGDevices(inv *Inventory, dev nvml.Device, index int, parentUUID string) error {
	current, _, ret := dev.GetMigMode()
	if ret == nvml.ERROR_NOT_SUPPORTED || (ret == nvml.SUCCESS && current != nvml.DEVICE_MIG_ENABLE) {
		return nil
	}
	if ret != nvml.SUCCESS {
		return ret
	}
	return kqnvml.EachMIGDevice(dev, func(slot int, uuid string, mig nvml.Device) error {
		inv.MIGParents[uuid] = parentUUID
		inv.MIGAliases[fmt.Sprintf("%d:%d", index, slot)] = uuid
		gi, giRet := mig.GetGpuInstanceId()
		ci, ciRet := mig.GetComputeInstanceId()
		if giRet == nvml.SUCCESS && ciRet == nvml.SUCCESS {
			inv.MIGAliases[fmt.Sprintf("MIG-%s/%d/%d", parentUUID, gi, ci)] = uuid
		}
		return nil
	})
}
