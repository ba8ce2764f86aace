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

// Device is one simulated GPU as the plugin advertises it.
type Device struct {
	// Index is the GPU's index on the node, as NVML would number it.
	Index int
	// UUID is the device ID the kubelet sees: simulate.UUID(node, Index).
	UUID string
	// Product is the simulated model.
	Product simulate.Product
}

// Devices lists the GPUs of a simulated node in index order, with the UUIDs
// the agent's simulate mode gives them.
func Devices(nodeName string, spec simulate.Spec) []Device {
	products := spec.Products()
	out := make([]Device, 0, len(products))
	for i, p := range products {
		out = append(out, Device{Index: i, UUID: simulate.UUID(nodeName, i), Product: p})
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
		if i < 0 || i >= len(devices) {
			return "", false
		}
		return devices[i].UUID, true
	}
	i := slices.IndexFunc(devices, func(d Device) bool { return d.UUID == entry })
	if i < 0 {
		return "", false
	}
	return devices[i].UUID, true
}
