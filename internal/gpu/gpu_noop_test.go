// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package gpu

import (
	"bytes"
	"context"
	"math"
	"os"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/kernels"
)

// noOpCase is one tensor of a step with a no-op flag.
type noOpCase struct {
	name  string
	cfg   Config
	shape shape
}

// noOpCases cover every family's step kernels: the FP8 per-tensor casts
// (current and delayed, with the update in the step), block FP8 1x128 and
// 128x128, MXFP8 (fused, one operand each way, float32 input, 32x32
// weights) and NVFP4 (RHT and stochastic rounding, 16x16 weights), on
// tiled and general shapes.
func noOpCases() []noOpCase {
	mx2d := quant.DefaultRecipe(quant.MXFP8BlockScaling)
	mx2d.MXFP8.TwoDimensionalWeights = true
	var out []noOpCase
	add := func(name string, r quant.Recipe, role quant.TensorRole, u quant.Usage, dt kernels.DType, shapes ...shape) {
		for _, sh := range shapes {
			cfg := Config{Request: quant.Request{Recipe: r, Role: role, Usage: u}, Rows: sh.rows, Cols: sh.cols, Input: dt,
				EndStep: r.Scheme == quant.DelayedScaling}
			out = append(out, noOpCase{name: name + "/" + sh.String() + "/" + dt.String(), cfg: cfg, shape: sh})
		}
	}
	tiled, general := shape{256, 512}, shape{129, 80}
	add("current", quant.DefaultRecipe(quant.Float8CurrentScaling), quant.Input, 0, kernels.BF16, tiled, general)
	add("current rowwise", quant.DefaultRecipe(quant.Float8CurrentScaling), quant.Input, quant.UsageRowwise, kernels.F32, tiled)
	add("delayed", quant.DefaultRecipe(quant.DelayedScaling), quant.Input, 0, kernels.BF16, tiled, general)
	add("block 1x128", quant.DefaultRecipe(quant.Float8BlockScaling), quant.Input, 0, kernels.BF16, tiled, general)
	add("block 1x128 rowwise", quant.DefaultRecipe(quant.Float8BlockScaling), quant.Input, quant.UsageRowwise, kernels.BF16, tiled)
	add("block 128x128", quant.DefaultRecipe(quant.Float8BlockScaling), quant.Weight, 0, kernels.BF16, tiled)
	add("mxfp8", quant.DefaultRecipe(quant.MXFP8BlockScaling), quant.Input, 0, kernels.BF16, tiled, general)
	add("mxfp8", quant.DefaultRecipe(quant.MXFP8BlockScaling), quant.Input, 0, kernels.F32, tiled)
	add("mxfp8 rowwise", quant.DefaultRecipe(quant.MXFP8BlockScaling), quant.Input, quant.UsageRowwise, kernels.BF16, tiled)
	add("mxfp8 columnwise", quant.DefaultRecipe(quant.MXFP8BlockScaling), quant.Input, quant.UsageColumnwise, kernels.BF16, tiled)
	add("mxfp8 32x32", mx2d, quant.Weight, 0, kernels.BF16, tiled, general)
	add("nvfp4 input", quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Input, 0, kernels.BF16, tiled, general)
	add("nvfp4 gradient", quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Gradient, 0, kernels.BF16, tiled, general)
	add("nvfp4 columnwise", quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Gradient, quant.UsageColumnwise, kernels.BF16, tiled)
	add("nvfp4 16x16", quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Weight, 0, kernels.BF16, tiled, general)
	return out
}

// TestNoOpFlagGraphReplay runs each case's step eagerly and as a graph
// replay, side by side, through a sequence of flag values and inputs: a
// first run, then the flag set (a new input must leave every output and
// state byte as it was), cleared (the new input's bytes, as the
// reference gives them), set again (untouched again), and NaN (not 1, so
// the step runs). After every run the eager and the replayed step's
// bytes must be equal.
func TestNoOpFlagGraphReplay(t *testing.T) {
	ctx := context.Background()
	nan := float32(math.NaN())
	seq := []struct {
		flag  float32
		input int
		runs  bool
	}{{0, 0, true}, {1, 1, false}, {0, 1, true}, {1, 2, false}, {nan, 2, true}}
	for _, tc := range noOpCases() {
		t.Run(tc.name, func(t *testing.T) {
			r, role := tc.cfg.Request.Recipe, tc.cfg.Request.Role
			delayed := r.Scheme == quant.DelayedScaling
			inputs := make([]quant.Tensor, 3)
			for k := range inputs {
				inputs[k] = makeInput(tc.shape, tc.cfg.Input, k == 1, uint64(900+k))
			}
			cfg := tc.cfg
			zero := float32(0)
			cfg.Request.NoOp = &zero
			var steps [2]*Step
			for j := range steps {
				s, err := gb.NewStep(ctx, cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				steps[j] = s
			}
			stRef := quant.NewState(r)
			var last []byte
			for k, e := range seq {
				var snaps [2][]byte
				for j, s := range steps {
					if err := s.SetNoOp(ctx, 0, e.flag); err != nil {
						t.Fatal(err)
					}
					if err := s.SetInput(ctx, 0, inputs[e.input]); err != nil {
						t.Fatal(err)
					}
					if err := s.Run(ctx, j == 1); err != nil {
						t.Fatal(err)
					}
					var err error
					if snaps[j], err = s.Snapshot(ctx); err != nil {
						t.Fatal(err)
					}
				}
				if !bytes.Equal(snaps[0], snaps[1]) {
					t.Fatalf("run %d (flag %v): %s", k, e.flag, bytesDiff("replayed against eager", snaps[1], snaps[0]))
				}
				switch {
				case !e.runs && !bytes.Equal(snaps[1], last):
					t.Fatalf("run %d (flag %v) changed the step: %s", k, e.flag, bytesDiff("outputs", snaps[1], last))
				case e.runs && last != nil && bytes.Equal(snaps[1], last) && !delayed:
					t.Fatalf("run %d (flag %v) left the outputs as they were", k, e.flag)
				}
				last = snaps[1]
				if !e.runs {
					continue
				}
				// What ran is the reference's step on this input.
				if delayed {
					if _, err := ref.Quantize(ctx, quant.Request{Recipe: r, Role: role, State: stRef}, inputs[e.input]); err != nil {
						t.Fatal(err)
					}
					if err := stRef.Update(r, role); err != nil {
						t.Fatal(err)
					}
					st := quant.NewState(r)
					if err := steps[1].State(ctx, 0, st); err != nil {
						t.Fatal(err)
					}
					if !sameState(st, stRef) {
						t.Fatalf("run %d: state scale %g, want %g", k, st.Scale, stRef.Scale)
					}
					continue
				}
				got, err := steps[1].Result(ctx, 0)
				if err != nil {
					t.Fatal(err)
				}
				want, err := ref.Quantize(ctx, quant.Request{Recipe: r, Role: role, Usage: tc.cfg.Request.Usage}, inputs[e.input])
				if err != nil {
					t.Fatal(err)
				}
				if d := diff(got, want); d != "" {
					t.Fatalf("run %d (flag %v) against the reference: %s", k, e.flag, d)
				}
			}
			t.Logf("%d runs, %d bytes of outputs and state, %d kernels a step", len(seq), len(last), steps[1].Kernels())
		})
	}
}

// TestQuantizeNoOp: Backend.Quantize honours Request.NoOp as the
// reference does: a set flag returns Request.Output untouched (and records
// no amax in a delayed-scaling history), a cleared one replaces *Output
// with the step's result.
func TestQuantizeNoOp(t *testing.T) {
	ctx := context.Background()
	for _, r := range []quant.Recipe{quant.DefaultRecipe(quant.DelayedScaling), quant.DefaultRecipe(quant.MXFP8BlockScaling), quant.DefaultRecipe(quant.NVFP4BlockScaling)} {
		t.Run(string(r.Scheme), func(t *testing.T) {
			x := makeInput(shape{64, 128}, kernels.BF16, false, 77)
			on, off := float32(1), float32(0)
			kept := &quant.Result{Rows: -1}
			st := quant.NewState(r)
			req := quant.Request{Recipe: r, Role: quant.Input, NoOp: &on, Output: kept}
			if r.Scheme == quant.DelayedScaling {
				req.State = st
			}
			got, err := gb.Quantize(ctx, req, x)
			if err != nil {
				t.Fatal(err)
			}
			if got != kept || kept.Rows != -1 || st.AmaxHistory[0] != 0 {
				t.Fatalf("skipped quantize: result %p (want %p), rows %d, history[0] %g", got, kept, kept.Rows, st.AmaxHistory[0])
			}
			req.NoOp = &off
			if got, err = gb.Quantize(ctx, req, x); err != nil {
				t.Fatal(err)
			}
			refReq := req
			refReq.NoOp, refReq.Output, refReq.State = nil, nil, quant.NewState(r)
			want, err := ref.Quantize(ctx, refReq, x)
			if err != nil {
				t.Fatal(err)
			}
			if got != kept {
				t.Fatalf("quantize returned %p, want Request.Output %p", got, kept)
			}
			if d := diff(got, want); d != "" {
				t.Fatalf("quantize into Request.Output: %s", d)
			}
		})
	}
}

// TestBenchmarkNoOp measures what the flag costs (KQUANT_BENCH=1): the
// same step without a flag, with the flag cleared and with it set, GPU
// time (events, eager) and host time per eager step and per graph replay.
// 8192^2 BF16, or 2048^2 with KQUANT_BIG=0.
func TestBenchmarkNoOp(t *testing.T) {
	if os.Getenv("KQUANT_BENCH") != "1" {
		t.Skip("set KQUANT_BENCH=1")
	}
	ctx := context.Background()
	sh := shape{8192, 8192}
	if os.Getenv("KQUANT_BIG") == "0" {
		sh = shape{2048, 2048}
	}
	recipes := []struct {
		name string
		r    quant.Recipe
		role quant.TensorRole
	}{
		{"current", quant.DefaultRecipe(quant.Float8CurrentScaling), quant.Input},
		{"delayed", quant.DefaultRecipe(quant.DelayedScaling), quant.Input},
		{"block 1x128", quant.DefaultRecipe(quant.Float8BlockScaling), quant.Input},
		{"mxfp8", quant.DefaultRecipe(quant.MXFP8BlockScaling), quant.Input},
		{"nvfp4 gradient (RHT, SR)", quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Gradient},
		{"nvfp4 16x16 weight", quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Weight},
	}
	x := makeInput(sh, kernels.BF16, false, 5)
	t.Logf("%s BF16, both operands; GPU µs eager (median of events), host µs per eager step and per graph replay", sh)
	t.Logf("%-26s %-12s %9s %9s %9s %8s", "recipe", "flag", "GPU µs", "host eager", "host graph", "kernels")
	for _, rc := range recipes {
		for _, flag := range []*float32{nil, new(float32), func() *float32 { v := float32(1); return &v }()} {
			cfg := Config{Request: quant.Request{Recipe: rc.r, Role: rc.role, NoOp: flag}, Rows: sh.rows, Cols: sh.cols, Input: kernels.BF16,
				EndStep: rc.r.Scheme == quant.DelayedScaling}
			s, err := gb.NewStep(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SetInput(ctx, 0, x); err != nil {
				t.Fatal(err)
			}
			var m measure.Measurement
			err = gb.dev.Do(func(c *cuda.Ctx) error {
				if err := s.capture(c); err != nil {
					return err
				}
				return s.time(ctx, c, measure.Options{Warmup: 5, Iterations: 50}, true, true, &m)
			})
			_ = s.Close()
			if err != nil {
				t.Fatal(err)
			}
			label := "none"
			if flag != nil {
				label = "cleared"
				if *flag == 1 {
					label = "set (skips)"
				}
			}
			t.Logf("%-26s %-12s %9.2f %9.2f %9.2f %8d", rc.name, label, m.GPUMicros, m.HostEagerMicros, m.HostGraphMicros, s.Kernels())
		}
	}
}
