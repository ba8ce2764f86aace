// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package reference

import (
	"context"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/internal/quant/hadamard"
	"github.com/kquant/kquant/internal/quant/philox"
	"github.com/kquant/kquant/internal/quant/scaling"
)

// quantizeNVFP4 implements NVFP4BlockScaling. Each operand is an NVFP4
// tensor of its own: a float32 tensor scale S from the operand's amax, E4M3
// decode scales per 1x16 block (per 16x16 tile for 2D weights), E2M1 codes
// packed two per byte. The columnwise operand is the transposed input,
// transformed by the RHT when the plan says so.
func quantizeNVFP4(ctx context.Context, plan quant.Plan, u quant.Usage, x quant.Tensor, seed uint64, group uint32, res *quant.Result) error {
	res.Amax = element.AbsMax(x.Data)
	tileRows := plan.BlockRows // 1, or 16 for 2D weights
	var rowwise *quant.Operand
	if u&quant.UsageRowwise != 0 || tileRows > 1 {
		rowwise = newOperand(plan, x.Rows, x.Cols, false, nil)
		var sr *philox.ByteStream
		if plan.Stochastic {
			sr = philox.NewByteStream(seed, philox.OperandRowwise, group)
		}
		if err := quantizeFP4Rows(ctx, rowwise, x, res.Amax, tileRows, sr); err != nil {
			return err
		}
	}
	if u&quant.UsageRowwise != 0 {
		res.Rowwise = rowwise
	}
	if u&quant.UsageColumnwise != 0 {
		o := newOperand(plan, x.Rows, x.Cols, true, nil)
		if tileRows > 1 {
			// 2D tiles: the same codes and tile scales, transposed.
			transposeFP4(o, rowwise)
			for k := range x.Cols {
				for mb := 0; mb*16 < x.Rows; mb++ {
					o.ScaleCodes[k*o.ScaleCols+mb] = rowwise.ScaleCodes[(mb*16)*rowwise.ScaleCols+k/16]
				}
			}
			o.Scale, o.Amax = rowwise.Scale, rowwise.Amax
		} else {
			xt := transposeInput(x)
			if plan.RHT {
				applyRHT(xt, plan.RHTSignMask)
				o.RHT, o.RHTSignMask = true, plan.RHTSignMask
			}
			var sr *philox.ByteStream
			if plan.Stochastic {
				sr = philox.NewByteStream(seed, philox.OperandColumnwise, group)
			}
			if err := quantizeFP4Rows(ctx, o, xt, element.AbsMax(xt.Data), 1, sr); err != nil {
				return err
			}
		}
		res.Columnwise = o
	}
	return swizzleOperands(res)
}

// quantizeFP4Rows quantizes the matrix x (already in the operand's stored
// orientation) into o with blocks of 16 along each row, shared by tileRows
// consecutive rows (1 or 16). sr, when not nil, supplies the stochastic
// rounding bytes of the operand.
func quantizeFP4Rows(ctx context.Context, o *quant.Operand, x quant.Tensor, amax float32, tileRows int, sr *philox.ByteStream) error {
	const b = 16
	s := scaling.NVFP4TensorScale(amax)
	sInv := 1 / s
	o.Scale, o.Amax, o.Stochastic = s, amax, sr != nil
	nkb := (x.Cols + b - 1) / b
	blockAmax := make([]float32, nkb)
	colAmax := make([]float32, x.Cols)
	factors := make([]float32, nkb)
	codes := make([]byte, x.Cols)
	stride := o.RowStride()
	for m0 := 0; m0 < x.Rows; m0 += tileRows {
		if m0%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		m1 := min(m0+tileRows, x.Rows)
		if tileRows == 1 {
			row := x.Row(m0)
			for kb := range blockAmax {
				blockAmax[kb] = element.AbsMax(row[kb*b : min(kb*b+b, x.Cols)])
			}
		} else {
			columnAmax(colAmax, x, m0, m1)
			groupMax(blockAmax, colAmax, b)
		}
		for kb, a := range blockAmax {
			d := scaling.NVFP4BlockScale(a, s)
			factors[kb] = scaling.NVFP4ElementFactorInv(d, sInv)
			for m := m0; m < m1; m++ {
				o.ScaleCodes[m*o.ScaleCols+kb] = d
			}
		}
		for m := m0; m < m1; m++ {
			row := x.Row(m)
			for kb, f := range factors {
				k0, k1 := kb*b, min(kb*b+b, x.Cols)
				if sr == nil {
					element.E2M1.EncodeScaled(codes[k0:k1], row[k0:k1], f)
					continue
				}
				base := uint64(m)*uint64(x.Cols) + uint64(k0)
				for k := k0; k < k1; k++ {
					codes[k] = element.ToE2M1Stochastic(row[k]*f, sr.At(base+uint64(k-k0)))
				}
			}
			packFP4(o.Data[m*stride:(m+1)*stride], codes)
		}
	}
	return nil
}

// packFP4 packs 4-bit codes two per byte, lower index in the low nibble; an
// odd count leaves the last high nibble zero.
func packFP4(dst, codes []byte) {
	n := len(codes) / 2
	for i := range n {
		dst[i] = codes[2*i] | codes[2*i+1]<<4
	}
	if len(codes)%2 == 1 {
		dst[n] = codes[len(codes)-1]
	}
}

// transposeFP4 fills the transposed operand dst from src's codes.
func transposeFP4(dst, src *quant.Operand) {
	rows, cols := src.Rows, src.Cols
	codes := make([]byte, rows)
	dstStride := dst.RowStride()
	for k := range cols {
		for m := range rows {
			codes[m] = src.Code(m, k)
		}
		packFP4(dst.Data[k*dstStride:(k+1)*dstStride], codes)
	}
}

// transposeInput returns x transposed, [cols, rows], in 64x64 tiles so
// that both sides stay in cache.
func transposeInput(x quant.Tensor) quant.Tensor {
	const tile = 64
	t := quant.NewTensor(x.Cols, x.Rows)
	for m0 := 0; m0 < x.Rows; m0 += tile {
		for k0 := 0; k0 < x.Cols; k0 += tile {
			for m := m0; m < min(m0+tile, x.Rows); m++ {
				row := x.Data[m*x.Cols : (m+1)*x.Cols]
				for k := k0; k < min(k0+tile, x.Cols); k++ {
					t.Data[k*x.Rows+m] = row[k]
				}
			}
		}
	}
	return t
}

// applyRHT transforms every run of 16 consecutive elements of each row of x
// in place (hadamard.Matrix.ApplyRuns).
func applyRHT(x quant.Tensor, signs uint16) {
	h := hadamard.NewMatrix(signs)
	for m := range x.Rows {
		h.ApplyRuns(x.Row(m))
	}
}
