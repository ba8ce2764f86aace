// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/kernels"
)

// TestNewWithoutDriver runs where there is no GPU (CI): New and
// OpenRuntime must fail with the "no CUDA driver" error, not panic.
func TestNewWithoutDriver(t *testing.T) {
	if ok, _ := cuda.Available(); ok {
		t.Skip("a CUDA driver is present")
	}
	b, err := New(context.Background())
	if err == nil {
		b.Close()
		t.Fatal("New succeeded without a driver")
	}
	if !cuda.IsNoDriver(err) || !strings.Contains(err.Error(), "no CUDA driver") {
		t.Errorf("New error %q: want a no-CUDA-driver error", err)
	}
	if _, err := OpenRuntime(); !cuda.IsNoDriver(err) {
		t.Errorf("OpenRuntime error %v: want a no-CUDA-driver error", err)
	}
}

func TestCheckPlan(t *testing.T) {
	mx2d := quant.DefaultRecipe(quant.MXFP8BlockScaling)
	mx2d.MXFP8.TwoDimensionalWeights = true
	cases := []struct {
		name   string
		recipe quant.Recipe
		role   quant.TensorRole
	}{
		{name: "current scaling", recipe: quant.DefaultRecipe(quant.Float8CurrentScaling), role: quant.Gradient},
		{name: "delayed scaling", recipe: quant.DefaultRecipe(quant.DelayedScaling), role: quant.Input},
		{name: "mxfp8", recipe: quant.DefaultRecipe(quant.MXFP8BlockScaling), role: quant.Weight},
		{name: "mxfp8 2D input is 1D", recipe: mx2d, role: quant.Input},
		{name: "mxfp8 2D weights", recipe: mx2d, role: quant.Weight},
		{name: "block scaling 1x128", recipe: quant.DefaultRecipe(quant.Float8BlockScaling), role: quant.Input},
		{name: "block scaling 128x128 weights", recipe: quant.DefaultRecipe(quant.Float8BlockScaling), role: quant.Weight},
		{name: "nvfp4 input", recipe: quant.DefaultRecipe(quant.NVFP4BlockScaling), role: quant.Input},
		{name: "nvfp4 gradient", recipe: quant.DefaultRecipe(quant.NVFP4BlockScaling), role: quant.Gradient},
		{name: "nvfp4 2D weights", recipe: quant.DefaultRecipe(quant.NVFP4BlockScaling), role: quant.Weight},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.recipe.Plan(tc.role)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkPlan(p); err != nil {
				t.Errorf("checkPlan: %v, want nil", err)
			}
		})
	}
}

// TestCheckPlanRejects: a plan no kernel covers (MXFP8 in 16x16 tiles, no
// recipe option asks for it) wraps ErrNotImplemented.
func TestCheckPlanRejects(t *testing.T) {
	p := quant.Plan{Scheme: quant.MXFP8BlockScaling, Element: element.E4M3, Scales: quant.ScaleE8M0, BlockRows: 16, BlockCols: 16}
	if err := checkPlan(p); !errors.Is(err, ErrNotImplemented) {
		t.Errorf("checkPlan(MXFP8 16x16): %v, want ErrNotImplemented", err)
	}
}

func TestInputType(t *testing.T) {
	nan := float32(math.NaN())
	cases := []struct {
		name string
		in   []float32
		want kernels.DType
	}{
		{name: "empty", in: nil, want: kernels.BF16},
		{name: "bf16 values", in: []float32{1, -2.5, 0x1p-130, float32(math.Inf(-1)), nan}, want: kernels.BF16},
		{name: "fp16 values", in: []float32{1.0009765625, 65504, 0x1p-24, float32(math.Copysign(0, -1)), nan}, want: kernels.F16},
		{name: "float32 values", in: []float32{1.0009765625, 0.1}, want: kernels.F32},
		{name: "beyond fp16 range", in: []float32{1.0009765625, 1e6}, want: kernels.F32},
		{name: "nan payload below bf16", in: []float32{math.Float32frombits(0x7FC00001)}, want: kernels.F16},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := InputType(tc.in); got != tc.want {
				t.Errorf("InputType = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEncodeInput(t *testing.T) {
	in := []float32{1, -2.5, 0x1p-130}
	got := make([]byte, 6)
	encodeInput(got, in, kernels.BF16)
	want := []byte{0x80, 0x3F, 0x20, 0xC0, 0x08, 0x00}
	if string(got) != string(want) {
		t.Errorf("BF16 bytes % x, want % x", got, want)
	}
	got = make([]byte, 4)
	encodeInput(got, []float32{1.0009765625, -65504}, kernels.F16)
	want = []byte{0x01, 0x3C, 0xFF, 0xFB}
	if string(got) != string(want) {
		t.Errorf("FP16 bytes % x, want % x", got, want)
	}
}

func TestStepConfigs(t *testing.T) {
	recipe := quant.DefaultRecipe(quant.DelayedScaling)
	x := quant.NewTensor(64, 8)
	w := quant.NewTensor(16, 8)
	st := []*quant.State{quant.NewState(recipe), quant.NewState(recipe), quant.NewState(recipe)}
	req := quant.Request{Recipe: recipe, Role: quant.Input, State: st[0]}
	cases := []struct {
		name      string
		step      measure.Step
		wantRows  []int
		wantRoles []quant.TensorRole
	}{
		{name: "quantize", step: measure.Quantize{Request: req, X: x, State: st[0]},
			wantRows: []int{64}, wantRoles: []quant.TensorRole{quant.Input}},
		{name: "grouped skips empty groups", step: measure.GroupedQuantize{Request: req, X: x, Splits: []int{16, 0, 48}, States: st},
			wantRows: []int{16, 48}, wantRoles: []quant.TensorRole{quant.Input, quant.Input}},
		{name: "linear", step: measure.QuantizedLinear{Request: req, X: x, W: w, States: st[:2]},
			wantRows: []int{64, 16}, wantRoles: []quant.TensorRole{quant.Input, quant.Weight}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfgs, inputs, states, err := stepConfigs(tc.step)
			if err != nil {
				t.Fatal(err)
			}
			if len(cfgs) != len(tc.wantRows) || len(inputs) != len(cfgs) || len(states) != len(cfgs) {
				t.Fatalf("%d configs, %d inputs, %d states; want %d each", len(cfgs), len(inputs), len(states), len(tc.wantRows))
			}
			for i, c := range cfgs {
				if c.Rows != tc.wantRows[i] || c.Request.Role != tc.wantRoles[i] || !c.EndStep || c.Request.State != nil {
					t.Errorf("config %d: rows %d role %s endStep %v state %p; want rows %d role %s, EndStep, no state",
						i, c.Rows, c.Request.Role, c.EndStep, c.Request.State, tc.wantRows[i], tc.wantRoles[i])
				}
				if inputs[i].Rows != c.Rows || states[i] == nil {
					t.Errorf("tensor %d: input rows %d, state %v", i, inputs[i].Rows, states[i])
				}
			}
		})
	}
}

func TestConfigKeyIgnoresStateAndSeed(t *testing.T) {
	r := quant.DefaultRecipe(quant.DelayedScaling)
	a := Config{Request: quant.Request{Recipe: r, Role: quant.Input, State: quant.NewState(r), Seed: 1}, Rows: 2, Cols: 3}
	b := a
	b.Request.State, b.Request.Seed = quant.NewState(r), 2
	if a.key() != b.key() {
		t.Errorf("keys differ by state or seed:\n%s\n%s", a.key(), b.key())
	}
	b.Rows = 4
	if a.key() == b.key() {
		t.Error("keys equal for different shapes")
	}
}

// TestCoversEveryRecipe checks measure.Coverage: every scheme and role runs
// on the kernels, with the 2D weight options (MXFP8 32x32 tiles, NVFP4
// 16x16) and OCP rounding too, so the harness never falls back to the
// reference for a recipe quant.Recipe can express.
func TestCoversEveryRecipe(t *testing.T) {
	var b Backend
	for _, s := range quant.Schemes() {
		for _, role := range []quant.TensorRole{quant.Input, quant.Weight, quant.Gradient} {
			r := quant.DefaultRecipe(s)
			if err := b.Covers(r, role); err != nil {
				t.Errorf("%s %s: %v", s, role, err)
			}
			switch s {
			case quant.MXFP8BlockScaling:
				r.MXFP8.TwoDimensionalWeights = true
				if err := b.Covers(r, role); err != nil {
					t.Errorf("MXFP8 2D recipe, role %s: %v", role, err)
				}
				r.MXFP8.ScaleRounding = quant.ScaleRoundingOCP
				if err := b.Covers(r, role); err != nil {
					t.Errorf("MXFP8 2D OCP recipe, role %s: %v", role, err)
				}
			case quant.NVFP4BlockScaling:
				r.NVFP4.TwoDimensionalWeights = true
				if err := b.Covers(r, role); err != nil {
					t.Errorf("NVFP4 2D recipe, role %s: %v", role, err)
				}
			}
		}
	}
}

// TestEveryPlanHasAGroupedKernel: every scheme, role and 2D variant runs
// both operands of a grouped step on grouped kernels with device split
// sizes; no plan runs one group at a time.
func TestEveryPlanHasAGroupedKernel(t *testing.T) {
	var recipes []quant.Recipe
	for _, s := range []quant.Scheme{quant.DelayedScaling, quant.Float8CurrentScaling, quant.Float8BlockScaling, quant.MXFP8BlockScaling, quant.NVFP4BlockScaling} {
		recipes = append(recipes, quant.DefaultRecipe(s))
	}
	mx2d := quant.DefaultRecipe(quant.MXFP8BlockScaling)
	mx2d.MXFP8.TwoDimensionalWeights = true
	recipes = append(recipes, mx2d)
	for _, r := range recipes {
		for _, role := range []quant.TensorRole{quant.Input, quant.Weight, quant.Gradient} {
			p, err := r.Plan(role)
			if err != nil {
				t.Fatal(err)
			}
			if k, covered := groupedKernelFor(p); k == groupedNone || covered != quant.UsageBoth {
				t.Errorf("%s %s (block rows %d): grouped kernel %d covering usage %d, want both operands", r.Scheme, role, p.BlockRows, k, covered)
			}
		}
	}
}
