// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package gpu

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/kernels"
)

// TestGroupedNVFP4StochasticColumnwise checks the grouped NVFP4 kernels
// (kernels.GroupedNVFP4, GroupedNVFP4TwoD) through QuantizeGrouped for the
// gradient role (columnwise RHT, stochastic rounding on each group's
// Philox stream), the input role (RHT) and 16x16 weights, every usage,
// three split vectors with empty groups, byte-identical to the reference,
// in every input type; and for each split vector and role a grouped step
// (both operands) whose graph replay gives the eager run's bytes and the
// reference's results. Columns of 256 take the tiled kernels, 96 the
// general ones.
func TestGroupedNVFP4StochasticColumnwise(t *testing.T) {
	ctx := context.Background()
	r := quant.DefaultRecipe(quant.NVFP4BlockScaling)
	p, err := r.Plan(quant.Gradient)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Stochastic || !p.RHT {
		t.Fatalf("the NVFP4 Gradient plan has stochastic %v, RHT %v: want both", p.Stochastic, p.RHT)
	}
	const rows = 1024
	roles := []quant.TensorRole{quant.Gradient, quant.Input, quant.Weight}
	splitVectors := [][]int{
		{256, 128, 384, 256},
		{128, 0, 512, 0, 128, 256},
		{1024},
	}
	for _, cols := range []int{256, 96} {
		for _, dt := range dtypes {
			x := makeInput(shape{rows, cols}, dt, true, uint64(7*cols)+uint64(dt))
			for k, splits := range splitVectors {
				t.Run(fmt.Sprintf("%s/cols=%d/split%d", dt, cols, k), func(t *testing.T) {
					for _, u := range []quant.Usage{quant.UsageBoth, quant.UsageColumnwise, quant.UsageRowwise} {
						for _, role := range roles {
							req := quant.Request{Recipe: r, Role: role, Usage: u, Seed: 0x5eed + uint64(k)}
							got, err := gb.QuantizeGrouped(ctx, req, x, splits, nil)
							if err != nil {
								t.Fatal(err)
							}
							want, err := ref.QuantizeGrouped(ctx, req, x, splits, nil)
							if err != nil {
								t.Fatal(err)
							}
							for g := range want {
								if d := diff(got[g], want[g]); d != "" {
									t.Errorf("%s usage %d, group %d (%d rows): %s", role, u, g, splits[g], d)
								}
							}
						}
					}
					if dt != kernels.BF16 {
						return
					}
					for _, role := range roles {
						groupedStepReplay(t, r, role, x, rows, cols, dt, splits)
					}
				})
			}
		}
	}
}

// groupedStepReplay builds a grouped step of role with both operands for
// splits, runs it eagerly and compares with the reference, then replays
// its graph and compares with the eager bytes.
func groupedStepReplay(t *testing.T, r quant.Recipe, role quant.TensorRole, x quant.Tensor, rows, cols int, dt kernels.DType, splits []int) {
	ctx := context.Background()
	req := quant.Request{Recipe: r, Role: role, Usage: quant.UsageBoth, Seed: 0xabc}
	s, err := gb.NewGroupedStep(ctx, GroupedConfig{Request: req, Rows: rows, Cols: cols, Input: dt, Splits: splits})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetInput(ctx, 0, x); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(ctx, false); err != nil {
		t.Fatal(err)
	}
	eager, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GroupResults(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.QuantizeGrouped(ctx, req, x, splits, nil)
	if err != nil {
		t.Fatal(err)
	}
	for g := range want {
		if d := diff(got[g], want[g]); d != "" {
			t.Errorf("step, group %d (%d rows): %s", g, splits[g], d)
		}
	}
	if err := s.Run(ctx, true); err != nil {
		t.Fatal(err)
	}
	replay, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(replay, eager) {
		t.Errorf("graph replay: %s", bytesDiff("outputs", replay, eager))
	}
	t.Logf("%s, %d groups: step of %d launches, graph replay == eager (%d bytes), every group bit-exact", role, len(splits), s.Kernels(), len(eager))
}

// TestBenchmarkMXFP8DirectSwizzle measures the MXFP8 step with both
// operands at 16384^2 (BF16, TE rounding) through Measure, now one launch
// (the fused kernel writes the swizzled scales; before, two Swizzle
// launches followed it). Runs only with KQUANT_BENCH=1.
func TestBenchmarkMXFP8DirectSwizzle(t *testing.T) {
	if os.Getenv("KQUANT_BENCH") != "1" {
		t.Skip("set KQUANT_BENCH=1 to measure")
	}
	ctx := context.Background()
	sh := shape{16384, 16384}
	x := makeInput(sh, kernels.BF16, false, 42)
	req := quant.Request{Recipe: quant.DefaultRecipe(quant.MXFP8BlockScaling), Role: quant.Input, Usage: quant.UsageBoth}
	m, err := gb.Measure(ctx, measure.Quantize{Request: req, X: x},
		measure.Options{Mode: v1alpha1.JobModeBenchmark, Graphs: v1alpha1.GraphModeBoth, Warmup: 10, Iterations: 50})
	if err != nil {
		t.Fatal(err)
	}
	if m.KernelsPerStep != 1 {
		t.Errorf("MXFP8 both operands: %d launches per step, want 1", m.KernelsPerStep)
	}
	bw := float64(m.BytesMoved) / m.GPUMicros / 1e3
	fmt.Printf("mxfp8-both-direct-swizzle %v: launches %d, gpu-us %.1f, GB %.3f, GB/s %.0f (%.1f%% of copy %.0f GB/s), eager-us %.2f, graph-us %.2f, replay==eager %v/%v\n",
		sh, m.KernelsPerStep, m.GPUMicros, float64(m.BytesMoved)/1e9, bw, 100*bw/m.CopyBandwidthGBps, m.CopyBandwidthGBps,
		m.HostEagerMicros, m.HostGraphMicros, m.Graph.Capturable, m.Graph.ReplayMatchesEager)
}
