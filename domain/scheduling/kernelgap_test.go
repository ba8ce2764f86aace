// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scheduling

import (
	"strings"
	"testing"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

// TestKernelGapIsNotSupported: a Blackwell node runs NVFP4 natively, but no
// quantize kernel implements 4over6 yet, so neither the scheduler nor the
// recipe's status may say that it supports a 4over6 recipe.
func TestKernelGapIsNotSupported(t *testing.T) {
	b200 := node(builders.MakeGPUNodeProfile("b").GPUs(builders.B200, 8).Ready(), nil)
	plain := &kquantv1alpha1.QuantRecipeSpec{Scheme: kquantv1alpha1.SchemeNVFP4BlockScaling}
	fourOverSix := &kquantv1alpha1.QuantRecipeSpec{Scheme: kquantv1alpha1.SchemeNVFP4BlockScaling,
		NVFP4: &kquantv1alpha1.NVFP4Options{FourOverSix: kquantv1alpha1.NVFP4ScopeWeights}}
	job := builders.MakeQuantJob("j", "ns").Obj()

	if got := NodeRecipeSupport(b200.Profile, plain); got != kquantv1alpha1.SupportNative {
		t.Errorf("plain NVFP4 on B200: %s, want Native", got)
	}
	if got := NodeRecipeSupport(b200.Profile, fourOverSix); got != kquantv1alpha1.SupportUnsupported {
		t.Errorf("4over6 on B200: %s, want Unsupported", got)
	}
	req, err := NewRequirements(fourOverSix, &job.Spec.Placement)
	if err != nil {
		t.Fatal(err)
	}
	res := EvaluateNode(&b200, &req, testNow)
	if res.Eligible() || res.Reason != ReasonUnsupported || !strings.Contains(res.Message, "do not implement NVFP4 4over6") {
		t.Errorf("4over6 on B200: eligible %v, %s: %s", res.Eligible(), res.Reason, res.Message)
	}
	if RequirementKey(plain, &job.Spec.Placement) == RequirementKey(fourOverSix, &job.Spec.Placement) {
		t.Error("a recipe with a kernel gap shares its evaluation key with the plain scheme")
	}
}
