// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quant

import (
	"bytes"
	"math"
	"slices"
)

// SameBytes reports whether two quantized results are identical in every
// byte a GEMM or a later step would read: codes, scales (float32 compared
// by bits, so NaN equals the same NaN), swizzled scales, tensor scales and
// amax, and the operands' shapes. It is the contract between the CUDA and
// the reference backend.
func SameBytes(a, b *Result) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Rows == b.Rows && a.Cols == b.Cols &&
		math.Float32bits(a.Amax) == math.Float32bits(b.Amax) &&
		sameOperand(a.Rowwise, b.Rowwise) && sameOperand(a.Columnwise, b.Columnwise)
}

func sameOperand(a, b *Operand) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Element == b.Element && a.Rows == b.Rows && a.Cols == b.Cols && a.Transposed == b.Transposed &&
		a.Scales == b.Scales && a.ScaleRows == b.ScaleRows && a.ScaleCols == b.ScaleCols &&
		math.Float32bits(a.Scale) == math.Float32bits(b.Scale) &&
		math.Float32bits(a.Amax) == math.Float32bits(b.Amax) &&
		bytes.Equal(a.Data, b.Data) && bytes.Equal(a.ScaleCodes, b.ScaleCodes) && bytes.Equal(a.Swizzled, b.Swizzled) &&
		slices.EqualFunc(a.ScaleInv, b.ScaleInv, sameBits) &&
		slices.EqualFunc(a.RowAmax, b.RowAmax, sameBits) && slices.EqualFunc(a.RowScale, b.RowScale, sameBits)
}

func sameBits(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }
