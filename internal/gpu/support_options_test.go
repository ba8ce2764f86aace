// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"errors"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/capability"
	"github.com/kquant/kquant/internal/quant"
)

// TestCoversRefusesNewNVFP4Options: the kernels do not implement 4over6 or
// row-scaled activations yet, so Covers refuses the roles they apply to
// (the measurement harness then runs them on the reference) and accepts
// the roles they leave alone.
func TestCoversRefusesNewNVFP4Options(t *testing.T) {
	fourOverSix := quant.DefaultRecipe(quant.NVFP4BlockScaling)
	fourOverSix.NVFP4.FourOverSix = quant.ScopeWeights
	rowScaled := quant.DefaultRecipe(quant.NVFP4BlockScaling)
	rowScaled.NVFP4.RandomHadamardTransform = false
	rowScaled.NVFP4.RowScaledActivation = true
	cases := []struct {
		name    string
		recipe  quant.Recipe
		role    quant.TensorRole
		refused bool
	}{
		{"4over6 weights", fourOverSix, quant.Weight, true},
		{"4over6 leaves inputs", fourOverSix, quant.Input, false},
		{"4over6 leaves gradients", fourOverSix, quant.Gradient, false},
		{"row-scaled inputs", rowScaled, quant.Input, true},
		{"row-scaled leaves weights", rowScaled, quant.Weight, false},
	}
	var b Backend
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := b.Covers(tc.recipe, tc.role)
			if got := errors.Is(err, ErrNotImplemented); got != tc.refused {
				t.Errorf("Covers: %v, refused %v, want %v", err, got, tc.refused)
			}
		})
	}
}

// TestCheckNoOpRefuses: the kernels do not read the no-op flag yet.
func TestCheckNoOpRefuses(t *testing.T) {
	flag := float32(0)
	if err := checkNoOp(quant.Request{NoOp: &flag}); !errors.Is(err, ErrNotImplemented) {
		t.Errorf("checkNoOp with a flag: %v, want ErrNotImplemented", err)
	}
	if err := checkNoOp(quant.Request{}); err != nil {
		t.Errorf("checkNoOp without a flag: %v", err)
	}
}

// TestKernelGapAgreesWithCovers holds capability.KernelGap, which the
// controllers read to decide which nodes support a recipe, to what the
// kernels cover: a recipe has a gap exactly when Covers refuses one of its
// roles. (The layering keeps the harness's RecipeFromAPI out of this
// package, so each spec comes with its recipe.)
func TestKernelGapAgreesWithCovers(t *testing.T) {
	nvfp4 := func(f func(*quant.NVFP4Options)) quant.Recipe {
		r := quant.DefaultRecipe(quant.NVFP4BlockScaling)
		f(&r.NVFP4)
		return r
	}
	cases := []struct {
		spec   v1alpha1.QuantRecipeSpec
		recipe quant.Recipe
	}{
		{v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeNVFP4BlockScaling}, quant.DefaultRecipe(quant.NVFP4BlockScaling)},
		{v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeNVFP4BlockScaling, NVFP4: &v1alpha1.NVFP4Options{FourOverSix: v1alpha1.NVFP4ScopeWeights}},
			nvfp4(func(o *quant.NVFP4Options) { o.FourOverSix = quant.ScopeWeights })},
		{v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeNVFP4BlockScaling, NVFP4: &v1alpha1.NVFP4Options{RandomHadamardTransform: ptr.To(false), FourOverSix: v1alpha1.NVFP4ScopeActivations}},
			nvfp4(func(o *quant.NVFP4Options) { o.RandomHadamardTransform, o.FourOverSix = false, quant.ScopeActivations })},
		{v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeNVFP4BlockScaling, NVFP4: &v1alpha1.NVFP4Options{RandomHadamardTransform: ptr.To(false), RowScaledActivation: ptr.To(true)}},
			nvfp4(func(o *quant.NVFP4Options) { o.RandomHadamardTransform, o.RowScaledActivation = false, true })},
		{v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeMXFP8BlockScaling}, quant.DefaultRecipe(quant.MXFP8BlockScaling)},
	}
	var b Backend
	for _, tc := range cases {
		t.Run(tc.spec.Key(), func(t *testing.T) {
			refused := false
			for _, role := range []quant.TensorRole{quant.Input, quant.Weight, quant.Gradient} {
				if err := b.Covers(tc.recipe, role); errors.Is(err, ErrNotImplemented) {
					refused = true
				}
			}
			if gap := capability.KernelGap(&tc.spec); (gap != "") != refused {
				t.Errorf("KernelGap %q, Covers refuses a role: %v", gap, refused)
			}
		})
	}
}
