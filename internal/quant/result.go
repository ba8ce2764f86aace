// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quant

import (
	"fmt"

	"github.com/kquant/kquant/internal/quant/element"
)

// Usage selects which operands a quantize produces or a dequantize reads.
type Usage uint8

// The usages. In a Request the zero value means UsageBoth.
const (
	UsageRowwise    Usage = 1 << iota // the [rows, cols] operand (fprop, dgrad)
	UsageColumnwise                   // the operand along columns (wgrad)
	UsageBoth       = UsageRowwise | UsageColumnwise
)

// String names a single usage as messages do: "rowwise" or "columnwise".
func (u Usage) String() string {
	switch u {
	case UsageRowwise:
		return "rowwise"
	case UsageColumnwise:
		return "columnwise"
	default:
		return fmt.Sprintf("usage %d", uint8(u))
	}
}

// Result is a quantized tensor. Rowwise and Columnwise are nil when the
// request did not ask for them.
type Result struct {
	Plan       Plan
	Role       TensorRole
	Rows, Cols int     // the input's shape
	Amax       float32 // max |x| of the input, NaN ignored
	Rowwise    *Operand
	Columnwise *Operand
}

// Operand returns the rowwise or columnwise operand (nil if absent or if u
// is not exactly one of the two).
func (r *Result) Operand(u Usage) *Operand {
	switch u {
	case UsageRowwise:
		return r.Rowwise
	case UsageColumnwise:
		return r.Columnwise
	default:
		return nil
	}
}

// Operand is one quantized operand: codes plus the scales that decode them.
type Operand struct {
	Element element.Type
	// Rows x Cols is the operand's element shape as stored: the input's
	// shape, or its transpose when Transposed.
	Rows, Cols int
	Transposed bool
	// Data holds the codes row-major; E2M1 codes are packed two per byte
	// (lower column in the low nibble) with RowStride bytes per row.
	Data []byte
	// Scales says which of ScaleInv and ScaleCodes holds the decode
	// scales; the matrix is ScaleRows x ScaleCols (TE's padded shape),
	// padding zero.
	Scales               ScaleKind
	ScaleRows, ScaleCols int
	ScaleInv             []float32
	ScaleCodes           []byte
	// Swizzled is the scale matrix in the GEMM layout (MXFP8, NVFP4).
	Swizzled []byte
	// Scale is the per-tensor FP8 encode scale, or NVFP4's tensor encode
	// scale S; zero for recipes without one and for row-scaled operands.
	Scale float32
	// RowAmax and RowScale are, for a row-scaled NVFP4 operand, each row's
	// amax (what TE stores as the operand's amax vector) and the tensor
	// encode scale S derived from it; nil otherwise.
	RowAmax, RowScale []float32
	// Amax is max |x| over the values this operand quantized: the input,
	// or for an NVFP4 operand with the RHT the transformed values.
	Amax        float32
	RHT         bool
	RHTSignMask uint16
	Stochastic  bool
}

// TensorScale returns the NVFP4 tensor encode scale S that applies to row
// i of the stored operand: the row's own for a row-scaled operand, else
// Scale.
func (o *Operand) TensorScale(i int) float32 {
	if o.RowScale != nil {
		return o.RowScale[i]
	}
	return o.Scale
}

// RowStride returns the number of bytes per row of Data.
func (o *Operand) RowStride() int {
	if o.Element == element.E2M1 {
		return (o.Cols + 1) / 2
	}
	return o.Cols
}

// Code returns the code of element (i, j) of the stored operand, unpacked.
func (o *Operand) Code(i, j int) uint8 {
	if o.Element == element.E2M1 {
		b := o.Data[i*o.RowStride()+j/2]
		if j%2 == 1 {
			return b >> 4
		}
		return b & 0xF
	}
	return o.Data[i*o.Cols+j]
}
