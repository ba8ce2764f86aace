// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package element

import (
	"math"
	"testing"
)

// FuzzConversions checks every conversion against the oracle on arbitrary
// float32 bit patterns, which reaches precisions the BF16 sweep cannot.
func FuzzConversions(f *testing.F) {
	for _, b := range []uint32{0, 0x3F800000, 0x43E80000, 0x7F800000, 0x7FC00000, 0x80000001, 0x3A800000} {
		f.Add(b, uint8(0))
	}
	f.Fuzz(func(t *testing.T, b uint32, r uint8) {
		x := math.Float32frombits(b)
		for _, typ := range fp8Types {
			if got, want := typ.Encode(x), oracleEncode(typ, float64(x)); got != want {
				t.Fatalf("%v(%g) = %#x, oracle %#x", typ, x, got, want)
			}
		}
		if got, want := E8M0RoundUp(x), oracleE8M0RoundUp(x); got != want {
			t.Fatalf("E8M0RoundUp(%g) = %#x, oracle %#x", x, got, want)
		}
		if got, want := ToE2M1Stochastic(x, r), oracleE2M1Stochastic(x, r); got != want {
			t.Fatalf("ToE2M1Stochastic(%g, %d) = %#x, oracle %#x", x, r, got, want)
		}
	})
}
