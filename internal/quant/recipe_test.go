// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quant

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/internal/quant/hadamard"
)

func TestDefaultRecipesAreTEDefaults(t *testing.T) {
	cases := []struct {
		scheme Scheme
		format Format
	}{
		{DelayedScaling, FormatHybrid},
		{Float8CurrentScaling, FormatHybrid},
		{Float8BlockScaling, FormatE4M3},
		{MXFP8BlockScaling, FormatE4M3},
		{NVFP4BlockScaling, FormatE2M1},
	}
	for _, tc := range cases {
		r := DefaultRecipe(tc.scheme)
		if err := r.Validate(); err != nil {
			t.Errorf("%s default invalid: %v", tc.scheme, err)
		}
		if r.Format != tc.format {
			t.Errorf("%s default format %s, want %s", tc.scheme, r.Format, tc.format)
		}
	}
	r := DefaultRecipe(DelayedScaling)
	if diff := cmp.Diff(DelayedOptions{Margin: 0, AmaxHistoryLen: 1024, AmaxComputeAlgo: AmaxComputeMax}, r.Delayed); diff != "" {
		t.Errorf("delayed defaults (-want +got):\n%s", diff)
	}
	if !r.Block.Power2Scales || r.Current.Power2Scales || r.MXFP8.ScaleRounding != ScaleRoundingTE || r.MXFP8.TwoDimensionalWeights {
		t.Errorf("option defaults wrong: %+v", r)
	}
	if n := r.NVFP4; !n.RandomHadamardTransform || !n.StochasticRounding || !n.TwoDimensionalWeights || n.RHTSignMask != hadamard.TESignMask {
		t.Errorf("NVFP4 defaults wrong: %+v", n)
	}
}

func TestValidateRejects(t *testing.T) {
	mod := func(s Scheme, f func(*Recipe)) Recipe {
		r := DefaultRecipe(s)
		f(&r)
		return r
	}
	cases := []struct {
		name   string
		recipe Recipe
	}{
		{"pure E5M2", mod(DelayedScaling, func(r *Recipe) { r.Format = FormatE5M2 })},
		{"E2M1 on FP8", mod(MXFP8BlockScaling, func(r *Recipe) { r.Format = FormatE2M1 })},
		{"E4M3 on NVFP4", mod(NVFP4BlockScaling, func(r *Recipe) { r.Format = FormatE4M3 })},
		{"unknown scheme", Recipe{Scheme: "Int8", Format: FormatE4M3}},
		{"negative margin", mod(DelayedScaling, func(r *Recipe) { r.Delayed.Margin = -1 })},
		{"empty history", mod(DelayedScaling, func(r *Recipe) { r.Delayed.AmaxHistoryLen = 0 })},
		{"bad algo", mod(DelayedScaling, func(r *Recipe) { r.Delayed.AmaxComputeAlgo = "mean" })},
		{"negative epsilon", mod(Float8CurrentScaling, func(r *Recipe) { r.Current.AmaxEpsilon = -1 })},
		{"bad rounding", mod(MXFP8BlockScaling, func(r *Recipe) { r.MXFP8.ScaleRounding = "up" })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.recipe.Validate(); err == nil {
				t.Error("accepted")
			}
		})
	}
	if err := mod(DelayedScaling, func(r *Recipe) { r.Format = FormatE5M2 }).Validate(); !errors.Is(err, ErrE5M2) {
		t.Errorf("E5M2 error = %v, want ErrE5M2", err)
	}
}

func TestPlanRoleRules(t *testing.T) {
	mx2d := DefaultRecipe(MXFP8BlockScaling)
	mx2d.MXFP8.TwoDimensionalWeights = true
	hybridBlock := DefaultRecipe(Float8BlockScaling)
	hybridBlock.Format = FormatHybrid
	type want struct {
		elem       element.Type
		br, bc     int
		rht, sr    bool
		transposed bool
	}
	cases := []struct {
		name   string
		recipe Recipe
		role   TensorRole
		want   want
	}{
		{"hybrid delayed input is E4M3", DefaultRecipe(DelayedScaling), Input, want{element.E4M3, 0, 0, false, false, true}},
		{"hybrid delayed gradient is E5M2", DefaultRecipe(DelayedScaling), Gradient, want{element.E5M2, 0, 0, false, false, true}},
		{"hybrid current weight is E4M3", DefaultRecipe(Float8CurrentScaling), Weight, want{element.E4M3, 0, 0, false, false, true}},
		{"block input 1x128", DefaultRecipe(Float8BlockScaling), Input, want{element.E4M3, 1, 128, false, false, true}},
		{"block weight 128x128", DefaultRecipe(Float8BlockScaling), Weight, want{element.E4M3, 128, 128, false, false, true}},
		{"block gradient 1x128", DefaultRecipe(Float8BlockScaling), Gradient, want{element.E4M3, 1, 128, false, false, true}},
		{"hybrid block gradient E5M2", hybridBlock, Gradient, want{element.E5M2, 1, 128, false, false, true}},
		{"mxfp8 weight 1x32 by default", DefaultRecipe(MXFP8BlockScaling), Weight, want{element.E4M3, 1, 32, false, false, false}},
		{"mxfp8 weight 32x32 with 2D", mx2d, Weight, want{element.E4M3, 32, 32, false, false, false}},
		{"mxfp8 input stays 1x32 with 2D", mx2d, Input, want{element.E4M3, 1, 32, false, false, false}},
		{"nvfp4 input RHT only", DefaultRecipe(NVFP4BlockScaling), Input, want{element.E2M1, 1, 16, true, false, true}},
		{"nvfp4 weight 16x16 no RHT", DefaultRecipe(NVFP4BlockScaling), Weight, want{element.E2M1, 16, 16, false, false, true}},
		{"nvfp4 gradient RHT and SR", DefaultRecipe(NVFP4BlockScaling), Gradient, want{element.E2M1, 1, 16, true, true, true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.recipe.Plan(tc.role)
			if err != nil {
				t.Fatal(err)
			}
			got := want{p.Element, p.BlockRows, p.BlockCols, p.RHT, p.Stochastic, p.ColumnwiseTransposed}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := DefaultRecipe(MXFP8BlockScaling).Plan("Bias"); err == nil {
		t.Error("unknown role accepted")
	}
}

func TestScaleShapesFollowTheContractTable(t *testing.T) {
	plan := func(s Scheme, role TensorRole) Plan {
		p, err := DefaultRecipe(s).Plan(role)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name     string
		plan     Plan
		m, k     int
		row, col [2]int
	}{
		{"per tensor", plan(Float8CurrentScaling, Input), 129, 17, [2]int{1, 1}, [2]int{1, 1}},
		{"mxfp8 129x17", plan(MXFP8BlockScaling, Input), 129, 17, [2]int{256, 4}, [2]int{8, 128}},
		{"mxfp8 4096x4096", plan(MXFP8BlockScaling, Input), 4096, 4096, [2]int{4096, 128}, [2]int{128, 4096}},
		{"nvfp4 129x17", plan(NVFP4BlockScaling, Input), 129, 17, [2]int{256, 4}, [2]int{128, 12}},
		{"nvfp4 7x4096", plan(NVFP4BlockScaling, Input), 7, 4096, [2]int{128, 256}, [2]int{4096, 4}},
		{"block 1x128 129x17", plan(Float8BlockScaling, Input), 129, 17, [2]int{1, 132}, [2]int{2, 20}},
		{"block 1x128 7x4096", plan(Float8BlockScaling, Input), 7, 4096, [2]int{32, 8}, [2]int{1, 4096}},
		{"block 128x128 129x17", plan(Float8BlockScaling, Weight), 129, 17, [2]int{2, 4}, [2]int{1, 4}},
		{"block 128x128 1000x600", plan(Float8BlockScaling, Weight), 1000, 600, [2]int{8, 8}, [2]int{5, 8}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r0, r1 := tc.plan.ScaleShape(tc.m, tc.k, false)
			c0, c1 := tc.plan.ScaleShape(tc.m, tc.k, true)
			if diff := cmp.Diff([2][2]int{tc.row, tc.col}, [2][2]int{{r0, r1}, {c0, c1}}); diff != "" {
				t.Errorf("scale shapes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckSplitsNamesTheGroup(t *testing.T) {
	cases := []struct {
		name    string
		scheme  Scheme
		rows    int
		splits  []int
		states  []*State
		wantErr string
	}{
		{"mxfp8 group 2 misaligned", MXFP8BlockScaling, 96, []int{32, 32, 16, 16}, nil, "group 2 has 16 rows, not a multiple of 32 as MXFP8BlockScaling requires"},
		{"nvfp4 group 1 misaligned", NVFP4BlockScaling, 256, []int{128, 64, 64}, nil, "group 1 has 64 rows, not a multiple of 128 as NVFP4BlockScaling requires"},
		{"block group 0 misaligned", Float8BlockScaling, 128, []int{96, 32}, nil, "group 0 has 96 rows, not a multiple of 128 as Float8BlockScaling requires"},
		{"per-tensor group 1 misaligned", Float8CurrentScaling, 40, []int{32, 8}, nil, "group 1 has 8 rows, not a multiple of 16 as Float8CurrentScaling requires"},
		{"sum mismatch", MXFP8BlockScaling, 100, []int{32, 32}, nil, "split sizes add up to 64 rows, the tensor has 100"},
		{"negative", MXFP8BlockScaling, 0, []int{-32, 32}, nil, "group 0 has a negative row count -32"},
		{"missing states", DelayedScaling, 32, []int{16, 16}, []*State{{}}, "delayed scaling needs one state per group: 2 groups, 1 states"},
		{"states for stateless", MXFP8BlockScaling, 32, []int{32}, []*State{{}}, "scheme MXFP8BlockScaling keeps no per-group state; pass nil states"},
		{"ok with empty group", MXFP8BlockScaling, 64, []int{32, 0, 32}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckSplits(tc.scheme, tc.rows, tc.splits, tc.states)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Errorf("CheckSplits error %q, want %q", got, tc.wantErr)
			}
		})
	}
}

func TestStateUpdateStepsDelayedScaling(t *testing.T) {
	r := DefaultRecipe(DelayedScaling)
	r.Delayed.AmaxHistoryLen = 3
	st := NewState(r)
	steps := []struct {
		amax        float32
		wantScale   float32
		wantHistory []float32
	}{
		{8, 56, []float32{0, 0, 8}},
		{4, 56, []float32{0, 8, 4}},
		{0, 56, []float32{0, 4, 0}}, // max over the history is still 8
		{0, 112, []float32{0, 0, 0}},
		{0, 112, []float32{0, 0, 0}}, // all zero: nothing changes
	}
	for i, s := range steps {
		st.RecordAmax(s.amax)
		if err := st.Update(r, Input); err != nil {
			t.Fatal(err)
		}
		if st.Scale != s.wantScale {
			t.Errorf("step %d: scale %g, want %g", i, st.Scale, s.wantScale)
		}
		if diff := cmp.Diff(s.wantHistory, st.AmaxHistory); diff != "" {
			t.Errorf("step %d: history (-want +got):\n%s", i, diff)
		}
	}
	// Gradients under HYBRID use E5M2's maximum.
	g := NewState(r)
	g.RecordAmax(2)
	if err := g.Update(r, Gradient); err != nil {
		t.Fatal(err)
	}
	if g.Scale != 28672 {
		t.Errorf("gradient scale %g, want 57344/2", g.Scale)
	}
	if err := NewState(r).Update(DefaultRecipe(MXFP8BlockScaling), Input); err == nil {
		t.Error("update under MXFP8 accepted")
	}
}

func TestTensorHelpers(t *testing.T) {
	x, err := TensorFromBF16(1, 2, []uint16{0x3F80, 0xC000})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float32{1, -2}, x.Data); diff != "" {
		t.Errorf("BF16 widening (-want +got):\n%s", diff)
	}
	h, err := TensorFromFP16(1, 1, []uint16{0x3C00})
	if err != nil || h.Data[0] != 1 {
		t.Errorf("FP16 widening: %v %v", h, err)
	}
	if _, err := TensorFromBF16(2, 2, []uint16{1}); err == nil {
		t.Error("short data accepted")
	}
	if err := (Tensor{Rows: 2, Cols: 2, Data: make([]float32, 3)}).Validate(); err == nil {
		t.Error("bad tensor accepted")
	}
}
