// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scaling

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kquant/kquant/internal/quant/element"
)

var (
	inf = float32(math.Inf(1))
	nan = float32(math.NaN())
)

func TestFromAmax(t *testing.T) {
	cases := []struct {
		name                 string
		amax, fp8Max, eps    float32
		pow2                 bool
		want                 float32
		wantBitsInsteadOfVal bool
	}{
		{name: "zero amax gives 1", amax: 0, fp8Max: 448, want: 1},
		{name: "inf amax gives 1", amax: inf, fp8Max: 448, want: 1},
		{name: "NaN amax gives 1", amax: nan, fp8Max: 448, want: 1},
		{name: "amax equal to max gives 1", amax: 448, fp8Max: 448, want: 1},
		{name: "amax 1", amax: 1, fp8Max: 448, want: 448},
		{name: "amax 3 rounds the quotient", amax: 3, fp8Max: 448, want: float32(448.0 / 3)},
		{name: "E5M2 max", amax: 2, fp8Max: 57344, want: 28672},
		{name: "pow2 rounds 448 down to 256", amax: 1, fp8Max: 448, pow2: true, want: 256},
		{name: "pow2 keeps exact powers", amax: 448.0 / 64, fp8Max: 448, pow2: true, want: 64},
		{name: "pow2 below one", amax: 1000, fp8Max: 448, pow2: true, want: 0.25},
		{name: "overflow becomes float32 max", amax: 0x1p-149, fp8Max: 448, want: math.MaxFloat32},
		{name: "overflow with pow2 becomes 2^127", amax: 0x1p-149, fp8Max: 448, pow2: true, want: 0x1p127},
		{name: "epsilon raises zero amax", amax: 0, fp8Max: 448, eps: 0.5, want: 896},
		{name: "epsilon raises small amax", amax: 0.25, fp8Max: 448, eps: 0.5, want: 896},
		{name: "epsilon below amax does nothing", amax: 2, fp8Max: 448, eps: 0.5, want: 224},
		{name: "epsilon with NaN amax gives 1", amax: nan, fp8Max: 448, eps: 0.5, want: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := FromAmax(tc.amax, tc.fp8Max, tc.eps, tc.pow2); got != tc.want {
				t.Errorf("FromAmax(%g, %g, %g, %v) = %g, want %g", tc.amax, tc.fp8Max, tc.eps, tc.pow2, got, tc.want)
			}
		})
	}
}

func TestDelayedUpdate(t *testing.T) {
	cases := []struct {
		name        string
		scale       float32
		history     []float32
		margin      int
		algo        AmaxAlgo
		wantScale   float32
		wantHistory []float32
	}{
		{"zero amax changes nothing", 3, []float32{0, 0, 0}, 0, AmaxMax, 3, []float32{0, 0, 0}},
		{"max over history, then roll and zero entry 0", 1, []float32{2, 0, 5}, 0, AmaxMax, 448.0 / 5, []float32{0, 5, 2}},
		{"max includes entry 0", 1, []float32{8, 1, 2}, 0, AmaxMax, 56, []float32{0, 2, 8}},
		{"most recent ignores older entries, roll drops entry 1", 1, []float32{4, 100}, 0, AmaxMostRecent, 112, []float32{0, 4}},
		{"most recent zero changes nothing even with history", 7, []float32{0, 100}, 0, AmaxMostRecent, 7, []float32{0, 100}},
		{"margin 2 divides by 4", 1, []float32{7}, 2, AmaxMax, 16, []float32{0}},
		{"history length 1 just zeroes", 1, []float32{448}, 0, AmaxMostRecent, 1, []float32{0}},
		{"inf amax keeps scale but rolls", 5, []float32{inf, 1}, 0, AmaxMax, 5, []float32{0, inf}},
		{"NaN in history keeps scale but rolls", 5, []float32{1, nan, 2}, 0, AmaxMax, 5, []float32{0, 2, 1}},
		{"tiny amax overflows to float32 max", 1, []float32{0x1p-149}, 0, AmaxMax, math.MaxFloat32, []float32{0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := append([]float32(nil), tc.history...)
			got := DelayedUpdate(tc.scale, h, 448, tc.margin, tc.algo)
			if got != tc.wantScale {
				t.Errorf("scale = %g, want %g", got, tc.wantScale)
			}
			if diff := cmp.Diff(tc.wantHistory, h, cmp.Comparer(func(a, b float32) bool {
				return a == b || a != a && b != b
			})); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMXFP8ExponentVectors(t *testing.T) {
	cases := []struct {
		name  string
		amax  float32
		typ   element.Type
		round Rounding
		want  uint8
	}{
		{"TE amax 448 gives 2^0", 448, element.E4M3, RoundingTE, 127},
		{"OCP amax 448 gives 2^0", 448, element.E4M3, RoundingOCP, 127},
		{"TE significand 1.75 exact", 14, element.E4M3, RoundingTE, 122},
		{"OCP significand 1.75", 14, element.E4M3, RoundingOCP, 122},
		{"TE significand 1.8 rounds up", 14.4, element.E4M3, RoundingTE, 123},
		{"OCP significand 1.8 floors", 14.4, element.E4M3, RoundingOCP, 122},
		{"TE significand 1.5", 12, element.E4M3, RoundingTE, 122},
		{"TE E5M2 amax 57344", 57344, element.E5M2, RoundingTE, 127},
		{"OCP E5M2 amax 57344", 57344, element.E5M2, RoundingOCP, 127},
		{"TE zero block", 0, element.E4M3, RoundingTE, 0},
		{"OCP zero block", 0, element.E4M3, RoundingOCP, 0},
		{"TE inf block", inf, element.E4M3, RoundingTE, 0xFE},
		{"TE float32 max amax", math.MaxFloat32, element.E4M3, RoundingTE, 0xF7},
		{"TE tiny amax gives subnormal t, no increment", 0x1p-120, element.E4M3, RoundingTE, 0},
		{"OCP tiny amax clamps at 0", 0x1p-130, element.E4M3, RoundingOCP, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := MXFP8Exponent(tc.amax, tc.typ, tc.round); got != tc.want {
				t.Errorf("MXFP8Exponent(%g, %v, %d) = %d, want %d", tc.amax, tc.typ, tc.round, got, tc.want)
			}
		})
	}
}

func TestMXFP8TEAndOCPDifferExactlyAboveSignificand1p75(t *testing.T) {
	// For E4M3 and every BF16 amax whose t is a normal float32, TE's
	// exponent is OCP's plus one exactly when the significand of amax
	// exceeds 1.75, and equal otherwise.
	for h := uint32(0x0080); h < 0x7F80; h++ {
		amax := math.Float32frombits(h << 16)
		if amax < 448*0x1p-126 {
			continue
		}
		te := MXFP8Exponent(amax, element.E4M3, RoundingTE)
		ocp := MXFP8Exponent(amax, element.E4M3, RoundingOCP)
		above := math.Float32bits(amax)&0x7FFFFF > 0x600000
		want := ocp
		if above {
			want = ocp + 1
		}
		if te != want {
			t.Fatalf("amax %g: TE %d, OCP %d, significand above 1.75: %v", amax, te, ocp, above)
		}
	}
}

func TestMXFP8TEScaledBlockNeverSaturates(t *testing.T) {
	// With TE rounding and a normal t, amax * 2^(127-e) <= 448.
	for h := uint32(0x0080); h < 0x7F80; h++ {
		amax := math.Float32frombits(h << 16)
		if amax < 448*0x1p-126 {
			continue
		}
		e := MXFP8Exponent(amax, element.E4M3, RoundingTE)
		if v := amax * MXFP8Factor(e); v > 448 {
			t.Fatalf("amax %g: e %d scales to %g > 448", amax, e, v)
		}
	}
}

func TestMXFP8FactorInvertsDecode(t *testing.T) {
	for e := range 255 {
		f := MXFP8Factor(uint8(e))
		if got := f * element.E8M0ToFloat32(uint8(e)); got != 1 {
			t.Errorf("factor(%d) * decode(%d) = %g", e, e, got)
		}
	}
	if f := MXFP8Factor(255); f == f {
		t.Errorf("factor(255) = %g, want NaN", f)
	}
}

func TestNVFP4Scales(t *testing.T) {
	t.Run("tensor scale", func(t *testing.T) {
		cases := []struct {
			amax, want float32
		}{
			{0, 1},
			{inf, 1},
			{2688, 1},
			{1, 2688},
			{3, float32(2688.0 / 3)},
			{0x1p-149, math.MaxFloat32},
		}
		for _, tc := range cases {
			if got := NVFP4TensorScale(tc.amax); got != tc.want {
				t.Errorf("NVFP4TensorScale(%g) = %g, want %g", tc.amax, got, tc.want)
			}
		}
	})
	t.Run("block scale", func(t *testing.T) {
		cases := []struct {
			name         string
			blockAmax, s float32
			want         uint8
		}{
			{"tensor amax block gets 448", 2688.0 / 2688, 2688, 0x7E},
			{"block at a third", 1, 2688.0 / 3, element.ToE4M3(float32(2688.0/3) / 6)},
			{"zero block", 0, 2688, 0},
			{"saturates", 1e30, 2688, 0x7E},
			{"underflows to zero", 1e-9, 1, 0},
		}
		for _, tc := range cases {
			if got := NVFP4BlockScale(tc.blockAmax, tc.s); got != tc.want {
				t.Errorf("%s: NVFP4BlockScale(%g, %g) = %#x, want %#x", tc.name, tc.blockAmax, tc.s, got, tc.want)
			}
		}
	})
	t.Run("element factor", func(t *testing.T) {
		cases := []struct {
			name string
			d    uint8
			s    float32
			want float32
		}{
			{"zero block scale clamps to float32 max", 0, 2688, math.MaxFloat32},
			{"d = 448 with S = 2688 gives 6", 0x7E, 2688, 6},
			{"d = 1 with S = 1", 0x38, 1, 1},
			{"tiny d with huge S clamps", 0x01, math.MaxFloat32, math.MaxFloat32},
		}
		for _, tc := range cases {
			if got := NVFP4ElementFactor(tc.d, tc.s); got != tc.want {
				t.Errorf("%s: NVFP4ElementFactor(%#x, %g) = %g, want %g", tc.name, tc.d, tc.s, got, tc.want)
			}
		}
	})
	t.Run("decode", func(t *testing.T) {
		// 6 * 448 / 2688 = 1
		if got := NVFP4Decode(0x7, 0x7E, 2688); got != 1 {
			t.Errorf("NVFP4Decode(6, 448, 2688) = %g, want 1", got)
		}
		if got := NVFP4Decode(0xF, 0x38, 2); got != -3 {
			t.Errorf("NVFP4Decode(-6, 1, 2) = %g, want -3", got)
		}
	})
}

func TestMXFP8RuleMatchesMXFP8Exponent(t *testing.T) {
	for _, typ := range []element.Type{element.E4M3, element.E5M2} {
		for _, r := range []Rounding{RoundingTE, RoundingOCP} {
			rule := NewMXFP8Rule(typ, r)
			for h := range 1 << 16 {
				a := element.BF16ToFloat32(uint16(h))
				if got, want := rule.Exponent(a), MXFP8Exponent(a, typ, r); got != want {
					t.Fatalf("%v/%d: rule(%g) = %d, MXFP8Exponent = %d", typ, r, a, got, want)
				}
			}
		}
	}
}

func TestNVFP4ElementFactorInvMatches(t *testing.T) {
	for _, s := range []float32{1, 448, 2688, 3.7, 1e-30, math.MaxFloat32, 0x1p-149} {
		for d := range 0x7F {
			if got, want := NVFP4ElementFactorInv(uint8(d), 1/s), NVFP4ElementFactor(uint8(d), s); got != want {
				t.Fatalf("d=%#x S=%g: %g != %g", d, s, got, want)
			}
		}
	}
}
