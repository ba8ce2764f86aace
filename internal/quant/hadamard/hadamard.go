// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package hadamard

import (
	"math"

	"github.com/kquant/kquant/internal/quant/element"
)

// N is the transform length.
const N = 16

// TESignMask is TransformerEngine's hard-coded RHT sign vector
// [1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1] as a mask with
// bit j set where the sign is -1.
const TESignMask uint16 = 0xD7E8

// negMask returns, for output row i, the mask of input positions j whose
// term enters with a minus sign: H[i][j] = -1 xor s_j = -1.
func negMask(i int, signs uint16) uint16 {
	var m uint16
	for j := range N {
		odd := popcount4(i&j)&1 == 1
		neg := signs>>j&1 == 1
		if odd != neg {
			m |= 1 << j
		}
	}
	return m
}

func popcount4(v int) int {
	return v&1 + v>>1&1 + v>>2&1 + v>>3&1
}

// Matrix is the transform for one sign mask: Apply for the contract's
// evaluation, Inverse for analysis.
type Matrix struct {
	neg   [N]uint16 // neg[i] bit j: row i's term j enters with a minus sign
	signs uint16
}

// NewMatrix returns the transform for the given sign mask.
func NewMatrix(signs uint16) Matrix {
	m := Matrix{signs: signs}
	for i := range N {
		m.neg[i] = negMask(i, signs)
	}
	return m
}

// Signs returns the sign mask the matrix was built with.
func (m *Matrix) Signs() uint16 { return m.signs }

// Apply sets y to the transform of x in the contract's evaluation order
// (see the package documentation): signs and ×0.25 on the inputs, the
// four-stage butterfly in float32, each result rounded to BF16 (returned
// widened to float32, so that amax and quantization read the rounded
// values). x and y may alias.
func (m *Matrix) Apply(y, x *[N]float32) {
	var v [N]float32
	for j := range N {
		// Multiply, then flip the sign: round to nearest even is
		// symmetric, so this is the same as scaling -x[j].
		v[j] = math.Float32frombits(math.Float32bits(x[j]*0.25) ^ uint32(m.signs>>j&1)<<31)
	}
	for h := 1; h < N; h <<= 1 {
		for i := range N {
			if i&h == 0 {
				a, b := v[i], v[i+h]
				v[i], v[i+h] = a+b, a-b
			}
		}
	}
	for i := range N {
		y[i] = element.BF16ToFloat32(element.Float32ToBF16(v[i]))
	}
}

// Inverse sets x to diag(s) · H16 · y / 4, the exact-arithmetic inverse of
// Apply (the transform is orthogonal), evaluated in float64 and rounded
// once. It is for analysis (comparing a dequantized columnwise operand with
// the input), not part of the byte contract.
func (m *Matrix) Inverse(x, y *[N]float32) {
	for j := range N {
		acc := 0.0
		for i := range N {
			// Column j of H·diag(s) is row j of its transpose; the
			// pattern is symmetric in H, so reuse neg[i] bit j.
			if m.neg[i]>>j&1 == 1 {
				acc -= float64(y[i])
			} else {
				acc += float64(y[i])
			}
		}
		x[j] = float32(acc * 0.25)
	}
}

// ApplyRuns transforms every run of N consecutive elements of row in place;
// a partial run at the end is zero-padded to N and only its existing
// outputs are kept (as the kernels do).
func (m *Matrix) ApplyRuns(row []float32) {
	var v [N]float32
	for k0 := 0; k0 < len(row); k0 += N {
		k1 := min(k0+N, len(row))
		v = [N]float32{}
		copy(v[:], row[k0:k1])
		m.Apply(&v, &v)
		copy(row[k0:k1], v[:])
	}
}
