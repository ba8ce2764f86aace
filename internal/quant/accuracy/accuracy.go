package accuracy

import (
	"fmt"
	"math"

	"github.com/kquant/kquant/internal/quant"
)

// Metrics are the accuracy figures of one operand against its input.
type Metrics struct {
	SNRdB         float64
	MaxAbsError   float64
	Saturated     int
	FlushedToZero int
	NonFinite     int
	Elements      int
}

// Compare returns SNR and max abs error of approx against exact (same
// shape), without the code-level counts (Saturated and FlushedToZero stay
// 0: Count owns them). It serves outputs that are not quantized
// themselves, such as a GEMM result, and Measure.
func Compare(exact, approx quant.Tensor) (Metrics, error) {
	if exact.Rows != approx.Rows || exact.Cols != approx.Cols || len(exact.Data) != len(approx.Data) {
		return Metrics{}, fmt.Errorf("comparing [%d, %d] with [%d, %d]", exact.Rows, exact.Cols, approx.Rows, approx.Cols)
	}
	var m Metrics
	var sig, noise float64
	for i, x := range exact.Data {
		xf := float64(x)
		if math.IsNaN(xf) || math.IsInf(xf, 0) {
			m.NonFinite++
			continue
		}
		y := float64(approx.Data[i])
		d := xf - y
		sig += xf * xf
		noise += d * d
		if ad := math.Abs(d); ad > m.MaxAbsError || ad != ad {
			m.MaxAbsError = ad
		}
	}
	m.Elements = len(exact.Data)
	m.SNRdB = snr(sig, noise)
	return m, nil
}

func snr(sig, noise float64) float64 {
	switch {
	case noise == 0:
		return math.Inf(1)
	case sig == 0:
		return math.Inf(-1)
	}
	return 10 * math.Log10(sig/noise)
}

// Measure compares the rowwise operand of res, dequantized as deq, with the
// input x it was quantized from, and adds the contract's saturated and
// flushed-to-zero counts (Count).
func Measure(x quant.Tensor, res *quant.Result, deq quant.Tensor) (Metrics, error) {
	o := res.Rowwise
	if o == nil {
		return Metrics{}, fmt.Errorf("measuring: result has no rowwise operand")
	}
	if o.Rows != x.Rows || o.Cols != x.Cols {
		return Metrics{}, fmt.Errorf("measuring: operand [%d, %d] does not match input [%d, %d]", o.Rows, o.Cols, x.Rows, x.Cols)
	}
	m, err := Compare(x, deq)
	if err != nil {
		return Metrics{}, fmt.Errorf("measuring: %w", err)
	}
	c, err := Count(x, res)
	if err != nil {
		return Metrics{}, fmt.Errorf("measuring: %w", err)
	}
	m.Saturated, m.FlushedToZero = c.Saturated, c.FlushedToZero
	return m, nil
}
