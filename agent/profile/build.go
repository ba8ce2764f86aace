// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kquant/kquant/agent/nvml"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
	"github.com/kquant/kquant/api/v1alpha1/capability"
)

// FieldManager is the agent's field manager for every server-side apply.
const FieldManager = apply.ManagerAgent

// Ready condition reasons.
const (
	// ReasonAgentReady: the agent runs and has at least one GPU to run on.
	ReasonAgentReady = "AgentReady"
	// ReasonNoGPUs: discovery found no GPU, so no run can be bound here.
	ReasonNoGPUs = "NoGPUs"
	// ReasonAgentStopping: the agent is shutting down and takes no new runs.
	ReasonAgentStopping = "AgentStopping"
	// ReasonDriverUpgrade: the node's driver is being upgraded and the agent
	// has released it (Ready False, and the DriverUpgrade condition True).
	ReasonDriverUpgrade = "DriverUpgrade"
)

// DriverUpgrade condition reasons.
const (
	// ReasonUpgradeInProgress: the GPU Operator is upgrading the driver.
	ReasonUpgradeInProgress = "UpgradeInProgress"
	// ReasonUpgradeDone: the agent reopened the driver after an upgrade.
	ReasonUpgradeDone = "UpgradeDone"
)

// Input is everything a profile is built from.
type Input struct {
	Node         *nvml.Node
	Backend      v1alpha1.Backend
	Baselines    *v1alpha1.Baselines
	Simulated    bool
	AgentVersion string
	// Stopping marks the profile not Ready during shutdown.
	Stopping bool
	// DriverUpgrade is the GPU Operator's upgrade state of the node while
	// the agent steps aside for it (say "drain-required"); empty otherwise.
	DriverUpgrade string
	// Now stamps the Ready condition's transition time.
	Now time.Time
	// Previous is the last published status, so that an unchanged Ready
	// condition keeps its transition time.
	Previous *v1alpha1.GPUNodeProfileStatus
	// Allocations are the containers holding each GPU (by UUID), from the
	// kubelet's PodResources API; nil when not read, and then no GPU has a
	// freeSince: without the kubelet's word, idle is not guessed.
	Allocations map[string][]v1alpha1.GPUAllocation
}

// maxAllocations is the API's limit of allocations per GPU.
const maxAllocations = 64

// Build computes the profile status.
func Build(in Input) v1alpha1.GPUNodeProfileStatus {
	node := in.Node
	if node == nil {
		node = &nvml.Node{}
	}
	st := v1alpha1.GPUNodeProfileStatus{
		DriverVersion: node.DriverVersion,
		Backend:       in.Backend,
		Simulated:     in.Simulated,
		Baselines:     in.Baselines,
		AgentVersion:  in.AgentVersion,
		GPUCount:      int32(len(node.GPUs)),
	}
	if !node.CUDADriverVersion.IsZero() {
		st.CUDADriverVersion = node.CUDADriverVersion.String()
	}
	perGPU := make([][]v1alpha1.RecipeSupport, 0, len(node.GPUs))
	for _, g := range node.GPUs {
		gpu := GPU(g, node.CUDADriverVersion)
		if a := in.Allocations[g.UUID]; len(a) > 0 {
			gpu.Allocations = a[:min(len(a), maxAllocations)]
		}
		gpu.FreeSince = freeSince(in, g.UUID)
		st.GPUs = append(st.GPUs, gpu)
		perGPU = append(perGPU, gpu.Recipes)
	}
	if len(perGPU) > 0 {
		st.Recipes = capability.Best(perGPU)
	}
	if in.Previous != nil {
		st.Conditions = append([]metav1.Condition(nil), in.Previous.Conditions...)
	}
	meta.SetStatusCondition(&st.Conditions, readyCondition(in, len(node.GPUs), in.Now))
	if c, ok := driverUpgradeCondition(in, st.Conditions); ok {
		meta.SetStatusCondition(&st.Conditions, c)
	}
	return st
}

// freeSince is when the GPU with uuid was first seen free in the kubelet's
// allocations and has stayed free since: the previous status's time while it
// stays free, now when it has just become free (or the agent has just
// started: what came before is unknown, so idle is counted from the first
// read, never from a guess). Nil while a container holds the GPU (its MIG
// slices and shared replicas are allocations of the GPU) or when the
// allocations are not read.
func freeSince(in Input, uuid string) *metav1.Time {
	if in.Allocations == nil || len(in.Allocations[uuid]) > 0 {
		return nil
	}
	if in.Previous != nil {
		for _, g := range in.Previous.GPUs {
			if g.UUID == uuid && g.FreeSince != nil {
				return g.FreeSince.DeepCopy()
			}
		}
	}
	t := metav1.NewTime(in.Now)
	return &t
}

// driverUpgradeCondition is True during an upgrade and False after one; a
// node that never saw an upgrade gets none (ok false).
func driverUpgradeCondition(in Input, conditions []metav1.Condition) (metav1.Condition, bool) {
	c := metav1.Condition{Type: v1alpha1.ConditionDriverUpgrade, LastTransitionTime: metav1.NewTime(in.Now)}
	switch {
	case in.DriverUpgrade != "":
		c.Status, c.Reason = metav1.ConditionTrue, ReasonUpgradeInProgress
		c.Message = "the GPU Operator's driver upgrade is at " + in.DriverUpgrade + "; the agent has released the driver"
	case meta.FindStatusCondition(conditions, v1alpha1.ConditionDriverUpgrade) != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonUpgradeDone, "the agent reopened the driver after its upgrade"
	default:
		return metav1.Condition{}, false
	}
	return c, true
}

// GPU converts one discovered GPU, with its recipe support.
func GPU(g nvml.GPU, cuda capability.Version) v1alpha1.GPU {
	out := v1alpha1.GPU{
		Index:          int32(g.Index),
		UUID:           g.UUID,
		Product:        g.Product,
		MemoryMiB:      g.MemoryMiB,
		MIGMode:        g.MIGMode,
		MIGModePending: g.MIGModePending,
		MIGDevices:     migDevices(g.MIGDevices),
		Health:         g.Health,
		HealthMessage:  g.HealthMessage,
	}
	if !g.ComputeCapability.IsZero() {
		out.ComputeCapability = g.ComputeCapability.String()
		out.Architecture = capability.Architecture(g.ComputeCapability)
		out.Recipes = capability.ForGPU(g.ComputeCapability, cuda)
	}
	return out
}

// migDevices converts discovered MIG devices; unknown instance IDs (-1)
// stay unset.
func migDevices(ms []nvml.MIGDevice) []v1alpha1.MIGDevice {
	if len(ms) == 0 {
		return nil
	}
	out := make([]v1alpha1.MIGDevice, len(ms))
	for i, m := range ms {
		out[i] = v1alpha1.MIGDevice{UUID: m.UUID, Profile: m.Profile, MemoryMiB: m.MemoryMiB}
		if m.GPUInstanceID >= 0 {
			out[i].GPUInstanceID = new(int32(m.GPUInstanceID))
		}
		if m.ComputeInstanceID >= 0 {
			out[i].ComputeInstanceID = new(int32(m.ComputeInstanceID))
		}
	}
	return out
}

func readyCondition(in Input, gpus int, now time.Time) metav1.Condition {
	c := metav1.Condition{
		Type:               v1alpha1.ConditionReady,
		Status:             metav1.ConditionTrue,
		Reason:             ReasonAgentReady,
		Message:            "the agent takes runs",
		LastTransitionTime: metav1.NewTime(now),
	}
	switch {
	case in.Stopping:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonAgentStopping, "the agent is shutting down"
	case in.DriverUpgrade != "":
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonDriverUpgrade, "the GPU driver is being upgraded"
	case gpus == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonNoGPUs, "discovery found no GPU"
	}
	return c
}
