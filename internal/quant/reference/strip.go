// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package reference

import (
	"context"
	"math"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
)

// eachRow calls f for rows 0..rows-1, checking ctx every ctxEvery rows.
func eachRow(ctx context.Context, rows int, f func(m int)) error {
	for m := range rows {
		if m%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		f(m)
	}
	return nil
}

// eachStrip calls f for each strip of b rows [m0, m1) of x, with amax[k]
// the largest magnitude of column k in the strip (columnAmax), checking ctx
// before each strip.
func eachStrip(ctx context.Context, x quant.Tensor, b int, f func(m0, m1 int, amax []float32)) error {
	amax := make([]float32, x.Cols)
	for m0 := 0; m0 < x.Rows; m0 += b {
		if err := ctx.Err(); err != nil {
			return err
		}
		m1 := min(m0+b, x.Rows)
		columnAmax(amax, x, m0, m1)
		f(m0, m1, amax)
	}
	return nil
}

// encodeStrip encodes rows [m0, m1) of x into dst, laid out as x, with
// one scale per column.
func encodeStrip(t element.Type, dst []byte, x quant.Tensor, m0, m1 int, scales []float32) {
	for m := m0; m < m1; m++ {
		t.EncodeScaledEach(dst[m*x.Cols:(m+1)*x.Cols], x.Row(m), scales)
	}
}

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
