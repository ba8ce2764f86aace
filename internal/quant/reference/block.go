// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package reference

import (
	"context"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/internal/quant/scaling"
)

// quantizeBlock implements Float8BlockScaling: float32 scales per 1x128
// block (128x1 for the columnwise operand) or per 128x128 tile.
func quantizeBlock(ctx context.Context, plan quant.Plan, u quant.Usage, x quant.Tensor, res *quant.Result) error {
	const b = 128
	fp8Max := plan.Element.MaxFinite()
	scaleOf := func(amax float32) float32 {
		return scaling.FromAmax(amax, fp8Max, plan.Epsilon, plan.Power2Scales)
	}
	res.Amax = element.AbsMax(x.Data)
	if plan.BlockRows == b {
		return quantizeBlock2D(ctx, plan, u, x, res, scaleOf)
	}
	nkb := (x.Cols + b - 1) / b
	if u&quant.UsageRowwise != 0 {
		o := newOperand(plan, x.Rows, x.Cols, false, nil)
		err := eachRow(ctx, x.Rows, func(m int) {
			row := x.Row(m)
			for kb := range nkb {
				k0, k1 := kb*b, min(kb*b+b, x.Cols)
				s := scaleOf(element.AbsMax(row[k0:k1]))
				o.ScaleInv[kb*o.ScaleCols+m] = scaling.Inverse(s)
				plan.Element.EncodeScaled(o.Data[m*x.Cols+k0:m*x.Cols+k1], row[k0:k1], s)
			}
		})
		if err != nil {
			return err
		}
		o.Amax = res.Amax
		res.Rowwise = o
	}
	if u&quant.UsageColumnwise != 0 {
		o := newOperand(plan, x.Rows, x.Cols, true, nil)
		scales := make([]float32, x.Cols)
		codes := make([]byte, x.Cols)
		err := eachStrip(ctx, x, b, func(m0, m1 int, amax []float32) {
			for k, a := range amax {
				scales[k] = scaleOf(a)
				o.ScaleInv[(m0/b)*o.ScaleCols+k] = scaling.Inverse(scales[k])
			}
			for m := m0; m < m1; m++ {
				plan.Element.EncodeScaledEach(codes, x.Row(m), scales)
				for k, c := range codes {
					o.Data[k*x.Rows+m] = c
				}
			}
		})
		if err != nil {
			return err
		}
		o.Amax = res.Amax
		res.Columnwise = o
	}
	return nil
}

// quantizeBlock2D handles 128x128 tiles: one scale per tile, shared by both
// operands, so the columnwise codes are the transposed rowwise codes.
func quantizeBlock2D(ctx context.Context, plan quant.Plan, u quant.Usage, x quant.Tensor, res *quant.Result, scaleOf func(float32) float32) error {
	const b = 128
	nkb := (x.Cols + b - 1) / b
	codes := make([]byte, len(x.Data))
	tileInv := make([]float32, ((x.Rows+b-1)/b)*nkb) // [mb, kb]
	tileAmax := make([]float32, nkb)
	scales := make([]float32, x.Cols)
	err := eachStrip(ctx, x, b, func(m0, m1 int, amax []float32) {
		groupMax(tileAmax, amax, b)
		for kb, a := range tileAmax {
			s := scaleOf(a)
			tileInv[(m0/b)*nkb+kb] = scaling.Inverse(s)
			for k := kb * b; k < min(kb*b+b, x.Cols); k++ {
				scales[k] = s
			}
		}
		encodeStrip(plan.Element, codes, x, m0, m1, scales)
	})
	if err != nil {
		return err
	}
	nmb := (x.Rows + b - 1) / b
	if u&quant.UsageRowwise != 0 {
		o := newOperand(plan, x.Rows, x.Cols, false, codes)
		for mb := range nmb {
			for kb := range nkb {
				o.ScaleInv[mb*o.ScaleCols+kb] = tileInv[mb*nkb+kb]
			}
		}
		o.Amax = res.Amax
		res.Rowwise = o
	}
	if u&quant.UsageColumnwise != 0 {
		o := newOperand(plan, x.Rows, x.Cols, true, nil)
		transposeCodes(o.Data, codes, x.Rows, x.Cols)
		for kb := range nkb {
			for mb := range nmb {
				o.ScaleInv[kb*o.ScaleCols+mb] = tileInv[mb*nkb+kb]
			}
		}
		o.Amax = res.Amax
		res.Columnwise = o
	}
	return nil
}
