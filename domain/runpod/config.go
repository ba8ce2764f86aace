// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runpod

import (
	"cmp"
	"errors"

	corev1 "k8s.io/api/core/v1"

	"github.com/kquant/kquant/domain/quantrun"
)

// Allocation is how the kubelet gives a run pod its GPU (the chart's
// gpuAllocation value).
type Allocation string

const (
	// AllocationDevicePlugin requests nvidia.com/gpu (or a MIG resource) from
	// the device plugin; the safe default.
	AllocationDevicePlugin Allocation = "DevicePlugin"
	// AllocationDRA pins the run's GPU with a DRA ResourceClaim.
	AllocationDRA Allocation = "DRA"
	// AllocationNone runs in the agent, without a run pod, on nodes drained
	// of other GPU work.
	AllocationNone Allocation = "None"
)

// Defaults of Config.
const (
	// DefaultPriorityClassName is the run pods' PriorityClass.
	DefaultPriorityClassName = "kquant-run"
	// DefaultIdlePriorityClassName is the PriorityClass of idle
	// validations' run pods.
	DefaultIdlePriorityClassName = "kquant-idle-run"
	// DefaultGPUResourceName is the device plugin's whole-GPU resource.
	DefaultGPUResourceName = "nvidia.com/gpu"
	// DefaultMIGResourcePrefix starts the device plugin's MIG resources
	// (mixed strategy): nvidia.com/mig-<profile>.
	DefaultMIGResourcePrefix = "nvidia.com/mig-"
	// DefaultDeviceClassName is NVIDIA's DRA device class for whole GPUs.
	DefaultDeviceClassName = "gpu.nvidia.com"
	// DefaultMIGDeviceClassName is NVIDIA's DRA device class for MIG devices.
	DefaultMIGDeviceClassName = "mig.nvidia.com"
	// DefaultUUIDAttributeDomain is the domain of the uuid attribute that
	// NVIDIA's DRA driver publishes on GPUs and MIG devices alike.
	DefaultUUIDAttributeDomain = "gpu.nvidia.com"
)

// Labels and names on run pods.
const (
	// LabelRun carries the owning QuantRun's name (shortened with a hash when
	// longer than a label value may be).
	LabelRun = "kquant.dev/run"
	// LabelComponent marks run pods among kquant's pods.
	LabelComponent = "app.kubernetes.io/component"
	// ComponentRun is LabelComponent's value on run pods.
	ComponentRun = "run"
	// LabelKueueQueue names a Kueue LocalQueue that admits the pod.
	LabelKueueQueue = quantrun.LabelKueueQueue
	// ContainerName is the run pod's one container.
	ContainerName = "run"
	// claimReference is the pod's name for its DRA claim (and the request's).
	claimReference = "gpu"
)

// ErrNoRunPod is returned by Build for AllocationNone, which runs in the agent.
var ErrNoRunPod = errors.New("allocation None runs in the agent, not in a run pod")

// ErrInvalidInput is wrapped by Build's errors for inputs no pod can be made of.
var ErrInvalidInput = errors.New("invalid run pod input")

// GPU is the GPU a run pod asks for.
type GPU struct {
	// UUID is the GPU's UUID, or the MIG device's for a slice. DRA pins it;
	// the device plugin picks a GPU itself, so there it is informative.
	UUID string
	// MIGProfile is the slice's profile ("1g.10gb") when the GPU is a MIG
	// device; empty for a whole GPU, and for a slice under the device
	// plugin's single MIG strategy, which advertises slices as nvidia.com/gpu.
	MIGProfile string
}

// Config is what the chart decides about run pods.
type Config struct {
	// Allocation is DevicePlugin, DRA or None.
	Allocation Allocation
	// Image is the agent image; the run pod starts it in run mode.
	Image string
	// ImagePullPolicy defaults to IfNotPresent.
	ImagePullPolicy corev1.PullPolicy
	// ImagePullSecrets name Secrets in the run's namespace that the kubelet
	// pulls Image with: run pods live in tenant namespaces, where the chart's
	// own pull secrets do not reach.
	ImagePullSecrets []string
	// ServiceAccountName is the run pods' service account, which an admission
	// policy limits to writing its own QuantRun's status.
	ServiceAccountName string
	// PriorityClassName defaults to DefaultPriorityClassName.
	PriorityClassName string
	// IdlePriorityClassName, the PriorityClass of idle validations' run
	// pods, defaults to DefaultIdlePriorityClassName.
	IdlePriorityClassName string
	// GPUResourceName defaults to DefaultGPUResourceName.
	GPUResourceName string
	// MIGResourcePrefix defaults to DefaultMIGResourcePrefix.
	MIGResourcePrefix string
	// DeviceClassName defaults to DefaultDeviceClassName.
	DeviceClassName string
	// MIGDeviceClassName defaults to DefaultMIGDeviceClassName.
	MIGDeviceClassName string
	// UUIDAttributeDomain defaults to DefaultUUIDAttributeDomain.
	UUIDAttributeDomain string
	// Resources are the container's CPU and memory; the GPU is added to them.
	Resources corev1.ResourceRequirements
	// Tolerations let run pods onto tainted GPU nodes (nvidia.com/gpu:NoSchedule).
	Tolerations []corev1.Toleration
	// KueueQueueName, when set, labels run pods for a Kueue LocalQueue.
	KueueQueueName string
	// ExtraArgs are appended to the run-mode arguments (-v=1, --log-format=json).
	ExtraArgs []string
}

// withDefaults returns c with every empty default filled in.
func (c Config) withDefaults() Config {
	c.ImagePullPolicy = cmp.Or(c.ImagePullPolicy, corev1.PullIfNotPresent)
	c.PriorityClassName = cmp.Or(c.PriorityClassName, DefaultPriorityClassName)
	c.IdlePriorityClassName = cmp.Or(c.IdlePriorityClassName, DefaultIdlePriorityClassName)
	c.GPUResourceName = cmp.Or(c.GPUResourceName, DefaultGPUResourceName)
	c.MIGResourcePrefix = cmp.Or(c.MIGResourcePrefix, DefaultMIGResourcePrefix)
	c.DeviceClassName = cmp.Or(c.DeviceClassName, DefaultDeviceClassName)
	c.MIGDeviceClassName = cmp.Or(c.MIGDeviceClassName, DefaultMIGDeviceClassName)
	c.UUIDAttributeDomain = cmp.Or(c.UUIDAttributeDomain, DefaultUUIDAttributeDomain)
	return c
}
