// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/reference"
	"github.com/kquant/kquant/kernels"
)

// TestGroupedBlock2D: grouped block FP8 with 128x128 weight tiles
// (GroupedBlock2D), both operands in one pass, the columnwise operand
// alone and the rowwise alone, power-of-2 and float32 scales, F32/BF16/
// F16, columns a multiple of 128 or not, against the reference's
// QuantizeGrouped group by group: data and the concatenated per-group
// scale matrices (the columnwise buffer's tail past the last group zero).
// 64 groups x 3 split vectors (empty groups included), one captured graph
// replayed with the 3 vectors equal to the eager runs, a misaligned group
// reported by name (groupedHarness).
func TestGroupedBlock2D(t *testing.T) {
	const groups = 64
	ctx := context.Background()
	cases := []struct {
		rows, cols int
		dt         kernels.DType
		pow2       bool
	}{
		{8192, 256, kernels.BF16, true},
		{8192, 264, kernels.F32, false},
		{8192, 200, kernels.F16, true},
		{8192, 1000, kernels.BF16, false},
		{16384, 96, kernels.F32, true},
	}
	for i, cs := range cases {
		name := fmt.Sprintf("%dx%d/%v/pow2=%v", cs.rows, cs.cols, cs.dt, cs.pow2)
		t.Run(name, func(t *testing.T) {
			rows, cols, dt := cs.rows, cs.cols, cs.dt
			in := makeInput(dt, rows*cols, true, uint64(7300+i))
			x := tensorOf(in, rows, cols)
			r := quant.DefaultRecipe(quant.Float8BlockScaling)
			r.Block.Power2Scales = cs.pow2
			plan, err := r.Plan(quant.Weight)
			if err != nil {
				t.Fatal(err)
			}
			if plan.BlockRows != 128 {
				t.Fatalf("weight plan has %d-row blocks, want 128", plan.BlockRows)
			}
			o := kernels.BlockOpts{Format: fp8Format(plan.Element), Eps: plan.Epsilon, Pow2: plan.Power2Scales}
			run(t, func(c *cuda.Ctx, b *bufs) error {
				xb := b.upload(in.raw)
				splits := b.alloc(4*groups, 0)
				newWS := func() kernels.GroupWorkspace {
					return kernels.GroupWorkspace{Offsets: b.alloc(4*(groups+1), 0), Flag: b.alloc(4, 0)}
				}
				wsB, wsC, wsR := newWS(), newWS(), newWS()
				n := rows * cols
				sr, sc := kernels.BlockScaleShape(rows, cols, true, false)
				csz := 4 * ((cols + 127) / 128) * kernels.GroupedBlock2DColScaleCols(rows, groups)
				row, rowS, col, colS := b.alloc(n, 0), b.alloc(4*sr*sc, 0), b.alloc(n, 0), b.alloc(csz, 0)
				col2, colS2 := b.alloc(n, 0), b.alloc(csz, 0)
				row3, rowS3 := b.alloc(n, 0), b.alloc(4*sr*sc, 0)
				h := &groupedHarness{c: c, splits: splits, flags: []cuda.Buffer{wsB.Flag, wsC.Flag, wsR.Flag}, align: 128,
					outs: []cuda.Buffer{row, rowS, col, colS, col2, colS2, row3, rowS3}, kernels: 6, nouts: 8}
				h.step = func() error {
					if err := set.GroupedBlock2D(c, stream, dt, xb, rows, cols, splits, groups, wsB, row, rowS, col, colS, o); err != nil {
						return err
					}
					if err := set.GroupedBlock2D(c, stream, dt, xb, rows, cols, splits, groups, wsC, cuda.Buffer{}, cuda.Buffer{}, col2, colS2, o); err != nil {
						return err
					}
					return set.GroupedBlock2D(c, stream, dt, xb, rows, cols, splits, groups, wsR, row3, rowS3, cuda.Buffer{}, cuda.Buffer{}, o)
				}
				h.cmp = func(k int, sp []int32) int {
					ref, err := reference.New().QuantizeGrouped(ctx, quant.Request{Recipe: r, Role: quant.Weight, Usage: quant.UsageBoth}, x, intsOf(sp), nil)
					if err != nil {
						t.Fatalf("reference: %v", err)
					}
					var rd, rs, cd, cscl []byte
					for g := range groups {
						if ref[g].Rowwise == nil || ref[g].Columnwise == nil {
							continue // empty group
						}
						rd, rs = append(rd, ref[g].Rowwise.Data...), append(rs, f32Bytes(ref[g].Rowwise.ScaleInv)...)
						cd, cscl = append(cd, ref[g].Columnwise.Data...), append(cscl, f32Bytes(ref[g].Columnwise.ScaleInv)...)
					}
					// The columnwise buffer: the groups' matrices, then zeros.
					cscl = append(cscl, make([]byte, csz-len(cscl))...)
					pre := fmt.Sprintf("splits %d: ", k)
					m := 0
					m += check(t, pre+"rowwise data", download(c, row, n), rd, x.Data)
					m += check(t, pre+"rowwise scale_inv", download(c, rowS, 4*sr*sc), rs, nil)
					m += check(t, pre+"columnwise data", download(c, col, n), cd, nil)
					m += check(t, pre+"columnwise scale_inv", download(c, colS, csz), cscl, nil)
					m += check(t, pre+"columnwise-only data", download(c, col2, n), cd, nil)
					m += check(t, pre+"columnwise-only scale_inv", download(c, colS2, csz), cscl, nil)
					m += check(t, pre+"rowwise-only data", download(c, row3, n), rd, x.Data)
					m += check(t, pre+"rowwise-only scale_inv", download(c, rowS3, 4*sr*sc), rs, nil)
					return m
				}
				return h.run(t, alignedSplits(rows, 128, groups))
			})
		})
	}
}
