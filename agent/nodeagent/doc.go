// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package nodeagent assembles one node agent: discovery (real NVML or a
// simulated node), the GPUNodeProfile with the kubelet's GPU allocations
// (PodResources) and its Lease, the driver upgrade watcher (package
// driverupgrade), which releases NVML while the GPU Operator upgrades the
// node's driver, and, only with in-agent execution (ExecutionNone),
// baselines and the guarded executor of the node's QuantRuns, on one
// controller-runtime manager whose cache holds only this node's runs and
// its Node. With run pods (ExecutionRunPod, the default) the agent is an
// observer: it never creates a CUDA context, so it measures no baselines;
// the profile's backend names the one run pods use.
//
// cmd/agent calls Run once per process; tests and scale simulations call it
// many times in one process, one per simulated node, which is why nothing
// here touches process-wide state except through what Options passes in
// (the metrics registerer in particular).
package nodeagent

// The agent's RBAC, generated into config/rbac/agent_role.yaml. The
// ValidatingAdmissionPolicy in config/policy narrows every write to the
// agent's own node. It emits no events. Nodes are watched only by the
// field selector metadata.name=<own node>, for the GPU Operator's driver
// upgrade label; RBAC cannot narrow list and watch to one name, the
// agent's cache does. ResourceSlices are listed (this
// node's, by field selector) to map DRA devices to GPU UUIDs; runs are
// read and written only with in-agent execution (--execution=None): run
// pods write their own runs with their own service account.
//
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=kquant-system,resources=leases,verbs=get;create;update
// +kubebuilder:rbac:groups=kquant.dev,resources=gpunodeprofiles,verbs=get;create;patch
// +kubebuilder:rbac:groups=kquant.dev,resources=gpunodeprofiles/status;quantruns/status,verbs=get;patch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantruns,verbs=get;list;watch
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceslices,verbs=list
