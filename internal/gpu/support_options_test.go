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

// TestConfigKeyNoOp: steps are cached by what their launches depend on:
// whether a tensor has a no-op flag, not where the request's flag value
// lives or what it holds (the device flag is set per run).
func TestConfigKeyNoOp(t *testing.T) {
	on, off := float32(1), float32(0)
	cfg := func(noOp *float32) Config {
		return Config{Request: quant.Request{Recipe: quant.DefaultRecipe(quant.MXFP8BlockScaling), NoOp: noOp}, Rows: 32, Cols: 64}
	}
	if cfg(&on).key() != cfg(&off).key() {
		t.Errorf("two flags' configs have different keys: %q, %q", cfg(&on).key(), cfg(&off).key())
	}
	if cfg(&on).key() == cfg(nil).key() {
		t.Errorf("a config with a flag has the key of one without: %q", cfg(nil).key())
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
