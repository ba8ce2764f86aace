// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package reference

import (
	"context"
	"fmt"
	"math"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/internal/quant/scaling"
	"github.com/kquant/kquant/internal/quant/swizzle"
)

// quantizeMXFP8 implements MXFP8BlockScaling: E8M0 exponents per 1x32 block
// (rowwise) and 32x1 block (columnwise, data untransposed), or per 32x32
// tile for weights with the 2D option.
func quantizeMXFP8(ctx context.Context, plan quant.Plan, u quant.Usage, x quant.Tensor, res *quant.Result) error {
	const b = 32
	if plan.BlockRows == b {
		return quantizeMXFP82D(ctx, plan, u, x, res)
	}
	amaxBits := uint32(0) // tensor amax, folded from block amaxes
	rule := scaling.NewMXFP8Rule(plan.Element, plan.Rounding)
	if u&quant.UsageRowwise != 0 {
		o := newOperand(plan, x.Rows, x.Cols, false, nil)
		nkb := (x.Cols + b - 1) / b
		err := eachRow(ctx, x.Rows, func(m int) {
			row := x.Row(m)
			data := o.Data[m*x.Cols : (m+1)*x.Cols]
			scales := o.ScaleCodes[m*o.ScaleCols : m*o.ScaleCols+nkb]
			for kb := range scales {
				k0, k1 := kb*b, min(kb*b+b, x.Cols)
				a := element.AbsMax(row[k0:k1])
				amaxBits = max(amaxBits, math.Float32bits(a))
				e := rule.Exponent(a)
				scales[kb] = e
				plan.Element.EncodeScaled(data[k0:k1], row[k0:k1], scaling.MXFP8Factor(e))
			}
		})
		if err != nil {
			return err
		}
		o.Amax = math.Float32frombits(amaxBits)
		res.Rowwise = o
	}
	if u&quant.UsageColumnwise != 0 {
		o := newOperand(plan, x.Rows, x.Cols, true, nil)
		factors := make([]float32, x.Cols)
		err := eachStrip(ctx, x, b, func(m0, m1 int, amax []float32) {
			scales := o.ScaleCodes[(m0/b)*o.ScaleCols:]
			for k, a := range amax {
				amaxBits = max(amaxBits, math.Float32bits(a))
				e := rule.Exponent(a)
				scales[k] = e
				factors[k] = scaling.MXFP8Factor(e)
			}
			encodeStrip(plan.Element, o.Data, x, m0, m1, factors)
		})
		if err != nil {
			return err
		}
		o.Amax = math.Float32frombits(amaxBits)
		res.Columnwise = o
	}
	res.Amax = math.Float32frombits(amaxBits)
	return swizzleOperands(res)
}

// quantizeMXFP82D gives every 32x32 tile one exponent; both operands get the
// same codes (MXFP8 columnwise data is not transposed) and the scale matrices
// repeat the tile exponent along the block direction.
func quantizeMXFP82D(ctx context.Context, plan quant.Plan, u quant.Usage, x quant.Tensor, res *quant.Result) error {
	const b = 32
	nkb := (x.Cols + b - 1) / b
	nmb := (x.Rows + b - 1) / b
	codes := make([]byte, len(x.Data))
	tiles := make([]byte, nmb*nkb) // [mb, kb]
	tileAmax := make([]float32, nkb)
	factors := make([]float32, x.Cols)
	amaxBits := uint32(0)
	rule := scaling.NewMXFP8Rule(plan.Element, plan.Rounding)
	err := eachStrip(ctx, x, b, func(m0, m1 int, amax []float32) {
		groupMax(tileAmax, amax, b)
		for kb, a := range tileAmax {
			amaxBits = max(amaxBits, math.Float32bits(a))
			e := rule.Exponent(a)
			tiles[(m0/b)*nkb+kb] = e
			f := scaling.MXFP8Factor(e)
			for k := kb * b; k < min(kb*b+b, x.Cols); k++ {
				factors[k] = f
			}
		}
		encodeStrip(plan.Element, codes, x, m0, m1, factors)
	})
	if err != nil {
		return err
	}
	res.Amax = math.Float32frombits(amaxBits)
	if u&quant.UsageRowwise != 0 {
		o := newOperand(plan, x.Rows, x.Cols, false, codes)
		for m := range x.Rows {
			copy(o.ScaleCodes[m*o.ScaleCols:m*o.ScaleCols+nkb], tiles[(m/b)*nkb:(m/b+1)*nkb])
		}
		o.Amax = res.Amax
		res.Rowwise = o
	}
	if u&quant.UsageColumnwise != 0 {
		o := newOperand(plan, x.Rows, x.Cols, true, append([]byte(nil), codes...))
		for mb := range nmb {
			for k := range x.Cols {
				o.ScaleCodes[mb*o.ScaleCols+k] = tiles[mb*nkb+k/b]
			}
		}
		o.Amax = res.Amax
		res.Columnwise = o
	}
	return swizzleOperands(res)
}

// swizzleOperands fills the GEMM layout of MXFP8 and NVFP4 scales. MXFP8's
// columnwise scale matrix is stored [blocks of rows, cols] and is transposed
// before swizzling; NVFP4's is already stored transposed.
func swizzleOperands(res *quant.Result) error {
	for _, o := range []*quant.Operand{res.Rowwise, res.Columnwise} {
		if o == nil {
			continue
		}
		src, r, c := o.ScaleCodes, o.ScaleRows, o.ScaleCols
		if o == res.Columnwise && res.Plan.Scheme == quant.MXFP8BlockScaling {
			src, r, c = swizzle.Transpose(src, r, c), c, r
		}
		sw, err := swizzle.Swizzle(src, r, c)
		if err != nil {
			return fmt.Errorf("swizzling scales: %w", err)
		}
		o.Swizzled = sw
	}
	return nil
}
