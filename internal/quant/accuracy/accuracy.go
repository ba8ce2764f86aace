// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

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

// Measured is the operand of res that accuracy figures describe, by the
// contract's one rule: the rowwise operand when res has one, else the
// columnwise one. It returns the operand (nil when res has none) and its
// usage, which is what the caller dequantizes for Measure.
func Measured(res *quant.Result) (*quant.Operand, quant.Usage) {
	if res.Rowwise != nil {
		return res.Rowwise, quant.UsageRowwise
	}
	if res.Columnwise != nil {
		return res.Columnwise, quant.UsageColumnwise
	}
	return nil, 0
}

// Source returns the values that the measured operand of res (Measured)
// was quantized from, in its stored orientation: x itself, transposed, or
// after the RHT, as the operand is. Measure compares a dequantized operand
// with them; a caller combining several tensors (the groups of a grouped
// quantize) concatenates them.
func Source(x quant.Tensor, res *quant.Result) (quant.Tensor, error) {
	o, _ := Measured(res)
	if o == nil {
		return quant.Tensor{}, fmt.Errorf("result has no operand")
	}
	rows, cols := x.Rows, x.Cols
	if o.Transposed {
		rows, cols = cols, rows
	}
	if o.Rows != rows || o.Cols != cols || len(x.Data) != x.Rows*x.Cols {
		return quant.Tensor{}, fmt.Errorf("operand [%d, %d] does not match input [%d, %d]", o.Rows, o.Cols, x.Rows, x.Cols)
	}
	return quant.Tensor{Rows: rows, Cols: cols, Data: operandValues(x, o)}, nil
}

// Measure compares the measured operand of res (Measured), dequantized as
// deq, with the values it was quantized from (Source), and adds the
// contract's saturated and flushed-to-zero counts (Count).
func Measure(x quant.Tensor, res *quant.Result, deq quant.Tensor) (Metrics, error) {
	src, err := Source(x, res)
	if err != nil {
		return Metrics{}, fmt.Errorf("measuring: %w", err)
	}
	m, err := Compare(src, deq)
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
