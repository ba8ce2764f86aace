// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"testing"

	"k8s.io/utils/ptr"
)

func TestKeyIgnoresSpelledOutDefaults(t *testing.T) {
	cases := []struct {
		name    string
		a, b    QuantRecipeSpec
		wantKey string
	}{
		{
			name:    "delayed scaling with and without defaults",
			a:       QuantRecipeSpec{Scheme: SchemeDelayedScaling},
			b:       QuantRecipeSpec{Scheme: SchemeDelayedScaling, Format: FormatHybrid, DelayedScaling: &DelayedScalingOptions{Margin: ptr.To[int32](0), AmaxHistoryLen: ptr.To[int32](1024), AmaxComputeAlgo: AmaxComputeMax}},
			wantKey: "DelayedScaling/HYBRID;margin=0;amaxHistoryLen=1024;amaxComputeAlgo=max",
		},
		{
			name:    "current scaling epsilon spelled two ways",
			a:       QuantRecipeSpec{Scheme: SchemeFloat8CurrentScaling, CurrentScaling: &CurrentScalingOptions{AmaxEpsilon: "0.0"}},
			b:       QuantRecipeSpec{Scheme: SchemeFloat8CurrentScaling, CurrentScaling: &CurrentScalingOptions{AmaxEpsilon: "0e3", Power2Scales: ptr.To(false)}},
			wantKey: "Float8CurrentScaling/HYBRID;power2Scales=false;amaxEpsilon=0",
		},
		{
			name:    "block scaling",
			a:       QuantRecipeSpec{Scheme: SchemeFloat8BlockScaling},
			b:       QuantRecipeSpec{Scheme: SchemeFloat8BlockScaling, Format: FormatE4M3, BlockScaling: &BlockScalingOptions{Power2Scales: ptr.To(true)}},
			wantKey: "Float8BlockScaling/E4M3;power2Scales=true",
		},
		{
			name:    "mxfp8",
			a:       QuantRecipeSpec{Scheme: SchemeMXFP8BlockScaling},
			b:       QuantRecipeSpec{Scheme: SchemeMXFP8BlockScaling, MXFP8: &MXFP8Options{ScaleRounding: ScaleRoundingTE}},
			wantKey: "MXFP8BlockScaling/E4M3;scaleRounding=TE;twoDimensionalWeights=false",
		},
		{
			name:    "nvfp4",
			a:       QuantRecipeSpec{Scheme: SchemeNVFP4BlockScaling},
			b:       QuantRecipeSpec{Scheme: SchemeNVFP4BlockScaling, Format: FormatE2M1, NVFP4: &NVFP4Options{StochasticRounding: ptr.To(true)}},
			wantKey: "NVFP4BlockScaling/E2M1;randomHadamardTransform=true;stochasticRounding=true;twoDimensionalWeights=true",
		},
		{
			name: "nvfp4 4over6 and row scaling",
			a: QuantRecipeSpec{Scheme: SchemeNVFP4BlockScaling, NVFP4: &NVFP4Options{
				RandomHadamardTransform: ptr.To(false), FourOverSix: NVFP4ScopeAll, RowScaledActivation: ptr.To(true)}},
			b: QuantRecipeSpec{Scheme: SchemeNVFP4BlockScaling, NVFP4: &NVFP4Options{
				RandomHadamardTransform: ptr.To(false), FourOverSix: NVFP4ScopeAll, FourOverSixErrorMode: FourOverSixMAE,
				FourOverSixE4M3Bound256: NVFP4ScopeAll, RowScaledActivation: ptr.To(true)}},
			wantKey: "NVFP4BlockScaling/E2M1;randomHadamardTransform=false;stochasticRounding=true;twoDimensionalWeights=true" +
				";fourOverSix=all;fourOverSixErrorMode=MAE;fourOverSixE4M3Bound256=all;rowScaledActivation=true",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.Key(); got != tc.wantKey {
				t.Errorf("a.Key() = %q, want %q", got, tc.wantKey)
			}
			if got := tc.b.Key(); got != tc.wantKey {
				t.Errorf("b.Key() = %q, want %q", got, tc.wantKey)
			}
		})
	}
}

func TestKeyDistinguishesOptions(t *testing.T) {
	a := QuantRecipeSpec{Scheme: SchemeMXFP8BlockScaling}
	b := QuantRecipeSpec{Scheme: SchemeMXFP8BlockScaling, MXFP8: &MXFP8Options{ScaleRounding: ScaleRoundingOCP}}
	if a.Key() == b.Key() {
		t.Errorf("TE and OCP rounding share the key %q", a.Key())
	}
}

func TestEffectiveDoesNotModifyItsInput(t *testing.T) {
	in := QuantRecipeSpec{Scheme: SchemeDelayedScaling, DelayedScaling: &DelayedScalingOptions{}}
	_ = in.Effective()
	if in.DelayedScaling.Margin != nil || in.Format != "" {
		t.Errorf("Effective modified its receiver: %+v", in)
	}
}

func FuzzKey(f *testing.F) {
	f.Add("DelayedScaling", "", "1e-3", int32(3), true)
	f.Fuzz(func(t *testing.T, scheme, format, eps string, hist int32, p2 bool) {
		s := QuantRecipeSpec{
			Scheme: Scheme(scheme), Format: Format(format),
			DelayedScaling: &DelayedScalingOptions{AmaxHistoryLen: &hist},
			CurrentScaling: &CurrentScalingOptions{AmaxEpsilon: eps, Power2Scales: &p2},
		}
		if first, second := s.Key(), s.Key(); first != second {
			t.Fatal("key is not deterministic")
		}
	})
}
