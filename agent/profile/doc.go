// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package profile turns what discovery found into the node's GPUNodeProfile
// and keeps the node's liveness Lease.
//
// Build is a pure function from discovery, backend, baselines and the
// kubelet's GPU allocations to the profile status (per-GPU and node-level
// recipe support, status.gpus[].allocations and freeSince, included: when
// the kubelet's allocations first showed the GPU free, kept from the
// previous status while it stays free). The Reporter
// re-reads health every RefreshInterval and the allocations (its Allocations
// source, the PodResources API) every AllocationInterval, and publishes when
// the status changed; SetBaselines takes the baselines a run pod measured.
// StepAside and Resume bracket a GPU Operator driver upgrade: the profile
// says the node is upgrading (condition DriverUpgrade True, Ready False)
// and keeps the GPUs and driver version last seen while NVML is released,
// then reports what the reopened driver shows. Publisher
// writes it with server-side apply under the field manager "kquant-agent",
// with an owner reference to the Node when the Node exists, so that deleting
// the Node deletes its profile. LeaseKeeper renews the Lease
// kquant-agent-<node> in the agent's namespace, as the kubelet renews its
// node lease (created once, then a plain Update of the held copy per renewal,
// no server-side apply): the controller treats a node whose Lease expired as
// lost.
//
// Verbosity (internal/logging's ladder): Info publishes and failures,
// Debug each Lease renewal.
package profile
