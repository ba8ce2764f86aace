// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package hadamard

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestTESignMaskMatchesTEVector(t *testing.T) {
	te := [N]int{1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1}
	var mask uint16
	for j, s := range te {
		if s == -1 {
			mask |= 1 << j
		}
	}
	if mask != TESignMask {
		t.Errorf("TE sign vector mask = %#04x, TESignMask = %#04x", mask, TESignMask)
	}
}

// recursiveTransform is an independent statement of the contract's order:
// H_2n·v = [H_n·a + H_n·b, H_n·a − H_n·b] for the halves a, b of v. The
// in-place butterfly with h = 1, 2, 4, 8 never mixes the two halves before
// its last stage, so it performs exactly these float32 operations.
func recursiveTransform(x [N]float32, signs uint16) [N]float32 {
	v := make([]float32, N)
	for j := range N {
		v[j] = float32(x[j] * 0.25)
		if signs>>j&1 == 1 {
			v[j] = -v[j]
		}
	}
	var rec func(v []float32) []float32
	rec = func(v []float32) []float32 {
		if len(v) == 1 {
			return v
		}
		a, b := rec(v[:len(v)/2]), rec(v[len(v)/2:])
		out := make([]float32, len(v))
		for i := range a {
			out[i] = float32(a[i] + b[i])
			out[i+len(a)] = float32(a[i] - b[i])
		}
		return out
	}
	var y [N]float32
	for i, f := range rec(v) {
		y[i] = toBF16(f)
	}
	return y
}

// toBF16 rounds to the nearest BF16 (ties to even) through float64, an
// independent check of element.Float32ToBF16; NaN stays NaN.
func toBF16(f float32) float32 {
	if f != f || math.IsInf(float64(f), 0) || f == 0 {
		return f
	}
	fr, exp := math.Frexp(float64(f)) // f = fr·2^exp, 0.5 ≤ |fr| < 1
	return float32(math.Ldexp(math.RoundToEven(math.Ldexp(fr, 8)), exp-8))
}

// sameBits compares float32 arrays bit for bit, except that any two NaNs
// are equal (the BF16 rounding quiets them; which NaN is not contract).
func sameBits(a, b [N]float32) bool {
	for i := range a {
		if a[i] != a[i] && b[i] != b[i] {
			continue
		}
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func TestApplyHandComputedButterfly(t *testing.T) {
	// Signs all +1 first. x = [4, 2^-6, 2^-22, 2^-22, 0, ...] (BF16
	// values), so v = x/4 = [1, 2^-8, 2^-24, 2^-24, 0, ...].
	// h = 1: (v0, v1) = (1 + 2^-8, 1 - 2^-8), both exact;
	//        (v2, v3) = (2^-23, 0).
	// h = 2: v0 = (1 + 2^-8) + 2^-23, exact (2^-23 is the ulp of 1);
	//        v1 = (1 - 2^-8) + 0; v2 = (1 + 2^-8) - 2^-23, exact; v3 = 1 - 2^-8.
	// h = 4, 8: the other inputs are 0, so v[i+4] = v[i] and v[i+8] = v[i].
	// BF16 (8 significant bits, ulp 2^-7 at 1, 2^-8 just below 1):
	//   1 + 2^-8 + 2^-23 is above the midpoint 1 + 2^-8: rounds up to 1 + 2^-7;
	//   1 + 2^-8 - 2^-23 is below it: rounds down to 1;
	//   1 - 2^-8 is a BF16 value.
	// A sequential sum ((1 + 2^-8) + 2^-24) + 2^-24 would tie twice to
	// 1 + 2^-8 and then tie to even in BF16, giving 1: the test sees the
	// order.
	want := [N]float32{}
	for i := range N {
		want[i] = [4]float32{1 + 0x1p-7, 1 - 0x1p-8, 1, 1 - 0x1p-8}[i%4]
	}
	x := [N]float32{4, 0x1p-6, 0x1p-22, 0x1p-22}
	for _, tc := range []struct {
		name  string
		signs uint16
		x     [N]float32
	}{
		{"signs all +1", 0, x},
		// TE's signs are [1, 1, 1, -1, ...]: negating x[3] gives the same v.
		{"TE signs", TESignMask, [N]float32{4, 0x1p-6, 0x1p-22, -0x1p-22}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMatrix(tc.signs)
			var got [N]float32
			m.Apply(&got, &tc.x)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Apply (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("second vector: exact sum rounds differently", func(t *testing.T) {
		// v = [2^24, 1, 1, 0, ...] (x = [2^26, 4, 4, 0, ...]), signs +1.
		// h = 1: (2^24 + 1, 2^24 - 1): 2^24 + 1 ties to even 2^24 (the
		//        float32 ulp at 2^24 is 2); (v2, v3) = (1, 1).
		// h = 2: v0 = 2^24 + 1 -> 2^24 (tie, even); v2 = 2^24 - 1 exact;
		//        v1 = (2^24 - 1) + 1 = 2^24; v3 = (2^24 - 1) - 1 = 2^24 - 2.
		// BF16: 2^24 - 1 and 2^24 - 2 round to 2^24; so every output is
		// 2^24, while the exact y0 is 2^24 + 2.
		m := NewMatrix(0)
		x := [N]float32{0x1p26, 4, 4}
		var got [N]float32
		m.Apply(&got, &x)
		for i, g := range got {
			if g != 0x1p24 {
				t.Errorf("y[%d] = %g, want 2^24", i, g)
			}
		}
	})
}

// heavyTailed draws Student-t-like values (a normal divided by the square
// root of an independent chi-square with one degree of freedom, i.e. a
// Cauchy draw) scaled over many binades and rounded to BF16, so that the
// sums cancel and round in every order-sensitive way.
func heavyTailed(rng *rand.Rand) float32 {
	z := rng.NormFloat64() / math.Abs(rng.NormFloat64())
	return toBF16(float32(z * math.Ldexp(1, rng.IntN(40)-20)))
}

func TestApplyMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	specials := []float32{
		float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		0, float32(math.Copysign(0, -1)),
		0x1p-149, -0x1p-149, 0x1p-127, 0x1p-126, // float32 subnormals
		0x1p-133, -0x1p-126 * 0.75, // BF16 subnormals
		math.MaxFloat32, -math.MaxFloat32, 0x1.FEp127, // BF16 max
		1 + 0x1p-8, 1 + 0x1p-7 + 0x1p-8, // BF16 rounding midpoints
		448, 464, 6, 7, // E4M3 and E2M1 max and their saturation thresholds
	}
	for _, signs := range []uint16{TESignMask, 0, 0xFFFF, 0x1234} {
		m := NewMatrix(signs)
		for n := range 20000 {
			var x [N]float32
			for j := range x {
				switch {
				case n%4 == 0:
					x[j] = float32(rng.NormFloat64())
				case n%4 == 3 && rng.IntN(4) == 0:
					x[j] = specials[rng.IntN(len(specials))]
				default:
					x[j] = heavyTailed(rng)
				}
			}
			var got [N]float32
			m.Apply(&got, &x)
			if want := recursiveTransform(x, signs); !sameBits(want, got) {
				t.Fatalf("signs %#04x: Apply(%v)\n got %v\nwant %v", signs, x, got, want)
			}
		}
	}
}

func TestApplyAliases(t *testing.T) {
	m := NewMatrix(TESignMask)
	x := [N]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	var want [N]float32
	m.Apply(&want, &x)
	m.Apply(&x, &x)
	if diff := cmp.Diff(want, x); diff != "" {
		t.Errorf("in-place Apply (-want +got):\n%s", diff)
	}
}

func TestUnitVectorsGiveScaledColumns(t *testing.T) {
	// Transforming e_j gives column j of H·diag(s)/4: entries ±0.25 with
	// the sign s_j in row 0.
	m := NewMatrix(TESignMask)
	for j := range N {
		var x, y [N]float32
		x[j] = 1
		m.Apply(&y, &x)
		for i := range N {
			if math.Abs(float64(y[i])) != 0.25 {
				t.Fatalf("e_%d row %d = %g", j, i, y[i])
			}
		}
		wantRow0 := float32(0.25)
		if TESignMask>>j&1 == 1 {
			wantRow0 = -0.25
		}
		if y[0] != wantRow0 {
			t.Errorf("row 0 of e_%d = %g, want %g", j, y[0], wantRow0)
		}
	}
}

func TestInverseUndoesApply(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := NewMatrix(TESignMask)
	for range 500 {
		var x, y, back [N]float32
		for j := range x {
			x[j] = float32(rng.NormFloat64())
		}
		m.Apply(&y, &x)
		m.Inverse(&back, &y)
		// y is rounded to BF16 (2^-9 relative): an absolute margin.
		if diff := cmp.Diff(x, back, cmpopts.EquateApprox(0, 0.02)); diff != "" {
			t.Fatalf("Inverse(Apply(x)) (-x +got):\n%s", diff)
		}
	}
}

func TestApplyPreservesEnergy(t *testing.T) {
	m := NewMatrix(0x1234)
	x := [N]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	var y [N]float32
	m.Apply(&y, &x)
	var ex, ey float64
	for j := range N {
		ex += float64(x[j]) * float64(x[j])
		ey += float64(y[j]) * float64(y[j])
	}
	if math.Abs(ex-ey) > 1e-2*ex { // BF16 outputs: 2^-9 relative each
		t.Errorf("energy %g became %g", ex, ey)
	}
}
