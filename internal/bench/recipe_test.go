// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/quant"
)

func TestRecipeFromAPIDefaultsAreTEs(t *testing.T) {
	for _, s := range v1alpha1.Schemes {
		t.Run(string(s), func(t *testing.T) {
			got, err := RecipeFromAPI(v1alpha1.QuantRecipeSpec{Scheme: s})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(quant.DefaultRecipe(quant.Scheme(s)), got); diff != "" {
				t.Errorf("(-default +converted):\n%s", diff)
			}
		})
	}
}

func TestRecipeFromAPIOptions(t *testing.T) {
	cases := []struct {
		name   string
		spec   v1alpha1.QuantRecipeSpec
		modify func(*quant.Recipe)
	}{
		{"delayed", v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeDelayedScaling, Format: v1alpha1.FormatE4M3,
			DelayedScaling: &v1alpha1.DelayedScalingOptions{Margin: ptr[int32](2), AmaxHistoryLen: ptr[int32](16), AmaxComputeAlgo: v1alpha1.AmaxComputeMostRecent}},
			func(r *quant.Recipe) {
				r.Format = quant.FormatE4M3
				r.Delayed = quant.DelayedOptions{Margin: 2, AmaxHistoryLen: 16, AmaxComputeAlgo: quant.AmaxComputeMostRecent}
			}},
		{"current", v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeFloat8CurrentScaling,
			CurrentScaling: &v1alpha1.CurrentScalingOptions{Power2Scales: ptr(true), AmaxEpsilon: "1e-12"}},
			func(r *quant.Recipe) { r.Current = quant.CurrentOptions{Power2Scales: true, AmaxEpsilon: 1e-12} }},
		{"block float32 scales", v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeFloat8BlockScaling,
			BlockScaling: &v1alpha1.BlockScalingOptions{Power2Scales: ptr(false)}},
			func(r *quant.Recipe) { r.Block.Power2Scales = false }},
		{"mxfp8 OCP 2D", v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeMXFP8BlockScaling,
			MXFP8: &v1alpha1.MXFP8Options{ScaleRounding: v1alpha1.ScaleRoundingOCP, TwoDimensionalWeights: ptr(true)}},
			func(r *quant.Recipe) {
				r.MXFP8 = quant.MXFP8Options{ScaleRounding: quant.ScaleRoundingOCP, TwoDimensionalWeights: true}
			}},
		{"nvfp4 all off", v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeNVFP4BlockScaling,
			NVFP4: &v1alpha1.NVFP4Options{RandomHadamardTransform: ptr(false), StochasticRounding: ptr(false), TwoDimensionalWeights: ptr(false)}},
			func(r *quant.Recipe) {
				r.NVFP4.RandomHadamardTransform, r.NVFP4.StochasticRounding, r.NVFP4.TwoDimensionalWeights = false, false, false
			}},
		{"nvfp4 4over6 MSE and row scaling", v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeNVFP4BlockScaling,
			NVFP4: &v1alpha1.NVFP4Options{RandomHadamardTransform: ptr(false), FourOverSix: v1alpha1.NVFP4ScopeActivations,
				FourOverSixErrorMode: v1alpha1.FourOverSixMSE, FourOverSixE4M3Bound256: v1alpha1.NVFP4ScopeNone, RowScaledActivation: ptr(true)}},
			func(r *quant.Recipe) {
				r.NVFP4.RandomHadamardTransform = false
				r.NVFP4.FourOverSix, r.NVFP4.FourOverSixErrorMode = quant.ScopeActivations, quant.ErrorMSE
				r.NVFP4.FourOverSixE4M3Bound256, r.NVFP4.RowScaledActivation = quant.ScopeNone, true
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := quant.DefaultRecipe(quant.Scheme(tc.spec.Scheme))
			tc.modify(&want)
			got, err := RecipeFromAPI(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecipeFromAPIRefusesWhatQuantRefuses(t *testing.T) {
	for _, spec := range []v1alpha1.QuantRecipeSpec{
		{Scheme: "Nope"},
		{Scheme: v1alpha1.SchemeMXFP8BlockScaling, Format: v1alpha1.FormatE5M2},
		{Scheme: v1alpha1.SchemeFloat8CurrentScaling, CurrentScaling: &v1alpha1.CurrentScalingOptions{AmaxEpsilon: "1e99"}},
	} {
		if _, err := RecipeFromAPI(spec); err == nil {
			t.Errorf("%+v accepted", spec)
		}
	}
}
