// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package element

import (
	"fmt"
	"math"
	"testing"
)

func TestEncodeScaledMatchesScalarOnAllBF16(t *testing.T) {
	src := make([]float32, 1<<16)
	for h := range src {
		src[h] = BF16ToFloat32(uint16(h))
	}
	for _, typ := range fp8Types {
		for _, s := range sweepScales {
			t.Run(fmt.Sprintf("%v/scale=%g", typ, s), func(t *testing.T) {
				want := make([]uint8, len(src))
				scales := make([]float32, len(src))
				for i, x := range src {
					want[i] = typ.Encode(x * s)
					scales[i] = s
				}
				got := make([]uint8, len(src))
				typ.EncodeScaled(got, src, s)
				if i := firstDiff(want, got); i >= 0 {
					t.Errorf("EncodeScaled(%g) = %#x, scalar Encode gives %#x", src[i], got[i], want[i])
				}
				clear(got)
				typ.EncodeScaledEach(got, src, scales)
				if i := firstDiff(want, got); i >= 0 {
					t.Errorf("EncodeScaledEach(%g) = %#x, scalar Encode gives %#x", src[i], got[i], want[i])
				}
			})
		}
	}
}

func TestAbsMax(t *testing.T) {
	nan := float32(math.NaN())
	cases := []struct {
		name string
		in   []float32
		want float32
	}{
		{"empty", nil, 0},
		{"negative wins", []float32{1, -3, 2}, 3},
		{"NaN ignored", []float32{nan, 1, nan}, 1},
		{"all NaN", []float32{nan}, 0},
		{"inf", []float32{1, float32(math.Inf(-1))}, float32(math.Inf(1))},
		{"negative zero", []float32{float32(math.Copysign(0, -1))}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := AbsMax(tc.in); got != tc.want || math.Signbit(float64(got)) {
				t.Errorf("AbsMax(%v) = %g, want %g", tc.in, got, tc.want)
			}
		})
	}
}

// firstDiff returns the first index where a and b differ, or -1. Slices of
// 65,536 codes are compared directly: a cmp.Diff of them would be slow and
// unreadable.
func firstDiff(a, b []uint8) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
