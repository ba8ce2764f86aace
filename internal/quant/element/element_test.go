// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package element

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var fp8Types = []Type{E4M3, E5M2, E2M1}

func nan32() float32 { return float32(math.NaN()) }
func inf32(sign int) float32 {
	return float32(math.Inf(sign))
}

// sweepScales are the scales applied to every BF16 input in the exhaustive
// sweeps: 1, and values that push the inputs into the subnormal, saturation
// and float32-underflow regions of each format.
var sweepScales = []float32{
	1, 0x1p-9, 0x1p-16, 0x1p-126, 0x1p-127, 0x1p-149, 448.0 / 3.3895314e38,
	1.0 / 448, 1.0 / 57344, 1.0 / 6, 0x1p64, 0x1p127, math.MaxFloat32, 3, 0.75,
}

// checkAgainstOracle compares the fast conversion with the oracle for x.
func checkAgainstOracle(t *testing.T, typ Type, x float32) bool {
	t.Helper()
	got := typ.Encode(x)
	want := oracleEncode(typ, float64(x))
	if got != want {
		t.Errorf("%v(%g [bits %#08x]) = %#02x, oracle says %#02x", typ, x, math.Float32bits(x), got, want)
		return false
	}
	return true
}

func TestConversionMatchesOracleOnAllBF16TimesScale(t *testing.T) {
	for _, typ := range fp8Types {
		for _, s := range sweepScales {
			t.Run(fmt.Sprintf("%v/scale=%g", typ, s), func(t *testing.T) {
				errs := 0
				for h := range 1 << 16 {
					x := BF16ToFloat32(uint16(h))
					// The product in float32, computed independently: the
					// float64 product of two float32 is exact, and one
					// conversion rounds it to float32.
					p := float32(float64(x) * float64(s))
					if !checkAgainstOracle(t, typ, p) {
						if errs++; errs > 10 {
							t.Fatal("too many mismatches")
						}
					}
				}
			})
		}
	}
}

func TestConversionMatchesOracleNearEveryRoundingBoundary(t *testing.T) {
	// Every midpoint between neighbouring values (where ties and the sticky
	// bits below the BF16 precision matter), every representable value, the
	// overflow midpoint, and 64 float32 ulps either side of each, both signs.
	for _, typ := range fp8Types {
		t.Run(typ.String(), func(t *testing.T) {
			d := defOf(typ)
			var points []float64
			for c := 0; c <= int(d.maxCode)+1; c++ {
				points = append(points, d.valueOf(c))
				if c > 0 {
					points = append(points, (d.valueOf(c-1)+d.valueOf(c))/2)
				}
			}
			errs := 0
			for _, p := range points {
				center := math.Float32bits(float32(p))
				for k := -64; k <= 64; k++ {
					b := uint32(int64(center) + int64(k))
					if int64(center)+int64(k) < 0 {
						continue
					}
					for _, sign := range []uint32{0, 0x80000000} {
						if !checkAgainstOracle(t, typ, math.Float32frombits(b|sign)) {
							if errs++; errs > 10 {
								t.Fatal("too many mismatches")
							}
						}
					}
				}
			}
		})
	}
}

func TestConversionMatchesOracleOnStridedFloat32(t *testing.T) {
	// A stride coprime with 2^32 visits ~1M bit patterns spread over all
	// exponents, mantissas and signs, NaN payloads and infinities included.
	const stride = 4099
	for _, typ := range fp8Types {
		t.Run(typ.String(), func(t *testing.T) {
			errs := 0
			for b := uint64(0); b < 1<<32; b += stride {
				if !checkAgainstOracle(t, typ, math.Float32frombits(uint32(b))) {
					if errs++; errs > 10 {
						t.Fatal("too many mismatches")
					}
				}
			}
		})
	}
}

func TestHandComputedVectors(t *testing.T) {
	cases := []struct {
		name string
		typ  Type
		in   float32
		want uint8
	}{
		// E4M3
		{"e4m3 one", E4M3, 1, 0x38},
		{"e4m3 max", E4M3, 448, 0x7E},
		{"e4m3 464 ties to even 448 (H200)", E4M3, 464, 0x7E},
		{"e4m3 just above 464 saturates", E4M3, 464.00003, 0x7E},
		{"e4m3 1e6 saturates", E4M3, 1e6, 0x7E},
		{"e4m3 -1e6 saturates", E4M3, -1e6, 0xFE},
		{"e4m3 +inf (H200)", E4M3, inf32(1), 0x7E},
		{"e4m3 -inf (H200)", E4M3, inf32(-1), 0xFE},
		{"e4m3 NaN (H200)", E4M3, nan32(), 0x7F},
		{"e4m3 -NaN drops sign (H200)", E4M3, math.Float32frombits(0xFFC00000), 0x7F},
		{"e4m3 tie 1.0625 to even 1.0", E4M3, 1.0625, 0x38},
		{"e4m3 tie 1.1875 to even 1.25", E4M3, 1.1875, 0x3A},
		{"e4m3 above tie 1.0625+ulp", E4M3, math.Nextafter32(1.0625, 2), 0x39},
		{"e4m3 smallest subnormal 2^-9", E4M3, 0x1p-9, 0x01},
		{"e4m3 tie 2^-10 to zero", E4M3, 0x1p-10, 0x00},
		{"e4m3 above 2^-10 rounds up", E4M3, math.Nextafter32(0x1p-10, 1), 0x01},
		{"e4m3 tie 3*2^-10 to even 2^-8", E4M3, 3 * 0x1p-10, 0x02},
		{"e4m3 largest subnormal 7*2^-9", E4M3, 7 * 0x1p-9, 0x07},
		{"e4m3 tie 7.5*2^-9 to normal min", E4M3, 7.5 * 0x1p-9, 0x08},
		{"e4m3 -tiny keeps sign", E4M3, -1e-30, 0x80},
		{"e4m3 -0", E4M3, float32(math.Copysign(0, -1)), 0x80},
		{"e4m3 float32 subnormal", E4M3, 0x1p-140, 0x00},
		// E5M2
		{"e5m2 one", E5M2, 1, 0x3C},
		{"e5m2 max", E5M2, 57344, 0x7B},
		{"e5m2 61440 (tie to 65536) saturates", E5M2, 61440, 0x7B},
		{"e5m2 +inf (H200)", E5M2, inf32(1), 0x7B},
		{"e5m2 -inf (H200)", E5M2, inf32(-1), 0xFB},
		{"e5m2 NaN (H200)", E5M2, nan32(), 0x7F},
		{"e5m2 -NaN drops sign (H200)", E5M2, math.Float32frombits(0xFFC00001), 0x7F},
		{"e5m2 tie 1.125 to even 1.0", E5M2, 1.125, 0x3C},
		{"e5m2 tie 1.375 to even 1.5", E5M2, 1.375, 0x3E},
		{"e5m2 smallest subnormal 2^-16", E5M2, 0x1p-16, 0x01},
		{"e5m2 tie 2^-17 to zero", E5M2, 0x1p-17, 0x00},
		{"e5m2 tie 3*2^-17 to 2^-15", E5M2, 3 * 0x1p-17, 0x02},
		// E2M1
		{"e2m1 one", E2M1, 1, 0x2},
		{"e2m1 six", E2M1, 6, 0x7},
		{"e2m1 5 ties to even 4", E2M1, 5, 0x6},
		{"e2m1 above 5 rounds to 6", E2M1, 5.0000005, 0x7},
		{"e2m1 2.5 ties to even 2", E2M1, 2.5, 0x4},
		{"e2m1 3.5 ties to even 4", E2M1, 3.5, 0x6},
		{"e2m1 0.25 ties to even 0", E2M1, 0.25, 0x0},
		{"e2m1 0.75 ties to even 1", E2M1, 0.75, 0x2},
		{"e2m1 1.25 ties to even 1", E2M1, 1.25, 0x2},
		{"e2m1 1.75 ties to even 2", E2M1, 1.75, 0x4},
		{"e2m1 100 saturates", E2M1, 100, 0x7},
		{"e2m1 -100 saturates", E2M1, -100, 0xF},
		{"e2m1 +inf", E2M1, inf32(1), 0x7},
		{"e2m1 -inf", E2M1, inf32(-1), 0xF},
		{"e2m1 NaN is +6 (our choice)", E2M1, nan32(), 0x7},
		{"e2m1 -NaN is +6 (our choice)", E2M1, math.Float32frombits(0xFFC00000), 0x7},
		{"e2m1 -0.5", E2M1, -0.5, 0x9},
		{"e2m1 -tiny keeps sign", E2M1, -0.1, 0x8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.typ.Encode(tc.in); got != tc.want {
				t.Errorf("%v(%g) = %#02x, want %#02x", tc.typ, tc.in, got, tc.want)
			}
		})
	}
}

func TestDecodeMatchesDefinition(t *testing.T) {
	for _, typ := range fp8Types {
		d := defOf(typ)
		n := 256
		if typ == E2M1 {
			n = 16
		}
		for c := range n {
			got := float64(typ.Decode(uint8(c)))
			mag := c &^ int(d.signBit)
			var want float64
			switch {
			case typ == E4M3 && mag == 0x7F:
				want = math.NaN()
			case typ == E5M2 && mag == 0x7C:
				want = math.Inf(1)
			case typ == E5M2 && mag > 0x7C:
				want = math.NaN()
			default:
				want = d.valueOf(mag)
			}
			if c&int(d.signBit) != 0 {
				want = -want
			}
			if !(got == want || math.IsNaN(got) && math.IsNaN(want)) || math.Signbit(got) != math.Signbit(want) && !math.IsNaN(want) {
				t.Errorf("%v.Decode(%#02x) = %g, want %g", typ, c, got, want)
			}
		}
	}
}

func TestEncodeDecodeRoundTripsEveryFiniteCode(t *testing.T) {
	for _, typ := range fp8Types {
		n := 256
		if typ == E2M1 {
			n = 16
		}
		for c := range n {
			v := typ.Decode(uint8(c))
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				continue
			}
			if got := typ.Encode(v); got != uint8(c) {
				t.Errorf("%v.Encode(Decode(%#02x)=%g) = %#02x", typ, c, v, got)
			}
		}
	}
}

func TestConversionIsMonotonic(t *testing.T) {
	// Walking all nonnegative float32 bit patterns in order (strided, plus
	// every pattern near the format's range) the decoded result never
	// decreases; the same for negatives mirrored.
	for _, typ := range fp8Types {
		t.Run(typ.String(), func(t *testing.T) {
			prev := float32(0)
			for b := uint32(0); b <= 0x7F800000; b += 257 {
				v := typ.Decode(typ.Encode(math.Float32frombits(b)))
				if v < prev {
					t.Fatalf("not monotonic at %g: %g < %g", math.Float32frombits(b), v, prev)
				}
				prev = v
				n := typ.Decode(typ.Encode(-math.Float32frombits(b)))
				if n != -v {
					t.Fatalf("not symmetric at %g: %g vs %g", math.Float32frombits(b), n, v)
				}
			}
		})
	}
}

func TestE8M0RoundUpMatchesOracle(t *testing.T) {
	errs := 0
	check := func(x float32) {
		if got, want := E8M0RoundUp(x), oracleE8M0RoundUp(x); got != want {
			t.Errorf("E8M0RoundUp(%g [%#08x]) = %#02x, oracle %#02x", x, math.Float32bits(x), got, want)
			if errs++; errs > 10 {
				t.FailNow()
			}
		}
	}
	for h := range 1 << 16 {
		check(BF16ToFloat32(uint16(h)))
	}
	for b := uint64(0); b < 1<<32; b += 65537 {
		check(math.Float32frombits(uint32(b)))
	}
	for e := uint32(0); e < 256; e++ {
		for _, m := range []uint32{0, 1, 2, 0x3FFFFF, 0x400000, 0x400001, 0x7FFFFE, 0x7FFFFF} {
			check(math.Float32frombits(e<<23 | m))
		}
	}
}

func TestE8M0RoundUpVectors(t *testing.T) {
	cases := []struct {
		name string
		in   float32
		want uint8
	}{
		{"one is exact", 1, 127},
		{"just above one rounds up", math.Nextafter32(1, 2), 128},
		{"1.5 rounds up", 1.5, 128},
		{"just below two rounds up to two", math.Nextafter32(2, 0), 128},
		{"2^-126 smallest normal exact", 0x1p-126, 1},
		{"above 2^-126 rounds up", math.Nextafter32(0x1p-126, 1), 2},
		// Subnormal t (contract v2, TE's float_to_e8m0). Bits E = 0, m:
		// value m·2^-149. Code 0 decodes to 2^-127 = 0x400000·2^-149, so
		// m ≤ 0x400000 keeps code 0 and m > 0x400000 needs code 1 (2^-126).
		{"subnormal 2^-127 (m = 0x400000) is code 0 exactly", 0x1p-127, 0},
		{"subnormal just above 2^-127 (m = 0x400001) rounds up to 1", math.Float32frombits(0x00400001), 1},
		{"subnormal 0.75*2^-126 (m = 0x600000) rounds up to 1", 0.75 * 0x1p-126, 1},
		{"largest subnormal (m = 0x7FFFFF) rounds up to 1", math.Float32frombits(0x007FFFFF), 1},
		{"subnormal just below 2^-127 (m = 0x3FFFFF) stays 0", math.Float32frombits(0x003FFFFF), 0},
		{"smallest subnormal (m = 1) stays 0", 0x1p-149, 0},
		// An MXFP8 block amax that gives a subnormal t: amax = 2^-118
		// (E4M3, 1/448 = 0x3B124925 = 1.142857...·2^-9). t = 2^-118 ×
		// 0x3B124925 = 1.142857·2^-127: below 2^-126, so subnormal, with m
		// = 1.142857·2^22 ≈ 0x492492 > 0x400000 → code 1. The old rule gave
		// 0, i.e. factor 2^127 and 2^-118·2^127 = 512 > 448.
		{"E4M3 block amax 2^-118 gives code 1", 0x1p-118 * float32(1.0/448), 1},
		{"2^127 exact", 0x1p127, 254},
		{"exception: exponent 0xFE not incremented", 1.5 * 0x1p127, 254},
		{"exception: float32 max not incremented", math.MaxFloat32, 254},
		{"zero", 0, 0},
		{"inf", inf32(1), 0xFE},
		{"NaN", nan32(), 0xFF},
		{"sign ignored", -1.5, 128},
		{"amax 448 over 448", 448 * float32(1.0/448), 127},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := E8M0RoundUp(tc.in); got != tc.want {
				t.Errorf("E8M0RoundUp(%g) = %#02x, want %#02x", tc.in, got, tc.want)
			}
		})
	}
}

func TestE8M0FloorOCPMatchesOracle(t *testing.T) {
	for _, emax := range []int{8, 15, 2} {
		for h := range 1 << 16 {
			x := BF16ToFloat32(uint16(h))
			if got, want := E8M0FloorOCP(x, emax), oracleE8M0OCP(x, emax); got != want {
				t.Fatalf("E8M0FloorOCP(%g, %d) = %d, oracle %d", x, emax, got, want)
			}
		}
		for b := uint32(1); b < 1<<23; b = b*3 + 1 { // float32 subnormals
			x := math.Float32frombits(b)
			if got, want := E8M0FloorOCP(x, emax), oracleE8M0OCP(x, emax); got != want {
				t.Fatalf("E8M0FloorOCP(%g, %d) = %d, oracle %d", x, emax, got, want)
			}
		}
	}
}

func TestE8M0Decode(t *testing.T) {
	got := []float32{E8M0ToFloat32(0), E8M0ToFloat32(1), E8M0ToFloat32(127), E8M0ToFloat32(254)}
	want := []float32{0x1p-127, 0x1p-126, 1, 0x1p127}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("E8M0 decode (-want +got):\n%s", diff)
	}
	if !math.IsNaN(float64(E8M0ToFloat32(0xFF))) {
		t.Error("E8M0 0xFF is not NaN")
	}
	for c := range 255 {
		if got := E8M0RoundUp(E8M0ToFloat32(uint8(c))); got != uint8(c) {
			t.Errorf("E8M0RoundUp(decode(%d)) = %d", c, got)
		}
	}
}

func TestE2M1StochasticMatchesOracle(t *testing.T) {
	for h := range 1 << 16 {
		x := BF16ToFloat32(uint16(h))
		for r := range 256 {
			if got, want := ToE2M1Stochastic(x, uint8(r)), oracleE2M1Stochastic(x, uint8(r)); got != want {
				t.Fatalf("ToE2M1Stochastic(%g, %d) = %#x, oracle %#x", x, r, got, want)
			}
		}
	}
	// Below BF16 precision: the floor must see all 23 mantissa bits.
	for b := uint32(0); b < 0x40C00000; b += 997 {
		x := math.Float32frombits(b)
		for _, r := range []uint8{0, 1, 127, 128, 254, 255} {
			if got, want := ToE2M1Stochastic(x, r), oracleE2M1Stochastic(x, r); got != want {
				t.Fatalf("ToE2M1Stochastic(%g, %d) = %#x, oracle %#x", x, r, got, want)
			}
		}
	}
}

func TestE2M1StochasticIsUnbiasedToWithinOneStep256th(t *testing.T) {
	for _, v := range []float32{0.1, 0.3, 0.75, 1.2, 2.5, 2.9, 3.3, 4.5, 5.9, -2.25} {
		sum := 0.0
		for r := range 256 {
			sum += float64(E2M1ToFloat32(ToE2M1Stochastic(v, uint8(r))))
		}
		mean := sum / 256
		step := 0.5
		switch av := math.Abs(float64(v)); {
		case av >= 4:
			step = 2
		case av >= 2:
			step = 1
		}
		if math.Abs(mean-float64(v)) > step/256 {
			t.Errorf("mean of SR(%g) over all r = %g, off by more than step/256", v, mean)
		}
	}
}

func TestE2M1StochasticVectors(t *testing.T) {
	cases := []struct {
		name string
		in   float32
		r    uint8
		want uint8
	}{
		{"exact value never moves, r=0", 1.5, 0, 0x3},
		{"exact value never moves, r=255", 4, 255, 0x6},
		{"quarter way 1.125, r=63 rounds up", 1.125, 63, 0x3},
		{"quarter way 1.125, r=64 stays", 1.125, 64, 0x2},
		{"half way 5, r=127 up to 6", 5, 127, 0x7},
		{"half way 5, r=128 stays 4", 5, 128, 0x6},
		{"negative keeps sign", -2.5, 0, 0xD},
		{"saturates beyond 6", 7, 0, 0x7},
		{"NaN is +6", nan32(), 0, 0x7},
		{"tiny rounds to zero", 1e-6, 0, 0x0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ToE2M1Stochastic(tc.in, tc.r); got != tc.want {
				t.Errorf("ToE2M1Stochastic(%g, %d) = %#x, want %#x", tc.in, tc.r, got, tc.want)
			}
		})
	}
}

func TestHalfPrecisionWidening(t *testing.T) {
	for h := range 1 << 16 {
		bf := BF16ToFloat32(uint16(h))
		if got := Float32ToBF16(bf); got != uint16(h) && !math.IsNaN(float64(bf)) {
			t.Fatalf("BF16 %#04x widened to %g rounds back to %#04x", h, bf, got)
		}
		f := FP16ToFloat32(uint16(h))
		if got := Float32ToFP16(f); got != uint16(h) && !math.IsNaN(float64(f)) {
			t.Fatalf("FP16 %#04x widened to %g rounds back to %#04x", h, f, got)
		}
		if math.IsNaN(float64(f)) != (h&0x7C00 == 0x7C00 && h&0x3FF != 0) {
			t.Fatalf("FP16 %#04x NaN-ness wrong: %g", h, f)
		}
	}
	if got := FP16ToFloat32(0x3C00); got != 1 {
		t.Errorf("FP16 0x3C00 = %g, want 1", got)
	}
	if got := FP16ToFloat32(0x0001); got != 0x1p-24 {
		t.Errorf("FP16 0x0001 = %g, want 2^-24", got)
	}
}

func TestFloat32ToFP16MatchesOracle(t *testing.T) {
	for b := uint64(0); b < 1<<32; b += 8191 {
		x := math.Float32frombits(uint32(b))
		got, want := Float32ToFP16(x), oracleFP16(float64(x))
		if math.IsNaN(float64(x)) {
			if got&0x7C00 != 0x7C00 || got&0x3FF == 0 {
				t.Fatalf("Float32ToFP16(NaN %#08x) = %#04x, not a NaN", uint32(b), got)
			}
			continue
		}
		if got != want {
			t.Fatalf("Float32ToFP16(%g) = %#04x, oracle %#04x", x, got, want)
		}
	}
}

func TestFloat32ToBF16RoundsToNearestEven(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
	}{
		{0x3F808000, 0x3F80}, // tie, even stays
		{0x3F818000, 0x3F82}, // tie, odd goes up
		{0x3F808001, 0x3F81}, // above tie
		{0x7F7FFFFF, 0x7F80}, // float32 max rounds to inf
	}
	for _, tc := range cases {
		if got := Float32ToBF16(math.Float32frombits(tc.in)); got != tc.want {
			t.Errorf("Float32ToBF16(%#08x) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
}
