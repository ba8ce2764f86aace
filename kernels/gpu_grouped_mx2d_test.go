// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/kernels"
)

// TestGroupedMXFP82D: grouped MXFP8 with 32x32 weight tiles
// (GroupedMXFP82D), 64 groups x 3 split vectors with empty groups, both
// operands with swizzled scales and per-group amaxes in one pass and each
// operand alone, F32/BF16/F16, TE and OCP rounding, column counts that are
// not multiples of 32 or 128 (element accesses where cols % 8 != 0), a
// shape with more macro tiles than blocks (the blocks stride across
// groups), and scale buffers off 16-byte alignment (byte stores), against
// the reference's QuantizeGrouped group by group: data, the concatenated
// padded scale matrices and their swizzled layouts, amaxes. The harness
// then replays one captured graph with the three split vectors (equal to
// the eager runs) and reports a misaligned group by name.
func TestGroupedMXFP82D(t *testing.T) {
	const groups = 64
	ctx := context.Background()
	cases := []struct {
		rows, cols int
		dt         kernels.DType
		ocp        bool
		skew       int // byte offset of the scale buffers (0: aligned)
	}{
		{4096, 256, kernels.BF16, false, 0},
		{4096, 200, kernels.F32, false, 0},
		{2048, 264, kernels.F16, true, 0},
		{2048, 100, kernels.BF16, true, 0},
		{1024, 36, kernels.F32, false, 0},
		{16384, 512, kernels.BF16, false, 0},
		{8192, 384, kernels.F16, true, 0},
		{2048, 320, kernels.BF16, false, 4},
	}
	for i, cs := range cases {
		name := fmt.Sprintf("%dx%d/%v/ocp=%v/skew=%d", cs.rows, cs.cols, cs.dt, cs.ocp, cs.skew)
		t.Run(name, func(t *testing.T) {
			rows, cols, dt := cs.rows, cs.cols, cs.dt
			in := makeInput(dt, rows*cols, true, uint64(6200+i))
			x := tensorOf(in, rows, cols)
			r := quant.DefaultRecipe(quant.MXFP8BlockScaling)
			r.MXFP8.TwoDimensionalWeights = true
			if cs.ocp {
				r.MXFP8.ScaleRounding = quant.ScaleRoundingOCP
			}
			plan, err := r.Plan(quant.Weight)
			if err != nil {
				t.Fatal(err)
			}
			if plan.BlockRows != 32 {
				t.Fatalf("plan BlockRows %d, want 32", plan.BlockRows)
			}
			groupedMXFP8Run{launch: set.GroupedMXFP82D, req: quant.Request{Recipe: r, Role: quant.Weight, Usage: quant.UsageBoth}, in: in, x: x,
				groups: groups, dt: dt, f: fp8Format(plan.Element), ocp: cs.ocp, skew: cs.skew, rowOnlySwizzled: true}.run(ctx, t)
		})
	}
}
