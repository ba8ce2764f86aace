// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package reference

import (
	"context"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kquant/kquant/internal/quant"
)

func row(v ...float32) quant.Tensor { return quant.Tensor{Rows: 1, Cols: len(v), Data: v} }

func mustQuantize(t *testing.T, r quant.Recipe, role quant.TensorRole, st *quant.State, x quant.Tensor) *quant.Result {
	t.Helper()
	res, err := New().Quantize(context.Background(), quant.Request{Recipe: r, Role: role, State: st, Seed: 1}, x)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func mustDequantize(t *testing.T, res *quant.Result, u quant.Usage) []float32 {
	t.Helper()
	d, err := New().Dequantize(context.Background(), res, u)
	if err != nil {
		t.Fatal(err)
	}
	return d.Data
}

func TestPerTensorVectors(t *testing.T) {
	current := quant.DefaultRecipe(quant.Float8CurrentScaling)
	pow2 := current
	pow2.Current.Power2Scales = true
	cases := []struct {
		name         string
		recipe       quant.Recipe
		role         quant.TensorRole
		x            quant.Tensor
		wantRow      []byte
		wantCol      []byte
		wantScaleInv float32
	}{
		{"current E4M3 amax 2 scale 224", current, quant.Input,
			quant.Tensor{Rows: 2, Cols: 2, Data: []float32{2, -1, 0.5, 0}},
			[]byte{0x7E, 0xF6, 0x6E, 0x00}, []byte{0x7E, 0x6E, 0xF6, 0x00}, 1.0 / 224},
		{"current pow2 scale 128", pow2, quant.Input,
			quant.Tensor{Rows: 2, Cols: 2, Data: []float32{2, -1, 0.5, 0}},
			[]byte{0x78, 0xF0, 0x68, 0x00}, []byte{0x78, 0x68, 0xF0, 0x00}, 1.0 / 128},
		{"current HYBRID gradient is E5M2", current, quant.Gradient,
			row(2, -1, 0.5, 0), []byte{0x7B, 0xF7, 0x73, 0x00}, []byte{0x7B, 0xF7, 0x73, 0x00}, 1.0 / 28672},
		{"current zero tensor scale 1", current, quant.Input, row(0, 0), []byte{0, 0}, []byte{0, 0}, 1},
		{"current NaN element does not raise amax", current, quant.Input,
			row(float32(math.NaN()), 2), []byte{0x7F, 0x7E}, []byte{0x7F, 0x7E}, 1.0 / 224},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mustQuantize(t, tc.recipe, tc.role, nil, tc.x)
			if diff := cmp.Diff(tc.wantRow, res.Rowwise.Data); diff != "" {
				t.Errorf("rowwise (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCol, res.Columnwise.Data); diff != "" {
				t.Errorf("columnwise (-want +got):\n%s", diff)
			}
			if got := res.Rowwise.ScaleInv; len(got) != 1 || got[0] != tc.wantScaleInv || res.Columnwise.ScaleInv[0] != tc.wantScaleInv {
				t.Errorf("scale_inv = %v / %v, want %g", got, res.Columnwise.ScaleInv, tc.wantScaleInv)
			}
		})
	}
}

func TestDelayedScalingStepsOverInputs(t *testing.T) {
	r := quant.DefaultRecipe(quant.DelayedScaling)
	r.Delayed.AmaxHistoryLen = 2
	st := quant.NewState(r)
	steps := []struct {
		x         quant.Tensor
		wantCodes []byte
		wantScale float32 // after the update
	}{
		// Step 1 casts with the initial scale 1: 500 saturates.
		{row(500, -3), []byte{0x7E, 0xC4}, float32(448.0 / 500)},
		// Step 2 casts with 448/500.
		{row(250, 1), []byte{0x76, 0x36}, float32(448.0 / 500)},
		// Step 3: amax 0, but the history still holds 250 (max).
		{row(0, 0), []byte{0, 0}, float32(448.0 / 250)},
	}
	for i, s := range steps {
		res := mustQuantize(t, r, quant.Input, st, s.x)
		if diff := cmp.Diff(s.wantCodes, res.Rowwise.Data); diff != "" {
			t.Errorf("step %d codes (-want +got):\n%s", i, diff)
		}
		if err := st.Update(r, quant.Input); err != nil {
			t.Fatal(err)
		}
		if st.Scale != s.wantScale {
			t.Errorf("step %d scale after update = %g, want %g", i, st.Scale, s.wantScale)
		}
	}
	if _, err := New().Quantize(context.Background(), quant.Request{Recipe: r, Role: quant.Input}, row(1)); err == nil {
		t.Error("delayed scaling without a state accepted")
	}
	bad := quant.NewState(r)
	bad.AmaxHistory = bad.AmaxHistory[:1]
	if _, err := New().Quantize(context.Background(), quant.Request{Recipe: r, Role: quant.Input, State: bad}, row(1)); err == nil {
		t.Error("state with the wrong history length accepted")
	}
}

func TestBlockScalingVectors(t *testing.T) {
	x := make([]float32, 130)
	x[0], x[1], x[128], x[129] = 448, 1, 1, 0.5
	pow2 := quant.DefaultRecipe(quant.Float8BlockScaling)
	fp32 := pow2
	fp32.Block.Power2Scales = false
	cases := []struct {
		name         string
		recipe       quant.Recipe
		wantCodes    [4]byte // elements 0, 1, 128, 129
		wantScaleInv []float32
	}{
		{"power-of-2 scales", pow2, [4]byte{0x7E, 0x38, 0x78, 0x70}, []float32{1, 0, 0, 0, 1.0 / 256, 0, 0, 0}},
		{"float32 scales", fp32, [4]byte{0x7E, 0x38, 0x7E, 0x76}, []float32{1, 0, 0, 0, 1.0 / 448, 0, 0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mustQuantize(t, tc.recipe, quant.Input, nil, row(x...))
			d := res.Rowwise.Data
			if diff := cmp.Diff(tc.wantCodes, [4]byte{d[0], d[1], d[128], d[129]}); diff != "" {
				t.Errorf("codes (-want +got):\n%s", diff)
			}
			// Rowwise 1x128 scales are [ceil(K/128), roundup(M,4)] = [2, 4].
			if diff := cmp.Diff(tc.wantScaleInv, res.Rowwise.ScaleInv); diff != "" {
				t.Errorf("scale_inv (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMXFP8Vectors(t *testing.T) {
	x := make([]float32, 64)
	x[0], x[1] = 448, 1 // block 0: amax 448, e = 127
	x[32], x[33] = 14.4, 1
	te := quant.DefaultRecipe(quant.MXFP8BlockScaling)
	ocp := te
	ocp.MXFP8.ScaleRounding = quant.ScaleRoundingOCP
	cases := []struct {
		name       string
		recipe     quant.Recipe
		wantCodes  [4]byte // elements 0, 1, 32, 33
		wantScales [4]byte
	}{
		// TE: 14.4/448 rounds up to 2^-4, so the block is scaled by 16:
		// 230.4 -> 224 (0x76), 16 (0x58).
		{"TE rounding", te, [4]byte{0x7E, 0x38, 0x76, 0x58}, [4]byte{127, 123, 0, 0}},
		// OCP: floor(log2 14.4) - 8 = -5, scaled by 32: 460.8 saturates.
		{"OCP rounding saturates above significand 1.75", ocp, [4]byte{0x7E, 0x38, 0x7E, 0x60}, [4]byte{127, 122, 0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mustQuantize(t, tc.recipe, quant.Input, nil, row(x...))
			d := res.Rowwise.Data
			if diff := cmp.Diff(tc.wantCodes, [4]byte{d[0], d[1], d[32], d[33]}); diff != "" {
				t.Errorf("codes (-want +got):\n%s", diff)
			}
			s := res.Rowwise.ScaleCodes
			if len(s) != 128*4 {
				t.Fatalf("scale matrix has %d entries, want [128, 4]", len(s))
			}
			if diff := cmp.Diff(tc.wantScales, [4]byte{s[0], s[1], s[2], s[3]}); diff != "" {
				t.Errorf("scales (-want +got):\n%s", diff)
			}
			// Swizzled: row 0 of the only tile occupies bytes 0..3.
			if diff := cmp.Diff(tc.wantScales[:], res.Rowwise.Swizzled[:4]); diff != "" {
				t.Errorf("swizzled scales (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("subnormal t rounds up to e = 1 (contract v2)", func(t *testing.T) {
		// Worked by hand: amax = 2^-118; 1/448 in float32 is 0x3B124925 =
		// 1.142857...·2^-9, so t = 1.142857·2^-127, a subnormal above
		// 2^-127 (mantissa 0x492492 > 0x400000): e = 1, factor 2^(127-1).
		// 2^-118·2^126 = 256 = E4M3 0 1111 000 = 0x78; 2^-120·2^126 = 64
		// = 0 1101 000 = 0x68. (Contract v1 gave e = 0 and 2^-118·2^127 =
		// 512 saturated to 0x7E.)
		res := mustQuantize(t, te, quant.Input, nil, row(0x1p-118, 0x1p-120))
		if got := res.Rowwise.ScaleCodes[0]; got != 1 {
			t.Errorf("e = %d, want 1", got)
		}
		if diff := cmp.Diff([]byte{0x78, 0x68}, res.Rowwise.Data); diff != "" {
			t.Errorf("codes (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]float32{0x1p-118, 0x1p-120}, mustDequantize(t, res, quant.UsageRowwise)); diff != "" {
			t.Errorf("dequantized (-want +got):\n%s", diff)
		}
	})
	t.Run("subnormal t at most 2^-127 keeps e = 0", func(t *testing.T) {
		// amax = 448·2^-127 = 3.5·2^-120: t = 448·2^-127 × 0x3B124925.
		// 448 × 1.142857...·2^-9 (float32 1/448 is 0x3B124925 =
		// 9586981·2^-32, and 448·9586981 = 4294967488 = 2^32 + 192) is
		// 1 + 192·2^-32 before rounding, times 2^-127: a subnormal with
		// m = 0x400000 + 192·2^-10, which rounds to m = 0x400000, exactly
		// 2^-127: e = 0. 448·2^-127 × 2^127 = 448 = 0x7E, not saturated;
		// 2^-127 × 2^127 = 1 = 0 0111 000 = 0x38.
		res := mustQuantize(t, te, quant.Input, nil, row(448*0x1p-127, 0x1p-127))
		if got := res.Rowwise.ScaleCodes[0]; got != 0 {
			t.Errorf("e = %d, want 0", got)
		}
		if diff := cmp.Diff([]byte{0x7E, 0x38}, res.Rowwise.Data); diff != "" {
			t.Errorf("codes (-want +got):\n%s", diff)
		}
	})
	t.Run("columnwise 32x1 blocks, data untransposed", func(t *testing.T) {
		x := quant.NewTensor(33, 2)
		x.Data[0], x.Data[2*31] = 448, 14.4 // column 0, rows 0 and 31: one block
		x.Data[2*32] = 14.4                 // column 0, row 32: second block
		res := mustQuantize(t, te, quant.Input, nil, x)
		c := res.Columnwise
		if c.Transposed || c.Rows != 33 || c.Cols != 2 {
			t.Fatalf("columnwise operand [%d, %d] transposed=%v", c.Rows, c.Cols, c.Transposed)
		}
		// Scales [roundup(ceil(33/32),4), roundup(2,128)] = [4, 128].
		if c.ScaleRows != 4 || c.ScaleCols != 128 {
			t.Fatalf("scale shape [%d, %d]", c.ScaleRows, c.ScaleCols)
		}
		if got := [3]byte{c.ScaleCodes[0], c.ScaleCodes[128], c.ScaleCodes[1]}; got != [3]byte{127, 123, 0} {
			t.Errorf("column scales (block0 col0, block1 col0, block0 col1) = %v", got)
		}
		if got := [2]byte{c.Data[2*31], c.Data[2*32]}; got != [2]byte{0x56, 0x76} {
			t.Errorf("codes of 14.4 in blocks 0 and 1 = %#x", got)
		}
	})
}

func TestNVFP4Vectors(t *testing.T) {
	plain := quant.DefaultRecipe(quant.NVFP4BlockScaling)
	t.Run("block of known values", func(t *testing.T) {
		x := make([]float32, 16)
		x[0], x[1], x[2], x[3] = 6, 3, 1.5, -0.5
		res := mustQuantize(t, plain, quant.Input, nil, row(x...))
		o := res.Rowwise
		if o.Scale != 448 {
			t.Errorf("tensor scale S = %g, want 2688/6 = 448", o.Scale)
		}
		if diff := cmp.Diff([]byte{0x57, 0x93, 0, 0, 0, 0, 0, 0}, o.Data); diff != "" {
			t.Errorf("packed codes, lower index in the low nibble (-want +got):\n%s", diff)
		}
		if o.ScaleCodes[0] != 0x7E {
			t.Errorf("block scale = %#x, want E4M3(448)", o.ScaleCodes[0])
		}
		if diff := cmp.Diff([]float32{6, 3, 1.5, -0.5}, mustDequantize(t, res, quant.UsageRowwise)[:4]); diff != "" {
			t.Errorf("dequantized (-want +got):\n%s", diff)
		}
	})
	t.Run("odd width pads the last nibble with zero", func(t *testing.T) {
		res := mustQuantize(t, plain, quant.Input, nil, row(6, 6, 6))
		if diff := cmp.Diff([]byte{0x77, 0x07}, res.Rowwise.Data); diff != "" {
			t.Errorf("packed (-want +got):\n%s", diff)
		}
	})
	t.Run("zero tensor: S = 1, d = 0, factor clamped, codes 0", func(t *testing.T) {
		res := mustQuantize(t, plain, quant.Input, nil, row(0, 0))
		o := res.Rowwise
		if o.Scale != 1 || o.ScaleCodes[0] != 0 || o.Data[0] != 0 {
			t.Errorf("S = %g, d = %#x, data = %#x", o.Scale, o.ScaleCodes[0], o.Data[0])
		}
	})
	t.Run("infinite amax: S = 1", func(t *testing.T) {
		res := mustQuantize(t, plain, quant.Input, nil, row(float32(math.Inf(1)), 1))
		if res.Rowwise.Scale != 1 {
			t.Errorf("S = %g, want 1", res.Rowwise.Scale)
		}
	})
	t.Run("block scale underflow: factor clamps to float32 max, codes saturate, decode to 0", func(t *testing.T) {
		x := make([]float32, 32)
		x[0] = 2688  // S = 1
		x[16] = 1e-6 // block 1: d = E4M3(1e-6/6) = 0
		res := mustQuantize(t, plain, quant.Input, nil, row(x...))
		o := res.Rowwise
		if o.ScaleCodes[1] != 0 {
			t.Fatalf("block 1 scale = %#x, want 0", o.ScaleCodes[1])
		}
		if o.Code(0, 16) != 0x7 {
			t.Errorf("code of 1e-6 = %#x, want saturated 0x7", o.Code(0, 16))
		}
		if d := mustDequantize(t, res, quant.UsageRowwise); d[16] != 0 {
			t.Errorf("dequantized %g, want 0", d[16])
		}
	})
	t.Run("RHT on the columnwise operand of an input", func(t *testing.T) {
		x := quant.NewTensor(16, 1)
		x.Data[0] = 1 // column 0 = e_0; H·diag(s)/4 · e_0 = 0.25 everywhere
		res := mustQuantize(t, plain, quant.Input, nil, x)
		c := res.Columnwise
		if !c.RHT || c.Amax != 0.25 {
			t.Fatalf("RHT %v, amax %g, want true and 0.25", c.RHT, c.Amax)
		}
		for j := range 16 {
			if c.Code(0, j) != 0x7 {
				t.Errorf("code %d = %#x, want 0x7", j, c.Code(0, j))
			}
		}
		for j, v := range mustDequantize(t, res, quant.UsageColumnwise) {
			if math.Abs(float64(v)-0.25) > 1e-6 {
				t.Errorf("dequantized %d = %g, want 0.25", j, v)
			}
		}
		// The rowwise operand is untransformed.
		if res.Rowwise.RHT || res.Rowwise.Code(0, 0) != 0x7 {
			t.Errorf("rowwise RHT %v code %#x", res.Rowwise.RHT, res.Rowwise.Code(0, 0))
		}
	})
	t.Run("RHT butterfly order and BF16 rounding decide the columnwise amax", func(t *testing.T) {
		// The hand-computed vector of hadamard's TestApplyHandComputedButterfly,
		// as column 0 (TE signs: x[3] negated): the butterfly gives
		// 1 + 2^-8 + 2^-23 at outputs 0, 4, 8, 12, which BF16 rounds up to
		// 1 + 2^-7. A sequential sum would give 1 + 2^-8 and BF16 1; no
		// rounding would give 1 + 2^-8 + 2^-23. The amax (and so the tensor
		// scale) must be the rounded 1 + 2^-7.
		x := quant.NewTensor(16, 1)
		copy(x.Data, []float32{4, 0x1p-6, 0x1p-22, -0x1p-22})
		res := mustQuantize(t, plain, quant.Input, nil, x)
		if c := res.Columnwise; !c.RHT || c.Amax != 1+0x1p-7 {
			t.Errorf("RHT %v, columnwise amax %g, want true and 1 + 2^-7", c.RHT, c.Amax)
		}
	})
	t.Run("weights get no RHT and share 16x16 tile scales", func(t *testing.T) {
		x := quant.NewTensor(32, 32)
		x.Data[0] = 6        // tile (0,0)
		x.Data[17*32+20] = 3 // tile (1,1)
		res := mustQuantize(t, plain, quant.Weight, nil, x)
		r, c := res.Rowwise, res.Columnwise
		if c.RHT || r.Stochastic {
			t.Error("weight got RHT or stochastic rounding")
		}
		for m := range 16 {
			if r.ScaleCodes[m*r.ScaleCols] != r.ScaleCodes[0] {
				t.Errorf("row %d of tile (0,0) has scale %#x, row 0 has %#x", m, r.ScaleCodes[m*r.ScaleCols], r.ScaleCodes[0])
			}
		}
		if r.ScaleCodes[16*r.ScaleCols+1] == 0 || r.ScaleCodes[16*r.ScaleCols] != 0 {
			t.Error("tile (1,1) scale missing or leaked into tile (1,0)")
		}
		if c.Code(20, 17) != r.Code(17, 20) {
			t.Errorf("columnwise code %#x is not the transposed rowwise code %#x", c.Code(20, 17), r.Code(17, 20))
		}
	})
}

func TestStochasticRoundingIsSeededAndUnbiased(t *testing.T) {
	r := quant.DefaultRecipe(quant.NVFP4BlockScaling)
	r.NVFP4.RandomHadamardTransform = false
	// Every block holds 6 (fixing d = 448 with S = 448, factor 1) and 4096
	// copies of 5, halfway between 4 and 6.
	x := quant.NewTensor(1, 16*256)
	for i := range x.Data {
		x.Data[i] = 5
		if i%16 == 0 {
			x.Data[i] = 6
		}
	}
	run := func(seed uint64) *quant.Result {
		res, err := New().Quantize(context.Background(), quant.Request{Recipe: r, Role: quant.Gradient, Usage: quant.UsageRowwise, Seed: seed}, x)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b, c := run(9), run(9), run(10)
	if diff := cmp.Diff(a.Rowwise.Data, b.Rowwise.Data); diff != "" {
		t.Errorf("same seed, different codes:\n%s", diff)
	}
	if cmp.Equal(a.Rowwise.Data, c.Rowwise.Data) {
		t.Error("different seeds gave the same codes")
	}
	up := 0
	for j := range x.Cols {
		if j%16 == 0 {
			continue
		}
		switch a.Rowwise.Code(0, j) {
		case 0x7:
			up++
		case 0x6:
		default:
			t.Fatalf("code %#x for 5", a.Rowwise.Code(0, j))
		}
	}
	if n := 15 * 256; up < n*45/100 || up > n*55/100 {
		t.Errorf("%d of %d halfway values rounded up", up, n)
	}
	// The same tensor under the Input role rounds to nearest even: all 4.
	res := mustQuantize(t, r, quant.Input, nil, x)
	if res.Rowwise.Code(0, 1) != 0x6 || res.Rowwise.Stochastic {
		t.Errorf("input role code %#x stochastic=%v", res.Rowwise.Code(0, 1), res.Rowwise.Stochastic)
	}
}
