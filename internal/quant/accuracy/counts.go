// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package accuracy

import (
	"fmt"
	"math"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/internal/quant/hadamard"
	"github.com/kquant/kquant/internal/quant/scaling"
)

// Counts are the saturated and flushed-to-zero counts of one quantized
// tensor, by the contract's one rule (docs/quantization-formats.md,
// "Counting saturated and flushed elements").
type Counts struct {
	// Saturated counts finite elements whose scaled magnitude |x × scale|
	// (after the RHT where it applies) is so far above the element type's
	// largest finite value that the conversion clamped them: round to
	// nearest even, without the format's upper bound, would have given a
	// larger value (see clamps).
	Saturated int
	// FlushedToZero counts nonzero finite elements whose code is ±0.
	FlushedToZero int
}

// Count returns the counts of res, quantized from x: on the rowwise operand
// when res has one, else on the columnwise one. It is the only
// implementation of the rule; reference and GPU results, accuracy results
// and benchmarks all count through it.
//
// The scaled magnitude is the float32 product the quantizer forms: the
// element (transposed, and transformed by the RHT with its BF16 rounding,
// as the operand stores it) times the encode factor of its block, which is
// recovered exactly from the operand: the per-tensor scale, 2^(127−e) for
// an E8M0 code e, NVFP4's 1 / (d × (1/S)), and for block scaling the
// scale recomputed from the block's amax (the operand keeps only the
// rounded scale_inv, whose reciprocal need not be the scale). Elements
// that are NaN or ±inf (after the RHT) are counted in neither.
func Count(x quant.Tensor, res *quant.Result) (Counts, error) {
	o, u := Measured(res)
	columnwise := u == quant.UsageColumnwise
	if o == nil {
		return Counts{}, fmt.Errorf("counting: result has no operand")
	}
	rows, cols := x.Rows, x.Cols
	if o.Transposed {
		rows, cols = cols, rows
	}
	if o.Rows != rows || o.Cols != cols || len(x.Data) != x.Rows*x.Cols {
		return Counts{}, fmt.Errorf("counting: operand [%d, %d] does not match input [%d, %d]", o.Rows, o.Cols, x.Rows, x.Cols)
	}
	src := operandValues(x, o)
	factor, err := factors(o, res.Plan, src, columnwise)
	if err != nil {
		return Counts{}, err
	}
	clamped := clamps(o.Element)
	magnitude := ^o.Element.SignBit()
	var c Counts
	for i := range o.Rows {
		for j := range o.Cols {
			v := src[i*o.Cols+j]
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				continue
			}
			if v != 0 && o.Code(i, j)&magnitude == 0 {
				c.FlushedToZero++
			}
			// NaN factors (E8M0 code 0xFF) compare false: not counted.
			if clamped(v * factor(i, j)) {
				c.Saturated++
			}
		}
	}
	return c, nil
}

// clamps reports, for an element type, whether the conversion clamps a
// scaled value: whether round-to-nearest-even with no upper bound would give
// a value above the largest finite one. That is the contract's "above the
// format's max finite value, so that the conversion clamped them": a value
// between the max and half the top step beyond it rounds to the max by
// itself (NVFP4's block maximum lands there whenever its E4M3 block scale
// rounded down, and must not make every NVFP4 run a Warn). At the midpoint
// round-to-even decides: E4M3's max 448 (mantissa 110) keeps 464; E5M2's
// 57344 (11) and E2M1's 6 (1) are odd, so 61440 and 7 round up and clamp.
// NaN compares false: never counted.
func clamps(t element.Type) func(p float32) bool {
	var midpoint float32
	var tieClamps bool
	switch t {
	case element.E4M3:
		midpoint, tieClamps = 464, false // 448 + 32/2
	case element.E5M2:
		midpoint, tieClamps = 61440, true // 57344 + 8192/2
	default: // E2M1
		midpoint, tieClamps = 7, true // 6 + 2/2
	}
	return func(p float32) bool {
		a := float32(math.Abs(float64(p)))
		return a > midpoint || (tieClamps && a == midpoint)
	}
}

// operandValues returns x in the operand's stored orientation, transformed
// by the operand's RHT when it has one.
func operandValues(x quant.Tensor, o *quant.Operand) []float32 {
	if !o.Transposed && !o.RHT {
		return x.Data
	}
	src := make([]float32, len(x.Data))
	if o.Transposed {
		for i := range x.Rows {
			for j := range x.Cols {
				src[j*x.Rows+i] = x.Data[i*x.Cols+j]
			}
		}
	} else {
		copy(src, x.Data)
	}
	if o.RHT {
		h := hadamard.NewMatrix(o.RHTSignMask)
		for i := range o.Rows {
			h.ApplyRuns(src[i*o.Cols : (i+1)*o.Cols])
		}
	}
	return src
}

// factors returns the encode factor of element (i, j) of o, whose values
// in stored orientation are src.
func factors(o *quant.Operand, plan quant.Plan, src []float32, columnwise bool) (func(i, j int) float32, error) {
	index := func(i, j int) int { return plan.ScaleIndex(i, j, o.ScaleCols, columnwise) }
	switch {
	case o.Scales == quant.ScaleFloat32 && plan.PerTensor():
		s := o.Scale
		return func(int, int) float32 { return s }, nil
	case o.Scales == quant.ScaleFloat32:
		// Block scaling: the scale from each block's amax, as quantized.
		amax := make([]float32, len(o.ScaleInv))
		for i := range o.Rows {
			for j := range o.Cols {
				if a := float32(math.Abs(float64(src[i*o.Cols+j]))); a > amax[index(i, j)] {
					amax[index(i, j)] = a // NaN compares false: ignored
				}
			}
		}
		scale := make([]float32, len(amax))
		for k, a := range amax {
			scale[k] = scaling.FromAmax(a, o.Element.MaxFinite(), plan.Epsilon, plan.Power2Scales)
		}
		return func(i, j int) float32 { return scale[index(i, j)] }, nil
	case o.Scales == quant.ScaleE8M0:
		return func(i, j int) float32 { return scaling.MXFP8Factor(o.ScaleCodes[index(i, j)]) }, nil
	case o.Scales == quant.ScaleE4M3:
		return func(i, j int) float32 {
			return scaling.NVFP4ElementFactorInv(o.ScaleCodes[index(i, j)], 1/o.TensorScale(i))
		}, nil
	default:
		return nil, fmt.Errorf("counting: operand has scales of kind %v", o.Scales)
	}
}
