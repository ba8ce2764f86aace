// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package apply

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/kquant/kquant/api/v1alpha1"
	ac "github.com/kquant/kquant/api/v1alpha1/applyconfiguration/api/v1alpha1"
)

// Field managers of kquant's server-side applies.
const (
	// ManagerController is the manager's (the controllers') field manager.
	ManagerController = "kquant-manager"
	// ManagerAgent is the node agent's field manager, for its run status
	// writes and its GPUNodeProfile.
	ManagerAgent = "kquant-agent"
	// ManagerRunPod is a run pod's field manager, for the status of the one
	// QuantRun it executes.
	ManagerRunPod = "kquant-run"
	// ManagerPreflight is a preflight init container's field manager, for
	// the status of the QuantRuns that record its checks.
	ManagerPreflight = "kquant-preflight"
)

// nz returns a pointer to v, or nil when v is zero: an omitempty field.
func nz[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// ptr returns a pointer to v: a field serialised even when zero.
func ptr[T any](v T) *T { return &v }

// copyPtr is a pointer to a copy of *v.
func copyPtr[T any](v *T) *T { return ptr(*v) }

// optional is *v converted by conv; nil for nil (a field left out).
func optional[T, A any](v *T, conv func(*T) *A) *A {
	if v == nil {
		return nil
	}
	return conv(v)
}

// each is every element of vs converted by conv; nil for nil.
func each[T, A any](vs []T, conv func(T) A) []A {
	if vs == nil {
		return nil
	}
	out := make([]A, len(vs))
	for i, v := range vs {
		out[i] = conv(v)
	}
	return out
}

// Time is t as an apply value; nil for nil.
func Time(t *metav1.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	return ptr(*t)
}

// String is s as an omitempty apply value: nil when empty.
func String(s string) *string { return nz(s) }

// Conditions are cs as apply configurations.
func Conditions(cs []metav1.Condition) []metav1ac.ConditionApplyConfiguration {
	return each(cs, func(c metav1.Condition) metav1ac.ConditionApplyConfiguration {
		return metav1ac.ConditionApplyConfiguration{
			Type: ptr(c.Type), Status: ptr(c.Status), ObservedGeneration: nz(c.ObservedGeneration),
			LastTransitionTime: ptr(c.LastTransitionTime), Reason: ptr(c.Reason), Message: ptr(c.Message),
		}
	})
}

// RunResults is r as an apply configuration; nil for nil. Its numbers are
// always derived from r's decimals (v1alpha1.NumbersOf), whatever r.Numbers
// holds, so every writer of results writes matching mirrors.
func RunResults(r *v1alpha1.RunResults) *ac.RunResultsApplyConfiguration {
	return optional(r, runResults)
}

func runResults(r *v1alpha1.RunResults) *ac.RunResultsApplyConfiguration {
	return &ac.RunResultsApplyConfiguration{
		Backend:     nz(r.Backend),
		Usage:       nz(r.Usage),
		Capability:  optional(r.Capability, capability),
		Graph:       optional(r.Graph, graph),
		Overhead:    optional(r.Overhead, overhead),
		Performance: optional(r.Performance, performance),
		Accuracy:    optional(r.Accuracy, accuracy),
		Shapes:      each(r.Shapes, shape),
		Verdict:     nz(r.Verdict),
		Reason:      nz(r.Reason),
		Baselines:   optional(r.Baselines, baselines),
		Numbers:     ResultNumbers(v1alpha1.NumbersOf(r)),
	}
}

func capability(c *v1alpha1.Capability) *ac.CapabilityApplyConfiguration {
	return &ac.CapabilityApplyConfiguration{Native: ptr(c.Native), Emulated: ptr(c.Emulated), Reason: nz(c.Reason)}
}

func graph(g *v1alpha1.GraphResult) *ac.GraphResultApplyConfiguration {
	return &ac.GraphResultApplyConfiguration{Capturable: ptr(g.Capturable), ReplayMatchesEager: ptr(g.ReplayMatchesEager)}
}

func shape(s v1alpha1.ShapeResult) ac.ShapeResultApplyConfiguration {
	return ac.ShapeResultApplyConfiguration{
		Rows: ptr(s.Rows), Cols: ptr(s.Cols), Overhead: optional(s.Overhead, overhead),
		Performance: optional(s.Performance, performance), Accuracy: optional(s.Accuracy, accuracy),
	}
}

// ResultNumbers is n as an apply configuration; nil for nil.
func ResultNumbers(n *v1alpha1.ResultNumbers) *ac.ResultNumbersApplyConfiguration {
	return optional(n, func(n *v1alpha1.ResultNumbers) *ac.ResultNumbersApplyConfiguration {
		return &ac.ResultNumbersApplyConfiguration{
			HostEagerMicros: nz(n.HostEagerMicros), HostGraphMicros: nz(n.HostGraphMicros),
			BandwidthGBps: nz(n.BandwidthGBps), SNRdB: nz(n.SNRdB),
		}
	})
}

func overhead(o *v1alpha1.Overhead) *ac.OverheadApplyConfiguration {
	return &ac.OverheadApplyConfiguration{
		HostEagerMicros: nz(o.HostEagerMicros), HostGraphMicros: nz(o.HostGraphMicros),
		KernelsPerStep: nz(o.KernelsPerStep), PointerLoadMicros: nz(o.PointerLoadMicros),
	}
}

func performance(p *v1alpha1.Performance) *ac.PerformanceApplyConfiguration {
	return &ac.PerformanceApplyConfiguration{
		GPUMicros: nz(p.GPUMicros), BandwidthGBps: nz(p.BandwidthGBps), FractionOfCopyBandwidth: nz(p.FractionOfCopyBandwidth),
		FractionOfPeakBandwidth: nz(p.FractionOfPeakBandwidth),
	}
}

func accuracy(a *v1alpha1.Accuracy) *ac.AccuracyApplyConfiguration {
	return &ac.AccuracyApplyConfiguration{
		BitExactVsReference: optional(a.BitExactVsReference, func(b *bool) *bool { return ptr(*b) }),
		SNRdB:               nz(a.SNRdB), MaxAbsError: nz(a.MaxAbsError), Saturated: nz(a.Saturated), FlushedToZero: nz(a.FlushedToZero),
	}
}

// gpuNodeProfileStatus is s as an apply configuration.
func gpuNodeProfileStatus(s *v1alpha1.GPUNodeProfileStatus) *ac.GPUNodeProfileStatusApplyConfiguration {
	return &ac.GPUNodeProfileStatusApplyConfiguration{
		ObservedGeneration: nz(s.ObservedGeneration),
		GPUCount:           nz(s.GPUCount),
		GPUs:               each(s.GPUs, gpu),
		DriverVersion:      nz(s.DriverVersion),
		CUDADriverVersion:  nz(s.CUDADriverVersion),
		Backend:            nz(s.Backend),
		Simulated:          nz(s.Simulated),
		Recipes:            each(s.Recipes, recipe),
		Baselines:          optional(s.Baselines, baselines),
		AgentVersion:       nz(s.AgentVersion),
		Conditions:         Conditions(s.Conditions),
	}
}

func gpu(g v1alpha1.GPU) ac.GPUApplyConfiguration {
	return ac.GPUApplyConfiguration{
		Index: ptr(g.Index), UUID: ptr(g.UUID), Product: nz(g.Product), ComputeCapability: nz(g.ComputeCapability),
		Architecture: nz(g.Architecture), MemoryMiB: nz(g.MemoryMiB), MIGMode: nz(g.MIGMode),
		MIGModePending: nz(g.MIGModePending), MIGDevices: each(g.MIGDevices, migDevice),
		Health: nz(g.Health), HealthMessage: nz(g.HealthMessage), Recipes: each(g.Recipes, recipe),
		Allocations: each(g.Allocations, allocation), FreeSince: Time(g.FreeSince),
	}
}

func baselines(b *v1alpha1.Baselines) *ac.BaselinesApplyConfiguration {
	return &ac.BaselinesApplyConfiguration{
		LaunchMicros: nz(b.LaunchMicros), GraphLaunchMicros: nz(b.GraphLaunchMicros), CopyBandwidthGBps: nz(b.CopyBandwidthGBps),
		PeakBandwidthGBps: nz(b.PeakBandwidthGBps),
	}
}

func allocation(a v1alpha1.GPUAllocation) ac.GPUAllocationApplyConfiguration {
	return ac.GPUAllocationApplyConfiguration{
		Namespace: ptr(a.Namespace), Pod: ptr(a.Pod), Container: nz(a.Container), Source: ptr(a.Source),
		ResourceName: nz(a.ResourceName), Claim: nz(a.Claim), Shared: nz(a.Shared), MIGDevice: nz(a.MIGDevice),
	}
}

func migDevice(m v1alpha1.MIGDevice) ac.MIGDeviceApplyConfiguration {
	return ac.MIGDeviceApplyConfiguration{UUID: ptr(m.UUID), Profile: nz(m.Profile), MemoryMiB: nz(m.MemoryMiB),
		GPUInstanceID: optional(m.GPUInstanceID, copyPtr[int32]), ComputeInstanceID: optional(m.ComputeInstanceID, copyPtr[int32])}
}

// AllocatedGPU is g as an apply configuration; nil for nil.
func AllocatedGPU(g *v1alpha1.AllocatedGPU) *ac.AllocatedGPUApplyConfiguration {
	return optional(g, func(g *v1alpha1.AllocatedGPU) *ac.AllocatedGPUApplyConfiguration {
		return &ac.AllocatedGPUApplyConfiguration{
			UUID: ptr(g.UUID), Index: optional(g.Index, copyPtr[int32]),
			MIGDevice: nz(g.MIGDevice), Source: nz(g.Source),
		}
	})
}

// RunPod is r as an apply configuration; nil for nil.
func RunPod(r *v1alpha1.RunPodReference) *ac.RunPodReferenceApplyConfiguration {
	return optional(r, func(r *v1alpha1.RunPodReference) *ac.RunPodReferenceApplyConfiguration {
		return &ac.RunPodReferenceApplyConfiguration{Name: ptr(r.Name), UID: ptr(r.UID)}
	})
}

func recipe(r v1alpha1.RecipeSupport) ac.RecipeSupportApplyConfiguration {
	return ac.RecipeSupportApplyConfiguration{Scheme: ptr(r.Scheme), Support: ptr(r.Support), Reason: nz(r.Reason)}
}
