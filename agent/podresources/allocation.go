// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package podresources

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Defaults for Options.
const (
	// DefaultSocket is the kubelet's PodResources socket.
	DefaultSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"
	// DefaultDRADriver is NVIDIA's DRA driver for GPUs.
	DefaultDRADriver = "gpu.nvidia.com"
	// GPUResourceName is the device plugin's resource for whole GPUs (and for
	// their replicas when sharing does not rename them).
	GPUResourceName = "nvidia.com/gpu"
	// MIGResourcePrefix starts the device plugin's MIG resources under the
	// mixed strategy, nvidia.com/mig-<profile>.
	MIGResourcePrefix = "nvidia.com/mig-"
)

// Source says how the kubelet allocated a device.
type Source string

const (
	// SourceDevicePlugin: a device-plugin resource in the container's limits.
	SourceDevicePlugin Source = "DevicePlugin"
	// SourceDRA: a device of a DRA ResourceClaim.
	SourceDRA Source = "DRA"
)

// Device is one GPU device as the kubelet hands it out, normalised to its
// physical GPU.
type Device struct {
	// GPUUUID is the UUID of the physical GPU (the parent for a MIG device).
	GPUUUID string
	// MIGDevice names the MIG device: its UUID when the Inventory knows it,
	// else as the kubelet reported it; empty for a
	// whole GPU.
	MIGDevice string
	// Replica is the time-slicing or MPS replica (or DRA share ID) when the
	// GPU is shared; empty when the allocation is the whole device.
	Replica string
	// Source says whether a device plugin or DRA allocated it.
	Source Source
	// ResourceName is the device-plugin resource (nvidia.com/gpu, ...) or,
	// for DRA, the driver name.
	ResourceName string
	// DeviceID is the ID as the kubelet reported it; for DRA "<pool>/<device>".
	DeviceID string
}

// Shared reports whether other containers may hold the same GPU: a replica
// of a time-sliced or MPS GPU, or a MIG slice of it.
func (d Device) Shared() bool { return d.Replica != "" || d.MIGDevice != "" }

// Container names the container a device is allocated to.
type Container struct {
	Namespace string
	Pod       string
	Container string
}

// String is namespace/pod/container.
func (c Container) String() string { return c.Namespace + "/" + c.Pod + "/" + c.Container }

// Allocation is a device allocated to a container.
type Allocation struct {
	Device
	Container Container
	// Claim is the DRA ResourceClaim as namespace/name; empty for the device plugin.
	Claim string
}

// Unresolved is a GPU device whose physical GPU could not be told.
type Unresolved struct {
	// Container is empty for an allocatable device.
	Container    Container
	ResourceName string
	DeviceID     string
	// Reason says why, for an operator.
	Reason string
}

// Snapshot is the node's GPU allocations at one List.
type Snapshot struct {
	// Allocations are sorted by GPU UUID, then container, then device ID.
	Allocations []Allocation
	// Unresolved are GPU devices allocated to containers whose GPU is unknown.
	Unresolved []Unresolved
}

// AllocatedTo returns the allocations of the GPU with this UUID, MIG slices
// and replicas included.
func (s Snapshot) AllocatedTo(gpuUUID string) []Allocation {
	var out []Allocation
	for _, a := range s.Allocations {
		if a.GPUUUID == gpuUUID {
			out = append(out, a)
		}
	}
	return out
}

// Allocatable is what the device plugins can give out on the node.
type Allocatable struct {
	// Devices are sorted by GPU UUID, then device ID.
	Devices    []Device
	Unresolved []Unresolved
}

// GPUs returns the UUIDs of the allocatable physical GPUs, sorted, each once.
func (a Allocatable) GPUs() []string {
	var out []string
	for _, d := range a.Devices {
		out = append(out, d.GPUUUID)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// DRAKey names a DRA device the way PodResources reports it.
type DRAKey struct {
	Driver, Pool, Device string
}

// DRADevice is what a ResourceSlice says about a DRA device.
type DRADevice struct {
	// UUID is the device's own UUID: a GPU's, or a MIG device's.
	UUID string
	// ParentUUID is the physical GPU of a MIG device; empty for a whole GPU.
	ParentUUID string
}

// Inventory maps the names a device ID may use to GPU UUIDs. Its tables
// come from NVML (indexes, MIG parents; InventoryFromNVML) and from
// ResourceSlices (DRA; DRADevicesFromSlices). They change with the node, so
// every read takes the inventory of the moment.
type Inventory struct {
	// GPUsByIndex maps an NVML index ("0") to the GPU's UUID.
	GPUsByIndex map[string]string
	// MIGParents maps a MIG device UUID to its GPU's UUID.
	MIGParents map[string]string
	// MIGAliases maps the other names of a MIG device (the pre-R470
	// "MIG-GPU-<uuid>/<gi>/<ci>", the index strategy's "<gpu>:<mig>") to its
	// UUID.
	MIGAliases map[string]string
	// DRADevices maps DRA devices to UUIDs (see DRADevicesFromSlices).
	DRADevices map[DRAKey]DRADevice
}

// Options tune which devices count as GPUs.
type Options struct {
	// ResourceNames are device-plugin resources counted as GPUs besides
	// nvidia.com/gpu and nvidia.com/mig-*: renamed shared resources such as
	// nvidia.com/gpu.shared.
	ResourceNames []string
	// DRADriver is the DRA driver whose devices are GPUs; DefaultDRADriver
	// when empty.
	DRADriver string
}

func (o Options) isGPUResource(name string) bool {
	return name == GPUResourceName || strings.HasPrefix(name, MIGResourcePrefix) ||
		slices.Contains(o.ResourceNames, name)
}

func (o Options) draDriver() string { return cmp.Or(o.DRADriver, DefaultDRADriver) }

// devicePluginGPUs resolves the device IDs of one device-plugin resource
// to GPUs, and returns those it cannot resolve (without a container) with
// the reason; nothing for a resource that is not a GPU's.
func (o Options) devicePluginGPUs(devs *podresourcesv1.ContainerDevices, inv Inventory) (found []Device, unresolved []Unresolved) {
	if !o.isGPUResource(devs.GetResourceName()) {
		return nil, nil
	}
	for _, id := range devs.GetDeviceIds() {
		d, reason := resolveDevicePluginID(devs.GetResourceName(), id, inv)
		if reason != "" {
			unresolved = append(unresolved, Unresolved{ResourceName: devs.GetResourceName(), DeviceID: id, Reason: reason})
			continue
		}
		found = append(found, d)
	}
	return found, unresolved
}

// FromList normalises a List response into a Snapshot.
func FromList(resp *podresourcesv1.ListPodResourcesResponse, inv Inventory, opts Options) Snapshot {
	var s Snapshot
	for _, pod := range resp.GetPodResources() {
		for _, ctr := range pod.GetContainers() {
			owner := Container{Namespace: pod.GetNamespace(), Pod: pod.GetName(), Container: ctr.GetName()}
			for _, devs := range ctr.GetDevices() {
				found, unresolved := opts.devicePluginGPUs(devs, inv)
				for _, d := range found {
					s.Allocations = append(s.Allocations, Allocation{Device: d, Container: owner})
				}
				for _, u := range unresolved {
					u.Container = owner
					s.Unresolved = append(s.Unresolved, u)
				}
			}
			for _, claim := range ctr.GetDynamicResources() {
				claimName := claim.GetClaimNamespace() + "/" + claim.GetClaimName()
				for _, res := range claim.GetClaimResources() {
					if res.GetDriverName() != opts.draDriver() {
						continue
					}
					d, reason := resolveDRADevice(res, inv)
					if reason != "" {
						s.Unresolved = append(s.Unresolved, Unresolved{Container: owner,
							ResourceName: res.GetDriverName(), DeviceID: d.DeviceID, Reason: reason})
						continue
					}
					s.Allocations = append(s.Allocations, Allocation{Device: d, Container: owner, Claim: claimName})
				}
			}
		}
	}
	slices.SortFunc(s.Allocations, func(a, b Allocation) int {
		return cmp.Or(cmp.Compare(a.GPUUUID, b.GPUUUID), cmp.Compare(a.Container.String(), b.Container.String()),
			cmp.Compare(a.DeviceID, b.DeviceID))
	})
	return s
}

// FromAllocatable normalises a GetAllocatableResources response. DRA devices
// are not in it (the kubelet reports only device-plugin devices there); the
// ResourceSlices list those.
func FromAllocatable(resp *podresourcesv1.AllocatableResourcesResponse, inv Inventory, opts Options) Allocatable {
	var a Allocatable
	for _, devs := range resp.GetDevices() {
		found, unresolved := opts.devicePluginGPUs(devs, inv)
		a.Devices = append(a.Devices, found...)
		a.Unresolved = append(a.Unresolved, unresolved...)
	}
	slices.SortFunc(a.Devices, func(x, y Device) int {
		return cmp.Or(cmp.Compare(x.GPUUUID, y.GPUUUID), cmp.Compare(x.DeviceID, y.DeviceID))
	})
	return a
}

// resolveDevicePluginID returns the device, or a reason why its GPU is unknown.
func resolveDevicePluginID(resourceName, id string, inv Inventory) (Device, string) {
	d := Device{Source: SourceDevicePlugin, ResourceName: resourceName, DeviceID: id}
	p, ok := parseDeviceID(id)
	if !ok {
		return d, fmt.Sprintf("device ID %q has no known GPU naming", id)
	}
	d.MIGDevice, d.Replica = p.mig, p.replica
	switch {
	case p.gpuUUID != "":
		d.GPUUUID = p.gpuUUID
	case p.gpuIndex != "":
		uuid, ok := inv.GPUsByIndex[p.gpuIndex]
		if !ok {
			return d, fmt.Sprintf("no GPU with index %s on this node", p.gpuIndex)
		}
		d.GPUUUID = uuid
	case p.migUUID != "":
		uuid, ok := inv.MIGParents[p.migUUID]
		if !ok {
			return d, fmt.Sprintf("no GPU holds MIG device %s", p.migUUID)
		}
		d.GPUUUID = uuid
	}
	// Name the MIG device by its UUID where the node knows it, so that the
	// profile says which slice is whose whatever the plugin's ID strategy.
	if d.MIGDevice != "" && p.migUUID == "" {
		if uuid, ok := inv.MIGAliases[d.MIGDevice]; ok {
			d.MIGDevice = uuid
		}
	}
	return d, ""
}

// resolveDRADevice returns the device, or a reason why its GPU is unknown.
func resolveDRADevice(res *podresourcesv1.ClaimResource, inv Inventory) (Device, string) {
	d := Device{Source: SourceDRA, ResourceName: res.GetDriverName(),
		DeviceID: res.GetPoolName() + "/" + res.GetDeviceName(), Replica: res.GetShareId()}
	slice, ok := inv.DRADevices[DRAKey{Driver: res.GetDriverName(), Pool: res.GetPoolName(), Device: res.GetDeviceName()}]
	if !ok || slice.UUID == "" {
		return d, fmt.Sprintf("no ResourceSlice of driver %s names a UUID for device %s", res.GetDriverName(), d.DeviceID)
	}
	if slice.ParentUUID != "" {
		d.GPUUUID, d.MIGDevice = slice.ParentUUID, slice.UUID
	} else {
		d.GPUUUID = slice.UUID
	}
	return d, ""
}
