// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package podresources reads which GPU the kubelet has allocated to which pod,
// through the kubelet's PodResources API (k8s.io/kubelet/pkg/apis/podresources/v1)
// on its unix socket, DefaultSocket. It is a read-only client, the way
// dcgm-exporter maps GPUs to pods: the agent uses it to publish which GPUs are
// taken and never to take one.
//
// Two calls are read:
//   - List: the devices of every running container, both device-plugin devices
//     (ContainerDevices: a resource name and device IDs) and DRA claims
//     (DynamicResource: driver, pool and device names);
//   - GetAllocatableResources: the device-plugin devices the node can give out;
//   - Get (Reader.Pod, falling back to List where the kubelet lacks it): one
//     pod's devices, to learn which GPU the device plugin gave a run pod.
//
// Device IDs reach the kubelet in whatever form the device plugin chose, so
// they are normalised to the UUID of the physical GPU behind them, following
// dcgm-exporter's rules:
//   - "GPU-<uuid>": a whole GPU (deviceIDStrategy=uuid, the default);
//   - "<index>": a whole GPU by NVML index (deviceIDStrategy=index), resolved
//     through the caller's Inventory;
//   - "MIG-GPU-<uuid>/<gi>/<ci>": a MIG device in the old (pre-R470) naming,
//     whose parent GPU is in the ID itself;
//   - "MIG-<uuid>": a MIG device in the current naming; its parent GPU comes
//     from the Inventory (NVML knows it);
//   - "<index>:<mig index>": a MIG device under deviceIDStrategy=index;
//   - any of the above followed by "::<n>": replica n of a GPU shared by
//     time-slicing or MPS, where "allocated" does not mean "exclusive";
//   - "nvidia<index>/gi<n>" and "nvidia<index>/vgpu<n>": GKE's device plugin.
//
// InventoryFromNVML fills the Inventory's index and MIG tables from NVML.
// DRA devices carry no UUID in PodResources, only (driver, pool, device): the
// Inventory maps them to UUIDs, usually from the node's ResourceSlices
// (DRADevicesFromSlices builds that table, reading the "uuid", "type" and
// "parentUUID" attributes NVIDIA's DRA driver publishes).
//
// A device that cannot be resolved is reported in Snapshot.Unresolved rather
// than failing the read: a partial picture of the node is still worth
// publishing, and the reason tells an operator what to fix.
//
// The socket is root-only and reached through a read-only hostPath mount of
// /var/lib/kubelet/pod-resources; the agent's namespace therefore needs the
// privileged PodSecurity level, as dcgm-exporter's does.
package podresources
