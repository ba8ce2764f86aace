// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AgentLeasePrefix starts the name of every node agent's Lease,
// kquant-agent-<node>, in the agent's namespace. The agent renews it as the
// kubelet renews its node Lease; the manager reads from it whether the node's
// agent is alive.
const AgentLeasePrefix = "kquant-agent-"

// AgentLeaseName is the name of the Lease that node's agent renews.
func AgentLeaseName(node string) string { return AgentLeasePrefix + node }

// Support is how a GPU supports a recipe.
// +kubebuilder:validation:Enum=Native;Emulated;Unsupported
type Support string

const (
	// SupportNative: the GPU runs the recipe's GEMM natively.
	SupportNative Support = "Native"
	// SupportEmulated: the GPU can quantize and validate the recipe, but has no
	// native GEMM for it.
	SupportEmulated Support = "Emulated"
	// SupportUnsupported: the GPU cannot run the recipe's quantize kernels.
	SupportUnsupported Support = "Unsupported"
)

// Health is a GPU's health as NVML reports it.
// +kubebuilder:validation:Enum=Healthy;Degraded;Unhealthy
type Health string

const (
	// HealthHealthy: no problem reported.
	HealthHealthy Health = "Healthy"
	// HealthDegraded: usable, with something to look at (pending page retirement,
	// high temperature).
	HealthDegraded Health = "Degraded"
	// HealthUnhealthy: not to be scheduled (XID errors, failed row remapping).
	HealthUnhealthy Health = "Unhealthy"
)

// MIGMode is a GPU's Multi-Instance GPU mode.
// +kubebuilder:validation:Enum=Enabled;Disabled;NotSupported
type MIGMode string

const (
	// MIGEnabled: MIG is on.
	MIGEnabled MIGMode = "Enabled"
	// MIGDisabled: MIG is supported and off.
	MIGDisabled MIGMode = "Disabled"
	// MIGNotSupported: the GPU has no MIG.
	MIGNotSupported MIGMode = "NotSupported"
)

// Backend names how an agent runs quantization steps.
// +kubebuilder:validation:Enum=cuda;reference
type Backend string

const (
	// BackendCUDA runs the kernels on the GPU.
	BackendCUDA Backend = "cuda"
	// BackendReference runs the pure-Go reference on the CPU.
	BackendReference Backend = "reference"
)

// RecipeSupport is how a GPU (or a node) supports one recipe scheme.
type RecipeSupport struct {
	// scheme is the recipe scheme.
	// +required
	Scheme Scheme `json:"scheme"`
	// support is Native, Emulated or Unsupported.
	// +required
	Support Support `json:"support"`
	// reason is TransformerEngine's wording of why the scheme is not native.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// GPU is one GPU of a node.
type GPU struct {
	// index is the GPU's NVML index on the node.
	// +required
	// +kubebuilder:validation:Minimum=0
	Index int32 `json:"index"`
	// uuid is the GPU's UUID (GPU-...).
	// +required
	UUID string `json:"uuid"`
	// product is the product name, for example "NVIDIA H100 80GB HBM3".
	// +optional
	Product string `json:"product,omitempty"`
	// computeCapability is "major.minor", for example "9.0".
	// +optional
	ComputeCapability string `json:"computeCapability,omitempty"`
	// architecture is the family derived from the compute capability.
	// +optional
	Architecture Architecture `json:"architecture,omitempty"`
	// memoryMiB is the GPU's total memory in MiB.
	// +optional
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
	// migMode is Enabled, Disabled or NotSupported: the GPU's current MIG
	// mode. A MIG-enabled GPU is never used as a whole GPU; a job that sets
	// spec.placement.migSlices: Include runs on its MIG devices (migDevices).
	// +optional
	MIGMode MIGMode `json:"migMode,omitempty"`
	// migModePending is the MIG mode the GPU takes at its next reset, when it
	// differs from migMode; empty otherwise.
	// +optional
	MIGModePending MIGMode `json:"migModePending,omitempty"`
	// migDevices are the MIG devices (slices) of a MIG-enabled GPU, as NVML
	// lists them; empty when MIG is off or no GPU instance exists.
	// +optional
	// +listType=map
	// +listMapKey=uuid
	// +kubebuilder:validation:MaxItems=16
	MIGDevices []MIGDevice `json:"migDevices,omitempty"`
	// health is Healthy, Degraded or Unhealthy.
	// +optional
	Health Health `json:"health,omitempty"`
	// healthMessage says why the GPU is not Healthy.
	// +optional
	HealthMessage string `json:"healthMessage,omitempty"`
	// recipes is this GPU's support of each scheme.
	// +optional
	// +listType=map
	// +listMapKey=scheme
	// +kubebuilder:validation:MaxItems=16
	Recipes []RecipeSupport `json:"recipes,omitempty"`
	// allocations are the containers the kubelet has allocated this GPU (or a
	// MIG slice or shared replica of it) to, as its PodResources API reports
	// them; empty when the GPU is free. The controller binds no run to a GPU
	// that another pod holds.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Allocations []GPUAllocation `json:"allocations,omitempty"`
	// freeSince is when the agent first saw this GPU free in the kubelet's
	// PodResources List (no container holds it, nor a MIG slice, a shared
	// replica or a DRA claim of it) after it was held, or after the agent
	// started: the GPU has been idle at least since then. Unset while a
	// container holds the GPU, and on a node whose agent does not read the
	// kubelet's allocations (idle is never guessed). A QuantGatePolicy's
	// spec.idleValidation reads it.
	// +optional
	FreeSince *metav1.Time `json:"freeSince,omitempty"`
}

// MIGDevice is one MIG device (a slice: a compute instance of a GPU
// instance) of a MIG-enabled GPU.
type MIGDevice struct {
	// uuid is the MIG device's UUID (MIG-...).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	UUID string `json:"uuid"`
	// gpuInstanceID is the ID of its GPU instance on the parent GPU.
	// +optional
	// +kubebuilder:validation:Minimum=0
	GPUInstanceID *int32 `json:"gpuInstanceID,omitempty"`
	// computeInstanceID is the ID of its compute instance in the GPU instance.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ComputeInstanceID *int32 `json:"computeInstanceID,omitempty"`
	// profile is its MIG profile as NVIDIA's device plugin names it
	// ("1g.10gb", "1c.2g.20gb"): the device plugin's mixed strategy
	// advertises it as the resource nvidia.com/mig-<profile>.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Profile string `json:"profile,omitempty"`
	// memoryMiB is its memory in MiB.
	// +optional
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
}

// AllocationSource says how the kubelet allocated a GPU to a container.
// +kubebuilder:validation:Enum=DevicePlugin;DRA
type AllocationSource string

const (
	// AllocationSourceDevicePlugin: a device-plugin resource (nvidia.com/gpu,
	// nvidia.com/mig-<profile>) in the container's limits.
	AllocationSourceDevicePlugin AllocationSource = "DevicePlugin"
	// AllocationSourceDRA: a device of a DRA ResourceClaim.
	AllocationSourceDRA AllocationSource = "DRA"
)

// GPUAllocation is one container that holds a GPU, in the words of the
// kubelet's PodResources API.
type GPUAllocation struct {
	// namespace is the pod's namespace.
	// +required
	Namespace string `json:"namespace"`
	// pod is the pod's name.
	// +required
	Pod string `json:"pod"`
	// container is the container's name.
	// +optional
	Container string `json:"container,omitempty"`
	// source is DevicePlugin or DRA.
	// +required
	Source AllocationSource `json:"source"`
	// resourceName is the device-plugin resource (nvidia.com/gpu, ...) or the
	// DRA driver.
	// +optional
	ResourceName string `json:"resourceName,omitempty"`
	// claim is the DRA ResourceClaim as namespace/name; empty for the device plugin.
	// +optional
	Claim string `json:"claim,omitempty"`
	// migDevice is the MIG device the container holds, by its UUID (MIG-...)
	// when the agent could resolve it, else as the kubelet named it; empty
	// for a whole GPU.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	MIGDevice string `json:"migDevice,omitempty"`
	// shared is true when the allocation is a MIG slice or a time-slicing or
	// MPS replica: other containers may hold the same GPU.
	// +optional
	Shared bool `json:"shared,omitempty"`
}

// Baselines are a node's reference costs: measured by the agent when it
// starts with in-agent execution, by each run pod after its run otherwise.
type Baselines struct {
	// launchMicros is the host time of one empty kernel launch, in microseconds.
	// +optional
	LaunchMicros string `json:"launchMicros,omitempty"`
	// graphLaunchMicros is the host time of one single-node graph launch, in microseconds.
	// +optional
	GraphLaunchMicros string `json:"graphLaunchMicros,omitempty"`
	// copyBandwidthGBps is the device-to-device copy bandwidth (median of several runs).
	// +optional
	CopyBandwidthGBps string `json:"copyBandwidthGBps,omitempty"`
	// peakBandwidthGBps is the device memory's theoretical bandwidth, from the
	// memory clock and bus width the driver reports.
	// +optional
	PeakBandwidthGBps string `json:"peakBandwidthGBps,omitempty"`
}

// GPUNodeProfileStatus is what a node's agent found on its node.
type GPUNodeProfileStatus struct {
	// observedGeneration is the generation that this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// gpus lists the node's GPUs, one entry each, never collapsed by model.
	// +optional
	// +listType=map
	// +listMapKey=index
	// +kubebuilder:validation:MaxItems=64
	GPUs []GPU `json:"gpus,omitempty"`
	// gpuCount is the number of GPUs.
	// +optional
	GPUCount int32 `json:"gpuCount,omitempty"`
	// driverVersion is the NVIDIA driver version.
	// +optional
	DriverVersion string `json:"driverVersion,omitempty"`
	// cudaDriverVersion is the CUDA version the driver supports, for example "13.0".
	// +optional
	CUDADriverVersion string `json:"cudaDriverVersion,omitempty"`
	// backend is how the agent runs steps: cuda or reference.
	// +optional
	Backend Backend `json:"backend,omitempty"`
	// simulated is true for an agent that simulates its GPUs (tests, demos).
	// +optional
	Simulated bool `json:"simulated,omitempty"`
	// recipes is the node's best support of each scheme over its GPUs.
	// +optional
	// +listType=map
	// +listMapKey=scheme
	// +kubebuilder:validation:MaxItems=16
	Recipes []RecipeSupport `json:"recipes,omitempty"`
	// baselines are the node's measured reference costs: with run pods, those
	// of the node's latest run that measured them (results.baselines); with
	// in-agent execution, the agent's own at start.
	// +optional
	Baselines *Baselines `json:"baselines,omitempty"`
	// agentVersion is the version of the agent that wrote this profile.
	// +optional
	AgentVersion string `json:"agentVersion,omitempty"`
	// conditions: Ready is True while the agent can take runs; DriverUpgrade
	// is True while the GPU Operator upgrades the node's driver and the agent
	// has released it (see docs/gpu-operator.md).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConditionReady is the Ready condition of QuantRecipe and GPUNodeProfile.
const ConditionReady = "Ready"

// ConditionDriverUpgrade is the GPUNodeProfile condition that is True while
// the node's GPU driver is being upgraded: the agent has let go of the
// driver and the manager places no runs on the node. A profile that never
// saw an upgrade has no such condition.
const ConditionDriverUpgrade = "DriverUpgrade"

// GPUNodeProfile describes the GPUs of one node and what they can run. Its name
// is the node's name; only that node's agent writes it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=gpn,categories=kquant
// +kubebuilder:printcolumn:name="GPUs",type=integer,JSONPath=`.status.gpuCount`
// +kubebuilder:printcolumn:name="Product",type=string,JSONPath=`.status.gpus[0].product`
// +kubebuilder:printcolumn:name="CC",type=string,JSONPath=`.status.gpus[0].computeCapability`
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.status.backend`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Driver",type=string,JSONPath=`.status.driverVersion`,priority=1
// +kubebuilder:printcolumn:name="Copy-GB/s",type=string,JSONPath=`.status.baselines.copyBandwidthGBps`,priority=1
// +kubebuilder:printcolumn:name="Peak-GB/s",type=string,JSONPath=`.status.baselines.peakBandwidthGBps`,priority=1
// +kubebuilder:printcolumn:name="Simulated",type=boolean,JSONPath=`.status.simulated`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GPUNodeProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// status is written by the node's agent.
	// +optional
	Status GPUNodeProfileStatus `json:"status,omitempty"`
}
