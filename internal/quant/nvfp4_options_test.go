// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quant

import (
	"errors"
	"testing"
)

// TestNVFP4OptionPairs: TE's refusals of 4over6 and row scaling with the
// RHT, which TE applies to inputs (never to weights).
func TestNVFP4OptionPairs(t *testing.T) {
	nvfp4 := func(f func(*NVFP4Options)) Recipe {
		r := DefaultRecipe(NVFP4BlockScaling)
		f(&r.NVFP4)
		return r
	}
	cases := []struct {
		name   string
		recipe Recipe
		want   error
	}{
		{"4over6 on weights with RHT", nvfp4(func(o *NVFP4Options) { o.FourOverSix = ScopeWeights }), nil},
		{"4over6 on activations with RHT", nvfp4(func(o *NVFP4Options) { o.FourOverSix = ScopeActivations }), ErrFourOverSixRHT},
		{"4over6 on all with RHT", nvfp4(func(o *NVFP4Options) { o.FourOverSix = ScopeAll }), ErrFourOverSixRHT},
		{"4over6 on all without RHT", nvfp4(func(o *NVFP4Options) { o.FourOverSix, o.RandomHadamardTransform = ScopeAll, false }), nil},
		{"row-scaled with RHT", nvfp4(func(o *NVFP4Options) { o.RowScaledActivation = true }), ErrRowScaledRHT},
		{"row-scaled without RHT", nvfp4(func(o *NVFP4Options) { o.RowScaledActivation, o.RandomHadamardTransform = true, false }), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.recipe.Validate(); !errors.Is(err, tc.want) {
				t.Errorf("Validate: %v, want %v", err, tc.want)
			}
		})
	}
	bad := nvfp4(func(o *NVFP4Options) { o.FourOverSixErrorMode = "MAX" })
	if err := bad.Validate(); err == nil {
		t.Error("error mode MAX accepted")
	}
}

// TestFourOverSixPlan: the scope selects roles, the 256 bound its own.
func TestFourOverSixPlan(t *testing.T) {
	r := DefaultRecipe(NVFP4BlockScaling)
	r.NVFP4.RandomHadamardTransform = false
	r.NVFP4.FourOverSix = ScopeAll
	r.NVFP4.FourOverSixErrorMode = ErrorMSE
	r.NVFP4.FourOverSixE4M3Bound256 = ScopeActivations
	for _, tc := range []struct {
		role  TensorRole
		mode  ErrorMode
		bound float32
	}{{Input, ErrorMSE, 256}, {Weight, ErrorMSE, 448}, {Gradient, "", 448}} {
		p, err := r.Plan(tc.role)
		if err != nil {
			t.Fatal(err)
		}
		if p.FourOverSix != tc.mode || p.TensorScaleBound != tc.bound {
			t.Errorf("%s: 4over6 %q bound %g, want %q %g", tc.role, p.FourOverSix, p.TensorScaleBound, tc.mode, tc.bound)
		}
	}
}
