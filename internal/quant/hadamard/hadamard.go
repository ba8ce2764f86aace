package hadamard

import "math"

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

// Matrix holds the precomputed sign pattern of H16 · diag(s) for one sign
// mask; building it once per tensor keeps the per-run loop branch-light.
type Matrix struct {
	neg   [N]uint16
	flip  [N][N]uint32 // flip[j][i]: sign bit xored into x[j] for output i
	signs uint16
}

// NewMatrix returns the transform for the given sign mask.
func NewMatrix(signs uint16) Matrix {
	var m Matrix
	m.signs = signs
	for i := range N {
		m.neg[i] = negMask(i, signs)
		for j := range N {
			if m.neg[i]>>j&1 == 1 {
				m.flip[j][i] = 0x80000000
			}
		}
	}
	return m
}

// Signs returns the sign mask the matrix was built with.
func (m *Matrix) Signs() uint16 { return m.signs }

// Apply sets y to the transform of x in the package's evaluation order. x
// and y may not alias.
//
// The sixteen sums advance together, one input at a time, so that the CPU
// overlaps them; each sum still adds its terms in j order, and a term
// enters as x[j] with its sign bit flipped, which in IEEE arithmetic is
// exactly acc - x[j].
func (m *Matrix) Apply(y, x *[N]float32) {
	var acc [N]float32
	for j := range N {
		xb := math.Float32bits(x[j])
		f := &m.flip[j]
		for i := range N {
			acc[i] += math.Float32frombits(xb ^ f[i])
		}
	}
	for i := range N {
		y[i] = acc[i] * 0.25
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
