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

// TestGroupedNVFP4: the grouped NVFP4 kernels (GroupedNVFP4,
// GroupedNVFP4Col, GroupedNVFP4TwoD) against the reference's
// QuantizeGrouped, byte for byte, 64 groups and three split vectors
// (empty groups included) per shape and input type: the gradient role's
// both operands (columnwise RHT, stochastic rounding on each group's
// stream), the input role's RHT columnwise operand alone, the gradient
// columnwise operand without the RHT (sharing the input amax), and 16x16
// weights with both operands and their swizzled scales; every per-group
// amax. Then one captured graph replayed with the three split vectors
// equals the eager runs, and a misaligned group is reported by name.
// Columns of 256 take the tiled paths, 64 the tiled paths with a partial
// 128-column tile (padded columnwise scale rows), 96 and 200 the general
// paths.
func TestGroupedNVFP4(t *testing.T) {
	const groups, seed = 64, 0x5eed
	ctx := context.Background()
	cases := []struct {
		rows, cols int
		dt         kernels.DType
	}{
		{8192, 256, kernels.BF16},
		{8192, 256, kernels.F32},
		{4096, 256, kernels.F16},
		{4096, 64, kernels.F16},
		{4096, 96, kernels.BF16},
		{2048, 200, kernels.F32},
	}
	nvR := quant.DefaultRecipe(quant.NVFP4BlockScaling)
	noRHT := nvR
	noRHT.NVFP4.RandomHadamardTransform = false
	for i, cs := range cases {
		t.Run(fmt.Sprintf("%dx%d/%v", cs.rows, cs.cols, cs.dt), func(t *testing.T) {
			rows, cols, dt := cs.rows, cs.cols, cs.dt
			in := makeInput(dt, rows*cols, true, uint64(7100+i))
			x := tensorOf(in, rows, cols)
			gp, err := nvR.Plan(quant.Gradient)
			if err != nil {
				t.Fatal(err)
			}
			run(t, func(c *cuda.Ctx, b *bufs) error {
				xb := b.upload(in.raw)
				splits := b.alloc(4*groups, 0)
				sc := ((cols+15)/16 + 3) / 4 * 4
				rowB, colB := rows*kernels.NVFP4RowBytes(cols), cols*kernels.NVFP4RowBytes(rows)
				csb := kernels.GroupedNVFP4ColScaleBytes(rows, cols)
				newWS := func(words int) kernels.GroupWorkspace {
					return kernels.GroupWorkspace{Offsets: b.alloc(4*(groups+1), 0), Flag: b.alloc(4, 0), Amax: b.alloc(4*words, 0)}
				}
				rowOut := func() kernels.GroupedNVFP4Out {
					return kernels.GroupedNVFP4Out{Data: b.alloc(rowB, 0), Scales: b.alloc(rows*sc, 0), Swizzled: b.alloc(rows*sc, 0)}
				}
				colOut := func() kernels.GroupedNVFP4Out {
					return kernels.GroupedNVFP4Out{Data: b.alloc(colB, 0), Scales: b.alloc(csb, 0), Swizzled: b.alloc(csb, 0)}
				}
				wsG, wsI, wsN, wsW := newWS(2*groups), newWS(2*groups), newWS(groups), newWS(groups)
				gRow, gCol, iCol, nCol, wRow, wCol := rowOut(), colOut(), colOut(), colOut(), rowOut(), colOut()
				gOpts := kernels.NVFP4Opts{RHT: true, Signs: gp.RHTSignMask, Stochastic: true, Seed: seed}
				iOpts := kernels.NVFP4Opts{RHT: true, Signs: gp.RHTSignMask}
				nOpts := kernels.NVFP4Opts{Stochastic: true, Seed: seed}
				ops := func(o kernels.GroupedNVFP4Out) []cuda.Buffer { return []cuda.Buffer{o.Data, o.Scales, o.Swizzled} }
				var outs []cuda.Buffer
				for _, o := range []kernels.GroupedNVFP4Out{gRow, gCol, iCol, nCol, wRow, wCol} {
					outs = append(outs, ops(o)...)
				}
				outs = append(outs, wsG.Amax, wsI.Amax.Slice(4*groups, 4*groups), wsN.Amax, wsW.Amax)
				h := &groupedHarness{c: c, splits: splits, flags: []cuda.Buffer{wsG.Flag, wsI.Flag, wsN.Flag, wsW.Flag}, align: 128,
					outs: outs, nouts: 23}
				h.step = func() error {
					if err := set.GroupedNVFP4(c, stream, dt, xb, rows, cols, splits, groups, wsG, gRow, gCol, gOpts); err != nil {
						return err
					}
					if err := set.GroupedNVFP4Col(c, stream, dt, xb, rows, cols, splits, groups, wsI, iCol, iOpts); err != nil {
						return err
					}
					if err := set.GroupedNVFP4Col(c, stream, dt, xb, rows, cols, splits, groups, wsN, nCol, nOpts); err != nil {
						return err
					}
					return set.GroupedNVFP4TwoD(c, stream, dt, xb, rows, cols, splits, groups, wsW, wRow, wCol)
				}
				h.kernels = 5 + 3 + 3 + 3
				if (cols+15)/16%4 != 0 {
					h.kernels += 2
				}
				if cols%128 != 0 {
					h.kernels += 2
				}
				refOf := func(r quant.Recipe, role quant.TensorRole, u quant.Usage, sp []int32) []*quant.Result {
					res, err := reference.New().QuantizeGrouped(ctx, quant.Request{Recipe: r, Role: role, Usage: u, Seed: seed}, x, intsOf(sp), nil)
					if err != nil {
						t.Fatalf("reference: %v", err)
					}
					return res
				}
				h.cmp = func(k int, sp []int32) int {
					pre := fmt.Sprintf("splits %d: ", k)
					m := 0
					cmpOp := func(what string, o kernels.GroupedNVFP4Out, ref []*quant.Result, colwise bool) {
						var d, s, w []byte
						for g := range groups {
							op := ref[g].Rowwise
							if colwise {
								op = ref[g].Columnwise
							}
							d, s, w = append(d, op.Data...), append(s, op.ScaleCodes...), append(w, op.Swizzled...)
						}
						m += check(t, pre+what+" data", download(c, o.Data, len(d)), d, nil)
						m += check(t, pre+what+" scales", download(c, o.Scales, len(s)), s, nil)
						m += check(t, pre+what+" swizzled", download(c, o.Swizzled, len(w)), w, nil)
						if len(d) != o.Data.Size() || len(s) != o.Scales.Size() {
							t.Errorf("%s%s: reference %d data and %d scale bytes, buffers %d and %d", pre, what, len(d), len(s), o.Data.Size(), o.Scales.Size())
						}
					}
					amaxes := func(what string, buf cuda.Buffer, ref []*quant.Result, colwise bool) {
						var want []float32
						for g := range groups {
							a := ref[g].Amax
							if colwise {
								a = ref[g].Columnwise.Amax
							}
							want = append(want, a)
						}
						m += check(t, pre+what, download(c, buf, 4*groups), f32Bytes(want), nil)
					}
					grad := refOf(nvR, quant.Gradient, quant.UsageBoth, sp)
					cmpOp("gradient rowwise", gRow, grad, false)
					cmpOp("gradient columnwise", gCol, grad, true)
					amaxes("gradient input amaxes", wsG.Amax, grad, false)
					amaxes("gradient RHT amaxes", wsG.Amax.Slice(4*groups, 4*groups), grad, true)
					inp := refOf(nvR, quant.Input, quant.UsageColumnwise, sp)
					cmpOp("input columnwise", iCol, inp, true)
					amaxes("input RHT amaxes", wsI.Amax.Slice(4*groups, 4*groups), inp, true)
					nr := refOf(noRHT, quant.Gradient, quant.UsageColumnwise, sp)
					cmpOp("gradient columnwise without RHT", nCol, nr, true)
					amaxes("gradient amaxes without RHT", wsN.Amax, nr, true)
					wt := refOf(nvR, quant.Weight, quant.UsageBoth, sp)
					cmpOp("2D rowwise", wRow, wt, false)
					cmpOp("2D columnwise", wCol, wt, true)
					amaxes("2D amaxes", wsW.Amax, wt, false)
					return m
				}
				return h.run(t, alignedSplits(rows, 128, groups))
			})
		})
	}
}
