// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package podresources

import (
	"regexp"
	"strings"
)

// Device-ID prefixes and separators of NVIDIA's device plugin (and GKE's).
const (
	gpuUUIDPrefix = "GPU-"
	migUUIDPrefix = "MIG-"
	// legacyMIGPrefix starts the pre-R470 MIG naming MIG-GPU-<uuid>/<gi>/<ci>.
	legacyMIGPrefix = "MIG-GPU-"
	// replicaSeparator separates a shared GPU's ID from its replica number
	// (time-slicing and MPS): "GPU-<uuid>::3".
	replicaSeparator = "::"
	// gkeVirtualGPUSeparator is GKE's replica separator: "nvidia0/vgpu3".
	gkeVirtualGPUSeparator = "/vgpu"
)

var (
	indexID    = regexp.MustCompile(`^[0-9]+$`)
	indexMIGID = regexp.MustCompile(`^([0-9]+):[0-9]+$`)
	gkeGPUID   = regexp.MustCompile(`^nvidia([0-9]+)(/gi[0-9]+)?$`)
)

// parsedID is what a device-plugin device ID says about the GPU behind it.
type parsedID struct {
	// gpuUUID is the physical GPU's UUID when the ID names it directly.
	gpuUUID string
	// gpuIndex is the physical GPU's NVML index when the ID names it that way.
	gpuIndex string
	// migUUID is a current-style MIG device UUID, whose parent the Inventory knows.
	migUUID string
	// mig is the MIG device as the ID names it; empty for a whole GPU.
	mig string
	// replica is the time-slicing or MPS replica; empty when not shared.
	replica string
}

// parseDeviceID splits a device ID into the parts that name its GPU; ok is
// false for a form it does not know.
func parseDeviceID(id string) (parsedID, bool) {
	var p parsedID
	base := id
	if i := strings.Index(base, replicaSeparator); i >= 0 {
		base, p.replica = base[:i], base[i+len(replicaSeparator):]
	} else if i := strings.Index(base, gkeVirtualGPUSeparator); i >= 0 {
		base, p.replica = base[:i], base[i+len(gkeVirtualGPUSeparator):]
	}
	switch {
	case strings.HasPrefix(base, legacyMIGPrefix):
		// MIG-GPU-<uuid>/<gi>/<ci>: the parent's UUID is in the name.
		parent, _, found := strings.Cut(base[len(migUUIDPrefix):], "/")
		if !found {
			return parsedID{}, false
		}
		p.gpuUUID, p.mig = parent, base
	case strings.HasPrefix(base, migUUIDPrefix):
		p.migUUID, p.mig = base, base
	case strings.HasPrefix(base, gpuUUIDPrefix):
		p.gpuUUID = base
	case indexID.MatchString(base):
		p.gpuIndex = base
	case indexMIGID.MatchString(base):
		p.gpuIndex, p.mig = indexMIGID.FindStringSubmatch(base)[1], base
	case gkeGPUID.MatchString(base):
		m := gkeGPUID.FindStringSubmatch(base)
		p.gpuIndex = m[1]
		if m[2] != "" {
			p.mig = base
		}
	default:
		return parsedID{}, false
	}
	return p, true
}
