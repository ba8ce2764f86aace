// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package accuracy

import (
	"context"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/reference"
)

func tensor(rows, cols int, v ...float32) quant.Tensor {
	return quant.Tensor{Rows: rows, Cols: cols, Data: v}
}

func TestCompare(t *testing.T) {
	nan := float32(math.NaN())
	cases := []struct {
		name          string
		exact, approx quant.Tensor
		want          Metrics
	}{
		{"identical", tensor(1, 2, 1, 2), tensor(1, 2, 1, 2), Metrics{SNRdB: math.Inf(1), Elements: 2}},
		{"10x smaller noise is 20 dB", tensor(1, 1, 10), tensor(1, 1, 9), Metrics{SNRdB: 20, MaxAbsError: 1, Elements: 1}},
		{"flushed is not Compare's to count", tensor(1, 2, 1, 0.001), tensor(1, 2, 1, 0), Metrics{SNRdB: 10 * math.Log10(1.000001/1e-6), MaxAbsError: 0.001, Elements: 2}},
		{"non-finite inputs skipped", tensor(1, 3, nan, float32(math.Inf(1)), 2), tensor(1, 3, 0, 448, 2), Metrics{SNRdB: math.Inf(1), NonFinite: 2, Elements: 3}},
		{"zero signal", tensor(1, 1, 0), tensor(1, 1, 1), Metrics{SNRdB: math.Inf(-1), MaxAbsError: 1, Elements: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Compare(tc.exact, tc.approx)
			if err != nil {
				t.Fatal(err)
			}
			approxFloat := cmp.Comparer(func(a, b float64) bool {
				return a == b || math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(a))
			})
			if diff := cmp.Diff(tc.want, got, approxFloat); diff != "" {
				t.Errorf("Compare (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Compare(tensor(1, 1, 1), tensor(1, 2, 1, 1)); err == nil {
		t.Error("shape mismatch accepted")
	}
}

func TestMeasureCountsSaturationAndFlush(t *testing.T) {
	// Delayed scaling with scale 1: 1000, -1000 and 470 are beyond E4M3's
	// midpoint 464 and clamp; 455 is above 448 but rounds to 448 by itself,
	// so it is not counted; 1e-4 flushes to zero; 448 is the max code.
	r := quant.DefaultRecipe(quant.DelayedScaling)
	r.Delayed.AmaxHistoryLen = 1
	x := tensor(1, 7, 1000, -1000, 448, 1e-4, 1, 455, 470)
	_, m := measureReference(t, quant.Request{Recipe: r, Role: quant.Input, State: quant.NewState(r)}, x)
	if m.Saturated != 3 || m.FlushedToZero != 1 || m.MaxAbsError != 552 {
		t.Errorf("Measure = %+v, want 3 saturated, 1 flushed, max error 552", m)
	}
}

func TestMeasureColumnwiseOnly(t *testing.T) {
	// The example above as a [7, 1] column quantized columnwise only: the
	// transposed operand holds the same codes with the same scale, so the
	// figures are the rowwise ones: 3 saturated, 1 flushed, max error 552.
	r := quant.DefaultRecipe(quant.DelayedScaling)
	r.Delayed.AmaxHistoryLen = 1
	x := tensor(7, 1, 1000, -1000, 448, 1e-4, 1, 455, 470)
	res, m := measureReference(t, quant.Request{Recipe: r, Role: quant.Input, Usage: quant.UsageColumnwise, State: quant.NewState(r)}, x)
	if o, u := Measured(res); o != res.Columnwise || u != quant.UsageColumnwise {
		t.Fatalf("Measured = %v, %v; want the columnwise operand", o, u)
	}
	if m.Saturated != 3 || m.FlushedToZero != 1 || m.MaxAbsError != 552 || m.Elements != 7 {
		t.Errorf("Measure = %+v, want 3 saturated, 1 flushed, max error 552 over 7 elements", m)
	}
}

func TestMeasureColumnwiseRHT(t *testing.T) {
	// NVFP4 input, columnwise only: the operand is the RHT of the
	// transposed input; Measure compares it in that domain, where E2M1 with
	// 1x16 scales keeps Gaussian-like data at about 20 dB (against the
	// untransformed input it would be noise, far below 0 dB).
	x := quant.NewTensor(32, 64)
	for i := range x.Data {
		x.Data[i] = float32(math.Sin(float64(7*i+1))) * float32(1+i%5)
	}
	req := quant.Request{Recipe: quant.DefaultRecipe(quant.NVFP4BlockScaling), Role: quant.Input, Usage: quant.UsageColumnwise}
	res, m := measureReference(t, req, x)
	if res.Columnwise == nil || !res.Columnwise.RHT || res.Rowwise != nil {
		t.Fatalf("want only a columnwise RHT operand, got %+v", res)
	}
	if m.SNRdB < 15 || m.Elements != 32*64 {
		t.Errorf("Measure = %+v, want SNR >= 15 dB over %d elements", m, 32*64)
	}
}

// measureReference quantizes x on the reference backend, dequantizes the
// measured operand and measures it.
func measureReference(t *testing.T, req quant.Request, x quant.Tensor) (*quant.Result, Metrics) {
	t.Helper()
	be := reference.New()
	res, err := be.Quantize(context.Background(), req, x)
	if err != nil {
		t.Fatal(err)
	}
	_, u := Measured(res)
	deq, err := be.Dequantize(context.Background(), res, u)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Measure(x, res, deq)
	if err != nil {
		t.Fatal(err)
	}
	return res, m
}
