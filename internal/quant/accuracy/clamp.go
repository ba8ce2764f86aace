package accuracy

import (
	"math"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
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

// Clamped counts the elements of the rowwise operand of res that the
// conversion clamped: their code is the largest magnitude and the input
// lies at least half a step beyond what that code decodes to (deq). An
// element that only rounded to the largest code (the block maximum of an
// NVFP4 block whose E4M3 scale rounded down, the amax element of a
// per-tensor scale whose reciprocal rounded) is not clamped: counting it
// would make nearly every NVFP4 run look saturated. The ratio is taken
// against the decoded value, exact up to the float32 rounding of the decode
// factor, far below the margin. NaN inputs are never clamped. An operand
// whose shape differs from x counts 0.
func Clamped(x quant.Tensor, res *quant.Result, deq quant.Tensor) int {
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
			if xv >= yv*ratio { // false for NaN inputs
				n++
			}
		}
	}
	return n
}
