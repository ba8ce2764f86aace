// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package builders

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/capability"
)

// GPUNodeProfileWrapper builds a GPUNodeProfile.
type GPUNodeProfileWrapper struct{ kquantv1alpha1.GPUNodeProfile }

// MakeGPUNodeProfile starts a profile of node name with no GPUs, simulated, on
// the reference backend and not yet Ready.
func MakeGPUNodeProfile(name string) *GPUNodeProfileWrapper {
	return &GPUNodeProfileWrapper{kquantv1alpha1.GPUNodeProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: kquantv1alpha1.GPUNodeProfileStatus{
			DriverVersion:     "580.65.06",
			CUDADriverVersion: "13.0",
			Backend:           kquantv1alpha1.BackendReference,
			Simulated:         true,
			AgentVersion:      "test",
		},
	}}
}

// GPUs adds count GPUs of product p, with the capabilities an agent reports.
func (w *GPUNodeProfileWrapper) GPUs(p Product, count int) *GPUNodeProfileWrapper {
	for range count {
		i := len(w.Status.GPUs)
		w.Status.GPUs = append(w.Status.GPUs, kquantv1alpha1.GPU{
			Index:             int32(i),
			UUID:              GPUUUID(w.Name, i),
			Product:           p.Name,
			ComputeCapability: p.ComputeCapability,
			Architecture:      p.Architecture,
			MemoryMiB:         p.MemoryMiB,
			MIGMode:           kquantv1alpha1.MIGDisabled,
			Health:            kquantv1alpha1.HealthHealthy,
			Recipes:           Capabilities(p.ComputeCapability),
		})
	}
	w.Status.GPUCount = int32(len(w.Status.GPUs))
	w.Status.Recipes = nodeRecipes(w.Status.GPUs)
	return w
}

// MIG puts GPU index in MIG mode with one MIG device per profile, UUIDs
// MIGUUID(node, index, slot).
func (w *GPUNodeProfileWrapper) MIG(index int, profiles ...string) *GPUNodeProfileWrapper {
	g := &w.Status.GPUs[index]
	g.MIGMode, g.MIGDevices = kquantv1alpha1.MIGEnabled, nil
	for slot, p := range profiles {
		g.MIGDevices = append(g.MIGDevices, kquantv1alpha1.MIGDevice{UUID: MIGUUID(w.Name, index, slot), Profile: p})
	}
	return w
}

// MIGUUID is the UUID the builders give MIG device slot of GPU index on node.
func MIGUUID(node string, index, slot int) string {
	return fmt.Sprintf("MIG-%s-%d-%d", node, index, slot)
}

// FreeSince says every GPU has been free in the kubelet's allocations since t.
func (w *GPUNodeProfileWrapper) FreeSince(t time.Time) *GPUNodeProfileWrapper {
	for i := range w.Status.GPUs {
		w.Status.GPUs[i].Allocations = nil
		w.Status.GPUs[i].FreeSince = &metav1.Time{Time: t}
	}
	return w
}

// HeldBy allocates GPU index to pod namespace/name through the device
// plugin: it is no longer free.
func (w *GPUNodeProfileWrapper) HeldBy(index int, namespace, name string) *GPUNodeProfileWrapper {
	g := &w.Status.GPUs[index]
	g.FreeSince = nil
	g.Allocations = append(g.Allocations, kquantv1alpha1.GPUAllocation{Namespace: namespace, Pod: name,
		Source: kquantv1alpha1.AllocationSourceDevicePlugin, ResourceName: "nvidia.com/gpu"})
	return w
}

// Backend sets the backend the agent reports (the builder's default is the
// reference backend).
func (w *GPUNodeProfileWrapper) Backend(b kquantv1alpha1.Backend) *GPUNodeProfileWrapper {
	w.Status.Backend = b
	return w
}

// Unhealthy marks GPU index as Unhealthy.
func (w *GPUNodeProfileWrapper) Unhealthy(index int) *GPUNodeProfileWrapper {
	w.Status.GPUs[index].Health = kquantv1alpha1.HealthUnhealthy
	w.Status.GPUs[index].HealthMessage = "XID 79: GPU has fallen off the bus"
	return w
}

// Ready sets the Ready condition to True.
func (w *GPUNodeProfileWrapper) Ready() *GPUNodeProfileWrapper {
	return w.condition(metav1.ConditionTrue, "AgentReady", "the agent takes runs")
}

// NotReady sets the Ready condition to False.
func (w *GPUNodeProfileWrapper) NotReady() *GPUNodeProfileWrapper {
	return w.condition(metav1.ConditionFalse, "AgentNotReady", "the agent takes no runs")
}

// DriverUpgrading marks the profile as its agent does while the GPU
// Operator upgrades the node's driver at state: DriverUpgrade True, Ready
// False.
func (w *GPUNodeProfileWrapper) DriverUpgrading(state string) *GPUNodeProfileWrapper {
	w.setCondition(kquantv1alpha1.ConditionDriverUpgrade, metav1.ConditionTrue, "UpgradeInProgress",
		"the GPU Operator's driver upgrade is at "+state+"; the agent has released the driver")
	return w.condition(metav1.ConditionFalse, "DriverUpgrade", "the GPU driver is being upgraded")
}

// DriverUpgradeDone marks the profile as after an upgrade: DriverUpgrade
// False, Ready True.
func (w *GPUNodeProfileWrapper) DriverUpgradeDone() *GPUNodeProfileWrapper {
	w.setCondition(kquantv1alpha1.ConditionDriverUpgrade, metav1.ConditionFalse, "UpgradeDone", "the agent reopened the driver after its upgrade")
	return w.Ready()
}

func (w *GPUNodeProfileWrapper) condition(s metav1.ConditionStatus, reason, msg string) *GPUNodeProfileWrapper {
	w.setCondition(kquantv1alpha1.ConditionReady, s, reason, msg)
	return w
}

func (w *GPUNodeProfileWrapper) setCondition(typ string, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
		Type: typ, Status: s, Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second)),
	})
}

// Obj returns the profile.
func (w *GPUNodeProfileWrapper) Obj() *kquantv1alpha1.GPUNodeProfile { return &w.GPUNodeProfile }

// nodeRecipes is the node's best support per scheme over its GPUs, as the
// agent reports it (capability.Best).
func nodeRecipes(gpus []kquantv1alpha1.GPU) []kquantv1alpha1.RecipeSupport {
	perGPU := make([][]kquantv1alpha1.RecipeSupport, 0, len(gpus))
	for _, g := range gpus {
		perGPU = append(perGPU, g.Recipes)
	}
	return capability.Best(perGPU)
}
