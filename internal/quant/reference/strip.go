package reference

import (
	"math"

	"github.com/kquant/kquant/internal/quant"
)

// columnAmax sets out[k] to max |x[m, k]| over rows [m0, m1), NaN ignored,
// comparing bit patterns as element.AbsMax does.
func columnAmax(out []float32, x quant.Tensor, m0, m1 int) {
	bits := make([]uint32, x.Cols)
	for m := m0; m < m1; m++ {
		row := x.Row(m)
		for k, v := range row {
			a := math.Float32bits(v) & 0x7FFFFFFF
			if a > bits[k] && a <= 0x7F800000 {
				bits[k] = a
			}
		}
	}
	for k, b := range bits {
		out[k] = math.Float32frombits(b)
	}
}

// groupMax sets out[g] to the largest of in[g*b : (g+1)*b] (in holds
// nonnegative, NaN-free amaxes).
func groupMax(out, in []float32, b int) {
	for g := range out {
		m := float32(0)
		for _, v := range in[g*b : min((g+1)*b, len(in))] {
			if v > m {
				m = v
			}
		}
		out[g] = m
	}
}
