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

// slowTransform builds the dense matrix from the definition and evaluates
// the documented order with explicit float32 conversions.
func slowTransform(x [N]float32, signs uint16) [N]float32 {
	var y [N]float32
	for i := range N {
		acc := float32(0)
		for j := range N {
			h := 1
			for b := i & j; b != 0; b &= b - 1 {
				h = -h
			}
			if signs>>j&1 == 1 {
				h = -h
			}
			acc = float32(acc + float32(h)*x[j])
		}
		y[i] = float32(acc * 0.25)
	}
	return y
}

func TestApplyMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := NewMatrix(TESignMask)
	for range 2000 {
		var x [N]float32
		for j := range x {
			x[j] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(8)-4)))
		}
		var got [N]float32
		m.Apply(&got, &x)
		want := slowTransform(x, TESignMask)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Apply(%v) (-want +got):\n%s", x, diff)
		}
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
		if diff := cmp.Diff(x, back, cmpopts.EquateApprox(0, 1e-5)); diff != "" {
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
	if math.Abs(ex-ey) > 1e-9*ex {
		t.Errorf("energy %g became %g", ex, ey)
	}
}
