// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package reference

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/scaling"
)

// fourOverSixRecipe is NVFP4 with 4over6 on every tensor TE allows and the
// RHT off, as TE requires for activations.
func fourOverSixRecipe(mode quant.ErrorMode, bound256 quant.TensorScope) quant.Recipe {
	r := quant.DefaultRecipe(quant.NVFP4BlockScaling)
	r.NVFP4.RandomHadamardTransform = false
	r.NVFP4.FourOverSix = quant.ScopeAll
	r.NVFP4.FourOverSixErrorMode = mode
	r.NVFP4.FourOverSixE4M3Bound256 = bound256
	return r
}

// withAnchor returns a 1x32 row: an anchor block [anchor, 0...] that fixes
// the tensor amax, then block (zero padded to 16). With anchor 1536 and
// the 256 bound (or 2688 and the 448 bound) the tensor scale is exactly 1,
// so a block scale d decodes code q to q*d and every error below is exact.
func withAnchor(anchor float32, block ...float32) quant.Tensor {
	x := make([]float32, 32)
	x[0] = anchor
	copy(x[16:], block)
	return row(x...)
}

// packed packs the codes of one 16-element block, low nibble first.
func packed(codes ...byte) []byte {
	c := make([]byte, 16)
	copy(c, codes)
	out := make([]byte, 8)
	for i := range out {
		out[i] = c[2*i] | c[2*i+1]<<4
	}
	return out
}

// The hand computations below use S = 1, so map-to-6 has d6 = E4M3(a/6)
// and map-to-4 d4 = E4M3(a/4) for a block amax a; for a = 24, d6 = 4
// (0x48) and d4 = 6 (0x4C): an element x becomes E2M1(x/4) or E2M1(x/6),
// decoded as 4q or 6q. The anchor block [1536] has a = 1536: d6 = 256
// (0x78), d4 = 384 (0x7C), both encode 1536 exactly (6*256, 4*384), a tie
// that keeps map-to-6: code 7 with scale 0x78.
func TestFourOverSixVectors(t *testing.T) {
	nan := float32(math.NaN())
	cases := []struct {
		name      string
		mode      quant.ErrorMode
		block     []float32
		wantScale byte
		wantCodes []byte
	}{
		// 24 -> 6 (map6, err 0) or 4 (map4, err 0): an exact tie.
		{"zero-error tie keeps map-to-6", quant.ErrorMAE, []float32{24}, 0x48, []byte{7}},
		// 14/4 = 3.5 rounds to 4 (even): 16, err 2. 14/6 = 2.33 -> 2: 12,
		// err 2. Equal sums, under both measures.
		{"nonzero tie keeps map-to-6 (MAE)", quant.ErrorMAE, []float32{24, 14}, 0x48, []byte{7, 6}},
		{"nonzero tie keeps map-to-6 (MSE)", quant.ErrorMSE, []float32{24, 14}, 0x48, []byte{7, 6}},
		// 20/4 = 5 ties to 4: 16, err 4. 20/6 = 3.33 -> 3: 18, err 2.
		{"map-to-4 wins", quant.ErrorMAE, []float32{24, 20}, 0x4C, []byte{6, 5}},
		// map6 errors 0,0,1,1,1 (MAE 3, MSE 3); map4 errors 0,2,0,0,0
		// (MAE 2, MSE 4): the two measures choose differently.
		{"MAE prefers one large error", quant.ErrorMAE, []float32{24, 16, 3, 9, 3}, 0x4C, []byte{6, 5, 1, 3, 1}},
		{"MSE prefers small errors", quant.ErrorMSE, []float32{24, 16, 3, 9, 3}, 0x48, []byte{7, 6, 2, 4, 2}},
		// Heavy tail: one outlier and small values. map6: errors
		// 0,1,1,0,.5,.5 (3); map4: 0,1,1,1,.5,1.5 (5). -1/4 rounds to -0.
		{"heavy-tailed block keeps map-to-6", quant.ErrorMAE, []float32{-24, 1, -1, 2, 0.5, 1.5}, 0x48, []byte{0xF, 0, 8, 1, 0, 1}},
		// a = 6*2^-10: base 2^-10 is E4M3's half-subnormal tie and flushes
		// to 0, so map-to-6 decodes the block to 0 (err a); base*1.5
		// rounds up to 2^-9 (0x01) and map-to-4 encodes a as 3 exactly.
		{"map-to-6 scale flushes to zero", quant.ErrorMAE, []float32{6.0 / 1024}, 0x01, []byte{5}},
		// A NaN element makes both sums NaN; the comparison is false.
		{"NaN error keeps map-to-6", quant.ErrorMAE, []float32{24, nan}, 0x48, []byte{7, 7}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := fourOverSixRecipe(tc.mode, quant.ScopeAll)
			res, err := New().Quantize(context.Background(), quant.Request{Recipe: r, Role: quant.Input, Usage: quant.UsageRowwise}, withAnchor(1536, tc.block...))
			if err != nil {
				t.Fatal(err)
			}
			o := res.Rowwise
			if o.Scale != 1 {
				t.Fatalf("tensor scale %g, want 1 (256*6/1536)", o.Scale)
			}
			want := append(packed(7), packed(tc.wantCodes...)...)
			if diff := cmp.Diff(want, o.Data); diff != "" {
				t.Errorf("codes (-want +got):\n%s", diff)
			}
			if got := o.ScaleCodes[:2]; got[0] != 0x78 || got[1] != tc.wantScale {
				t.Errorf("block scales % x, want 78 %02x", got, tc.wantScale)
			}
		})
	}
}

// With the 448 bound the tensor scale of the same tensor is 2688/1536 =
// 1.75, and a block at the tensor amax has base 448: map-to-4 clamps to 448
// too, so both candidates are the same and the tie keeps map-to-6.
func TestFourOverSixBound448(t *testing.T) {
	r := fourOverSixRecipe(quant.ErrorMAE, quant.ScopeNone)
	res, err := New().Quantize(context.Background(), quant.Request{Recipe: r, Role: quant.Weight, Usage: quant.UsageRowwise}, withAnchor(2688, 24, 20))
	if err != nil {
		t.Fatal(err)
	}
	o := res.Rowwise
	if o.Scale != 1 {
		t.Fatalf("tensor scale %g, want 1 (448*6/2688)", o.Scale)
	}
	if got := o.ScaleCodes[0]; got != 0x7E {
		t.Errorf("anchor block scale %02x, want 7e (448: map-to-4 clamped)", got)
	}
	res256, err := New().Quantize(context.Background(), quant.Request{Recipe: fourOverSixRecipe(quant.ErrorMAE, quant.ScopeAll), Role: quant.Weight, Usage: quant.UsageRowwise}, withAnchor(2688, 24, 20))
	if err != nil {
		t.Fatal(err)
	}
	if s := res256.Rowwise.Scale; s != float32(1536)/2688 {
		t.Errorf("256-bound tensor scale %g, want 1536/2688", s)
	}
}

// A 16x16 weight tile sums its rows' errors (here all in row 0, exact
// integers) and shares one choice; the columnwise operand chooses again
// from column sums, which agree here.
func TestFourOverSixTile(t *testing.T) {
	x := quant.NewTensor(16, 32)
	copy(x.Row(0), []float32{24, 16, 3, 9, 3})
	x.Row(0)[16] = 1536
	for _, tc := range []struct {
		mode  quant.ErrorMode
		scale byte
	}{{quant.ErrorMAE, 0x4C}, {quant.ErrorMSE, 0x48}} {
		r := fourOverSixRecipe(tc.mode, quant.ScopeAll)
		res, err := New().Quantize(context.Background(), quant.Request{Recipe: r, Role: quant.Weight}, x)
		if err != nil {
			t.Fatal(err)
		}
		for m := range 16 {
			if got := res.Rowwise.ScaleCodes[m*res.Rowwise.ScaleCols]; got != tc.scale {
				t.Errorf("%s: rowwise tile scale of row %d = %02x, want %02x", tc.mode, m, got, tc.scale)
			}
		}
		col := res.Columnwise
		for k := range 16 {
			if got := col.ScaleCodes[k*col.ScaleCols]; got != tc.scale {
				t.Errorf("%s: columnwise tile scale of column %d = %02x, want %02x", tc.mode, k, got, tc.scale)
			}
		}
	}
}

// SumTree16 pairs v[i] with v[i+8] first: 2^24 and -2^24 cancel before the
// 1 is added, where a running sum would lose the 1.
func TestSumTree16Order(t *testing.T) {
	var v [16]float32
	v[0], v[8], v[1] = 1<<24, -(1 << 24), 1
	if got := scaling.SumTree16(v); got != 1 {
		t.Errorf("SumTree16 = %g, want 1", got)
	}
	var seq float32
	for _, e := range v {
		seq += e
	}
	if seq != 0 {
		t.Fatalf("the vector no longer tells the orders apart: running sum %g", seq)
	}
}

// Gradients never take 4over6, whatever the scope: TE keeps standard NVFP4
// there.
func TestFourOverSixSkipsGradients(t *testing.T) {
	r := fourOverSixRecipe(quant.ErrorMAE, quant.ScopeAll)
	p, err := r.Plan(quant.Gradient)
	if err != nil {
		t.Fatal(err)
	}
	if p.FourOverSix != "" || p.TensorScaleBound != scaling.NVFP4Bound {
		t.Errorf("gradient plan has 4over6 %q bound %g", p.FourOverSix, p.TensorScaleBound)
	}
}

// Row scaling: each row's amax gives its own tensor scale (6 -> 448, 0.75
// -> 3584), so both rows' maxima get the top block scale 448 (0x7E), where
// a shared scale (amax 6) would give row 1 the scale 56 (0x66).
func TestRowScaledActivation(t *testing.T) {
	r := quant.DefaultRecipe(quant.NVFP4BlockScaling)
	r.NVFP4.RandomHadamardTransform = false
	r.NVFP4.RowScaledActivation = true
	x := quant.Tensor{Rows: 2, Cols: 16, Data: make([]float32, 32)}
	copy(x.Row(0), []float32{6, 3, -1.5})
	copy(x.Row(1), []float32{0.75, 0.5})
	res, err := New().Quantize(context.Background(), quant.Request{Recipe: r, Role: quant.Input, Usage: quant.UsageRowwise}, x)
	if err != nil {
		t.Fatal(err)
	}
	o := res.Rowwise
	if diff := cmp.Diff([]float32{6, 0.75}, o.RowAmax); diff != "" {
		t.Errorf("row amax (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float32{448, 3584}, o.RowScale); diff != "" {
		t.Errorf("row scales (-want +got):\n%s", diff)
	}
	if o.Scale != 0 || res.Amax != 6 {
		t.Errorf("tensor scale %g amax %g, want 0 and 6", o.Scale, res.Amax)
	}
	if a, b := o.ScaleCodes[0], o.ScaleCodes[o.ScaleCols]; a != 0x7E || b != 0x7E {
		t.Errorf("block scales %02x %02x, want 7e 7e", a, b)
	}
	want := append(packed(7, 5, 0xB), packed(7, 6)...)
	if diff := cmp.Diff(want, o.Data); diff != "" {
		t.Errorf("codes (-want +got):\n%s", diff)
	}
	if d := mustDequantize(t, res, quant.UsageRowwise); d[16] != 0.75 || d[17] != 0.5 || d[0] != 6 {
		t.Errorf("dequantized %v", d)
	}

	// The weight and the gradient keep one tensor scale.
	if p, _ := r.Plan(quant.Weight); p.RowScaled {
		t.Error("weights are row-scaled")
	}
	_, err = New().Quantize(context.Background(), quant.Request{Recipe: r, Role: quant.Input}, x)
	if !errors.Is(err, quant.ErrRowScaledColumnwise) {
		t.Errorf("both usages: err %v, want ErrRowScaledColumnwise", err)
	}
}

// Row scaling with 4over6: the error uses the row's amax.
func TestRowScaledFourOverSix(t *testing.T) {
	r := fourOverSixRecipe(quant.ErrorMAE, quant.ScopeAll)
	r.NVFP4.RowScaledActivation = true
	x := quant.NewTensor(2, 32)
	copy(x.Row(0), withAnchor(1536, 24, 20).Data)
	copy(x.Row(1), withAnchor(1536, 24, 14).Data)
	res, err := New().Quantize(context.Background(), quant.Request{Recipe: r, Role: quant.Input, Usage: quant.UsageRowwise}, x)
	if err != nil {
		t.Fatal(err)
	}
	o := res.Rowwise
	if got := []byte{o.ScaleCodes[1], o.ScaleCodes[o.ScaleCols+1]}; got[0] != 0x4C || got[1] != 0x48 {
		t.Errorf("block scales % x, want 4c 48", got)
	}
}

// A grouped quantize of row-scaled inputs gives each group the rows' own
// scales, as quantizing each group alone does.
func TestRowScaledGrouped(t *testing.T) {
	r := fourOverSixRecipe(quant.ErrorMSE, quant.ScopeActivations)
	r.NVFP4.RowScaledActivation = true
	x := heavyTailedTensor(rand.New(rand.NewPCG(3, 4)), 256, 48)
	req := quant.Request{Recipe: r, Role: quant.Input, Usage: quant.UsageRowwise}
	res, err := New().QuantizeGrouped(context.Background(), req, x, []int{128, 128}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for g, off := range []int{0, 128} {
		want, err := New().Quantize(context.Background(), req, x.RowSlice(off, off+128))
		if err != nil {
			t.Fatal(err)
		}
		if !quant.SameBytes(want, res[g]) {
			t.Errorf("group %d differs from quantizing it alone", g)
		}
		if len(res[g].Rowwise.RowScale) != 128 {
			t.Errorf("group %d has %d row scales", g, len(res[g].Rowwise.RowScale))
		}
	}
}
