// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kquant/kquant/agent/simulate"
)

// Device is one simulated GPU, or MIG device, as the plugin advertises it.
type Device struct {
	// Index is the GPU's index on the node, as NVML would number it (the
	// parent's for a MIG device).
	Index int
	// UUID is the device ID the kubelet sees: simulate.UUID(node, Index), or
	// simulate.MIGUUID for a MIG device.
	UUID string
	// Product is the simulated model.
	Product simulate.Product
	// MIGProfile is a MIG device's profile ("2g.20gb"); empty for a GPU.
	MIGProfile string
}

// Devices lists the whole GPUs of a simulated node in index order, with the
// UUIDs the agent's simulate mode gives them. As under NVIDIA's mixed MIG
// strategy, a MIG-enabled GPU is not among them: only its MIG devices are
// advertised (MIGDevices).
func Devices(nodeName string, spec simulate.Spec) []Device {
	products := spec.Products()
	out := make([]Device, 0, len(products))
	for i, p := range products {
		if !p.MIGEnabled {
			out = append(out, Device{Index: i, UUID: simulate.UUID(nodeName, i), Product: p})
		}
	}
	return out
}

// MIGDevices lists the MIG devices of a simulated node's MIG-enabled GPUs by
// profile, each list in index then slot order: what the mixed strategy
// advertises as nvidia.com/mig-<profile>.
func MIGDevices(nodeName string, spec simulate.Spec) map[string][]Device {
	out := map[string][]Device{}
	for i, p := range spec.Products() {
		for _, m := range simulate.MIGSlices(nodeName, i, p) {
			out[m.Profile] = append(out[m.Profile], Device{Index: i, UUID: m.UUID, Product: p, MIGProfile: m.Profile})
		}
	}
	return out
}

// ParseDeviceList reads a list of GPUs, one per line, each a UUID or an
// index; blank lines and lines starting with # are ignored. It returns the
// UUIDs it names, and an error for an entry that names no device.
func ParseDeviceList(data []byte, devices []Device) (map[string]bool, error) {
	out := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		entry := strings.TrimSpace(sc.Text())
		if entry == "" || strings.HasPrefix(entry, "#") {
			continue
		}
		uuid, ok := lookupDevice(entry, devices)
		if !ok {
			return nil, fmt.Errorf("device %q: no such GPU (want an index below %d or a UUID)", entry, len(devices))
		}
		out[uuid] = true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading device list: %w", err)
	}
	return out, nil
}

func lookupDevice(entry string, devices []Device) (string, bool) {
	if i, err := strconv.Atoi(entry); err == nil {
		j := slices.IndexFunc(devices, func(d Device) bool { return d.Index == i && d.MIGProfile == "" })
		if j < 0 {
			return "", false
		}
		return devices[j].UUID, true
	}
	i := slices.IndexFunc(devices, func(d Device) bool { return d.UUID == entry })
	if i < 0 {
		return "", false
	}
	return devices[i].UUID, true
}
