// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scheduling

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/capability"
)

// SchemeShortName is how messages name a scheme.
func SchemeShortName(s kquantv1alpha1.Scheme) string {
	switch s {
	case kquantv1alpha1.SchemeDelayedScaling:
		return "FP8 delayed scaling"
	case kquantv1alpha1.SchemeFloat8CurrentScaling:
		return "FP8 current scaling"
	case kquantv1alpha1.SchemeFloat8BlockScaling:
		return "FP8 block scaling"
	case kquantv1alpha1.SchemeMXFP8BlockScaling:
		return "MXFP8"
	case kquantv1alpha1.SchemeNVFP4BlockScaling:
		return "NVFP4"
	}
	return string(s)
}

// GPUSupport is how gpu supports scheme, as its agent reported it
// (capability.Reported). A scheme the agent did not list is Unsupported.
func GPUSupport(gpu *kquantv1alpha1.GPU, scheme kquantv1alpha1.Scheme) (kquantv1alpha1.Support, string) {
	rs, _ := capability.Reported(gpu, scheme)
	return rs.Support, rs.Reason
}

// NodeSupport is the best support of scheme over the usable GPUs of profile:
// Native when any GPU is native, Emulated when any can emulate, else
// Unsupported. Unhealthy GPUs do not count.
func NodeSupport(profile *kquantv1alpha1.GPUNodeProfile, scheme kquantv1alpha1.Scheme) kquantv1alpha1.Support {
	best := kquantv1alpha1.SupportUnsupported
	for i := range profile.Status.GPUs {
		g := &profile.Status.GPUs[i]
		if g.Health == kquantv1alpha1.HealthUnhealthy {
			continue
		}
		s, _ := GPUSupport(g, scheme)
		best = capability.Better(best, s)
	}
	return best
}

// NodeRecipeSupport is NodeSupport for a whole recipe: Unsupported when the
// recipe asks for what no quantize kernel implements yet
// (capability.KernelGap), whatever the node's support of its scheme.
func NodeRecipeSupport(profile *kquantv1alpha1.GPUNodeProfile, recipe *kquantv1alpha1.QuantRecipeSpec) kquantv1alpha1.Support {
	if capability.KernelGap(recipe) != "" {
		return kquantv1alpha1.SupportUnsupported
	}
	return NodeSupport(profile, recipe.Scheme)
}

// ProfileReady reports whether the agent marked its profile Ready.
func ProfileReady(profile *kquantv1alpha1.GPUNodeProfile) bool {
	return meta.IsStatusConditionTrue(profile.Status.Conditions, kquantv1alpha1.ConditionReady)
}

// DriverUpgrading reports whether the agent stepped aside for a GPU driver
// upgrade on the profile's node.
func DriverUpgrading(profile *kquantv1alpha1.GPUNodeProfile) bool {
	return meta.IsStatusConditionTrue(profile.Status.Conditions, kquantv1alpha1.ConditionDriverUpgrade)
}

// notNativeDetail words why gpu is not native for scheme: the numbers when the
// GPU is below the scheme's floor, else the agent's own reason.
func notNativeDetail(gpu *kquantv1alpha1.GPU, scheme kquantv1alpha1.Scheme, agentReason string) string {
	cc, err := capability.Parse(gpu.ComputeCapability)
	if err != nil {
		return strings.TrimSuffix(agentReason, ".")
	}
	if floor, ok := capability.MinNative(scheme); ok && !cc.AtLeast(floor) {
		return fmt.Sprintf("compute capability %s < %s", cc, floor)
	}
	if agentReason == "" {
		return "compute capability " + cc.String()
	}
	return fmt.Sprintf("compute capability %s: %s", cc, strings.TrimSuffix(agentReason, "."))
}
