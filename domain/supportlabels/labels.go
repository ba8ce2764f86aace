// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package supportlabels

import (
	"maps"
	"slices"
	"strings"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/capability"
	"github.com/kquant/kquant/domain/scheduling"
)

// The recipe-support labels, which the nodelabels controller owns.
const (
	LabelFP8      = "kquant.dev/fp8"
	LabelFP8Block = "kquant.dev/fp8-block"
	LabelMXFP8    = "kquant.dev/mxfp8"
	LabelNVFP4    = "kquant.dev/nvfp4"
)

// Label values.
const (
	ValueNative   = "native"
	ValueEmulated = "emulated"
)

// labelSchemes maps each label to the schemes it stands for; FP8 is the best
// of the two per-tensor schemes, which share TransformerEngine's rule.
func labelSchemes() map[string][]kquantv1alpha1.Scheme {
	return map[string][]kquantv1alpha1.Scheme{
		LabelFP8:      {kquantv1alpha1.SchemeDelayedScaling, kquantv1alpha1.SchemeFloat8CurrentScaling},
		LabelFP8Block: {kquantv1alpha1.SchemeFloat8BlockScaling},
		LabelMXFP8:    {kquantv1alpha1.SchemeMXFP8BlockScaling},
		LabelNVFP4:    {kquantv1alpha1.SchemeNVFP4BlockScaling},
	}
}

// Desired is the set of owned labels that profile implies; empty for nil.
func Desired(profile *kquantv1alpha1.GPUNodeProfile) map[string]string {
	out := map[string]string{}
	if profile == nil {
		return out
	}
	for label, schemes := range labelSchemes() {
		best := kquantv1alpha1.SupportUnsupported
		for _, s := range schemes {
			best = capability.Better(best, support(profile, s))
		}
		switch best {
		case kquantv1alpha1.SupportNative:
			out[label] = ValueNative
		case kquantv1alpha1.SupportEmulated:
			out[label] = ValueEmulated
		}
	}
	return out
}

// support is the node's support of s from its GPUs, or from the node-level
// summary when the agent reported no per-GPU support.
func support(profile *kquantv1alpha1.GPUNodeProfile, s kquantv1alpha1.Scheme) kquantv1alpha1.Support {
	for _, g := range profile.Status.GPUs {
		if len(g.Recipes) > 0 {
			return scheduling.NodeSupport(profile, s)
		}
	}
	for _, r := range profile.Status.Recipes {
		if r.Scheme == s {
			return r.Support
		}
	}
	return kquantv1alpha1.SupportUnsupported
}

// Changes are the label changes that bring current to desired for the owned
// keys: a value to set, or nil to remove. Empty when nothing changes.
func Changes(current, desired map[string]string) map[string]any {
	out := map[string]any{}
	keys := slices.Sorted(maps.Keys(labelSchemes()))
	for _, k := range keys {
		want, wanted := desired[k]
		have, has := current[k]
		switch {
		case wanted && (!has || have != want):
			out[k] = want
		case !wanted && has:
			out[k] = nil
		}
	}
	return out
}

// Families are the recipe families, sorted: fp8, fp8-block, mxfp8, nvfp4.
func Families() []string {
	var out []string
	for _, label := range slices.Sorted(maps.Keys(labelSchemes())) {
		out = append(out, strings.TrimPrefix(label, "kquant.dev/"))
	}
	return out
}

// Family is the recipe family of scheme: the part of its support label after
// "kquant.dev/" (fp8, fp8-block, mxfp8, nvfp4), or "" for an unknown scheme.
// The gate controller names its labels after it.
func Family(scheme kquantv1alpha1.Scheme) string {
	for label, schemes := range labelSchemes() {
		if slices.Contains(schemes, scheme) {
			return strings.TrimPrefix(label, "kquant.dev/")
		}
	}
	return ""
}
