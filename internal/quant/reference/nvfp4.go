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
// tensor of its own: a float32 tensor scale S from the operand's amax (one
// per row when row-scaled), E4M3 decode scales per 1x16 block (per 16x16
// tile for 2D weights), chosen between two candidates per block with
// 4over6, E2M1 codes packed two per byte. The columnwise operand is the
// transposed input, transformed by the RHT when the plan says so.
func quantizeNVFP4(ctx context.Context, plan quant.Plan, u quant.Usage, x quant.Tensor, seed uint64, group uint32, res *quant.Result) error {
	res.Amax = element.AbsMax(x.Data)
	tileRows := plan.BlockRows // 1, or 16 for 2D weights
	var rowwise *quant.Operand
	if u&quant.UsageRowwise != 0 || tileRows > 1 {
		rowwise = newOperand(plan, x.Rows, x.Cols, false, nil)
		rule := fp4Rule{tileRows: tileRows, bound: plan.TensorScaleBound, fourOverSix: plan.FourOverSix, rowScaled: plan.RowScaled}
		if plan.Stochastic {
			rule.sr = philox.NewByteStream(seed, philox.OperandRowwise, group)
		}
		if err := quantizeFP4Rows(ctx, rowwise, x, res.Amax, rule); err != nil {
			return err
		}
	}
	if u&quant.UsageRowwise != 0 {
		res.Rowwise = rowwise
	}
	if u&quant.UsageColumnwise != 0 {
		o := newOperand(plan, x.Rows, x.Cols, true, nil)
		if tileRows > 1 && plan.FourOverSix == "" {
			// 2D tiles: the same codes and tile scales, transposed.
			transposeFP4(o, rowwise)
			for k := range x.Cols {
				for mb := 0; mb*16 < x.Rows; mb++ {
					o.ScaleCodes[k*o.ScaleCols+mb] = rowwise.ScaleCodes[(mb*16)*rowwise.ScaleCols+k/16]
				}
			}
			o.Scale, o.Amax = rowwise.Scale, rowwise.Amax
		} else {
			// With 4over6 a 2D tile is chosen again for this operand: its
			// errors are summed along columns, in another order, and TE
			// makes the choice per operand.
			xt := transposeInput(x)
			if plan.RHT {
				applyRHT(xt, plan.RHTSignMask)
				o.RHT, o.RHTSignMask = true, plan.RHTSignMask
			}
			rule := fp4Rule{tileRows: tileRows, bound: plan.TensorScaleBound, fourOverSix: plan.FourOverSix}
			if plan.Stochastic {
				rule.sr = philox.NewByteStream(seed, philox.OperandColumnwise, group)
			}
			if err := quantizeFP4Rows(ctx, o, xt, element.AbsMax(xt.Data), rule); err != nil {
				return err
			}
		}
		res.Columnwise = o
	}
	return swizzleOperands(res)
}

// fp4Rule is how quantizeFP4Rows scales an operand.
type fp4Rule struct {
	tileRows    int     // rows sharing a block scale: 1, or 16 for 2D tiles
	bound       float32 // the E4M3 bound of the tensor scale (448 or 256)
	fourOverSix quant.ErrorMode
	rowScaled   bool               // one tensor scale per row
	sr          *philox.ByteStream // stochastic rounding bytes, or nil
}

// quantizeFP4Rows quantizes the matrix x (already in the operand's stored
// orientation) into o with blocks of 16 along each row, shared by
// rule.tileRows consecutive rows; amax is the tensor amax of x.
func quantizeFP4Rows(ctx context.Context, o *quant.Operand, x quant.Tensor, amax float32, rule fp4Rule) error {
	const b = 16
	s := scaling.NVFP4TensorScaleBounded(amax, rule.bound)
	o.Scale, o.Amax, o.Stochastic = s, amax, rule.sr != nil
	if rule.rowScaled {
		o.Scale = 0
		o.RowAmax, o.RowScale = make([]float32, x.Rows), make([]float32, x.Rows)
		for m := range x.Rows {
			o.RowAmax[m] = element.AbsMax(x.Row(m))
			o.RowScale[m] = scaling.NVFP4TensorScaleBounded(o.RowAmax[m], rule.bound)
		}
	}
	nkb := (x.Cols + b - 1) / b
	blockAmax := make([]float32, nkb)
	colAmax := make([]float32, x.Cols)
	factors := make([]float32, nkb)
	codes := make([]byte, rule.tileRows*x.Cols)
	stride := o.RowStride()
	for m0 := 0; m0 < x.Rows; m0 += rule.tileRows {
		if m0%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		m1 := min(m0+rule.tileRows, x.Rows)
		if rule.tileRows == 1 {
			row := x.Row(m0)
			for kb := range blockAmax {
				blockAmax[kb] = element.AbsMax(row[kb*b : min(kb*b+b, x.Cols)])
			}
		} else {
			columnAmax(colAmax, x, m0, m1)
			groupMax(blockAmax, colAmax, b)
		}
		if rule.fourOverSix != "" {
			tileAmax, tileScale := amax, s
			if rule.rowScaled {
				tileAmax, tileScale = o.RowAmax[m0], o.RowScale[m0]
			}
			fourOverSixTile(o, x, m0, m1, blockAmax, tileAmax, tileScale, rule, codes)
			for m := m0; m < m1; m++ {
				packFP4(o.Data[m*stride:(m+1)*stride], codes[(m-m0)*x.Cols:(m-m0+1)*x.Cols])
			}
			continue
		}
		tileScale := s
		if rule.rowScaled {
			tileScale = o.RowScale[m0]
		}
		sInv := 1 / tileScale
		for kb, a := range blockAmax {
			d := scaling.NVFP4BlockScale(a, tileScale)
			factors[kb] = scaling.NVFP4ElementFactorInv(d, sInv)
			for m := m0; m < m1; m++ {
				o.ScaleCodes[m*o.ScaleCols+kb] = d
			}
		}
		rowCodes := codes[:x.Cols]
		for m := m0; m < m1; m++ {
			row := x.Row(m)
			for kb, f := range factors {
				k0, k1 := kb*b, min(kb*b+b, x.Cols)
				if rule.sr == nil {
					element.E2M1.EncodeScaled(rowCodes[k0:k1], row[k0:k1], f)
					continue
				}
				base := uint64(m)*uint64(x.Cols) + uint64(k0)
				for k := k0; k < k1; k++ {
					rowCodes[k] = element.ToE2M1Stochastic(row[k]*f, rule.sr.At(base+uint64(k-k0)))
				}
			}
			packFP4(o.Data[m*stride:(m+1)*stride], rowCodes)
		}
	}
	return nil
}

// fourOverSixTile quantizes rows m0..m1 of x with 4over6 (TE's
// nvfp4_4over6): every block encodes both candidates of
// scaling.NewFourOverSix, sums each one's error (scaling.FourOverSixError)
// in element order per row, and for a 16x16 tile adds the 16 row sums in
// scaling.SumTree16's order; the block keeps the map-to-4 candidate only
// when its error is strictly smaller (ties and NaN keep map-to-6). tileAmax
// and tileScale are the amax and scale of the tensor (of the row when
// row-scaled). The codes of the tile go to codes, row after row.
func fourOverSixTile(o *quant.Operand, x quant.Tensor, m0, m1 int, blockAmax []float32, tileAmax, tileScale float32, rule fp4Rule, codes []byte) {
	const b = 16
	squared := rule.fourOverSix == quant.ErrorMSE
	var map4, map6 [b]byte
	for kb, a := range blockAmax {
		c := scaling.NewFourOverSix(a, tileScale)
		k0, k1 := kb*b, min(kb*b+b, x.Cols)
		var err4, err6 [16]float32 // per row of the tile
		for m := m0; m < m1; m++ {
			xs := x.Row(m)[k0:k1]
			element.E2M1.EncodeScaled(map4[:len(xs)], xs, c.Inv4)
			element.E2M1.EncodeScaled(map6[:len(xs)], xs, c.Inv6)
			var e4, e6 float32
			for k, v := range xs {
				e4 += scaling.FourOverSixError(map4[k], c.Map4, v, tileAmax, rule.bound, squared)
				e6 += scaling.FourOverSixError(map6[k], c.Map6, v, tileAmax, rule.bound, squared)
			}
			err4[m-m0], err6[m-m0] = e4, e6
		}
		pick4 := err4[0] < err6[0]
		if rule.tileRows > 1 {
			pick4 = scaling.SumTree16(err4) < scaling.SumTree16(err6)
		}
		d, inv := c.Map6, c.Inv6
		if pick4 {
			d, inv = c.Map4, c.Inv4
		}
		for m := m0; m < m1; m++ {
			o.ScaleCodes[m*o.ScaleCols+kb] = d
			row := codes[(m-m0)*x.Cols : (m-m0+1)*x.Cols]
			element.E2M1.EncodeScaled(row[k0:k1], x.Row(m)[k0:k1], inv)
		}
	}
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
