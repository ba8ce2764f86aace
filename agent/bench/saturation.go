package bench

import (
	"math"

	"github.com/kquant/kquant/agent/quant"
	"github.com/kquant/kquant/agent/quant/element"
)

// clipRatio is (max + half the step below max) / max of an element type:
// a scaled value at or beyond max × clipRatio would have rounded past the
// largest code had the format more range, so the saturating conversion
// clamped it. Below that it merely rounded to the largest code.
func clipRatio(t element.Type) float64 {
	switch t {
	case element.E4M3:
		return 464.0 / 448 // step 32 below 448
	case element.E5M2:
		return 61440.0 / 57344 // step 8192 below 57344
	case element.E2M1:
		return 7.0 / 6 // step 2 below 6
	default:
		return math.Inf(1)
	}
}

// saturated counts the elements of the rowwise operand that were clamped:
// their code is the largest magnitude and the input lies at least half a
// step beyond what that code decodes to. accuracy.Measure counts every
// element at the largest code whose input exceeds the decoded value, which
// includes elements that only rounded to it (the block maximum of every
// NVFP4 block whose E4M3 scale rounded down, the amax element of a
// per-tensor scale whose reciprocal rounded); reporting those would turn
// every NVFP4 run into a Warn, and the API's saturated field means
// "clamped". The ratio is taken against the decoded value, which is exact
// up to the float32 rounding of the decode factor, far below the margin.
func saturated(x quant.Tensor, res *quant.Result, deq quant.Tensor) int {
	o := res.Rowwise
	if o == nil || o.Rows != x.Rows || o.Cols != x.Cols {
		return 0
	}
	ratio := clipRatio(o.Element)
	maxCode, magnitude := o.Element.MaxCode(), ^o.Element.SignBit()
	n := 0
	for i := range x.Rows {
		for j := range x.Cols {
			if o.Code(i, j)&magnitude != maxCode {
				continue
			}
			xv := math.Abs(float64(x.Data[i*x.Cols+j]))
			yv := math.Abs(float64(deq.Data[i*x.Cols+j]))
			if xv >= yv*ratio { // false for NaN inputs, which are not clamped
				n++
			}
		}
	}
	return n
}
