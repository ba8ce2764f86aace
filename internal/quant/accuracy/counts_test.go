// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package accuracy

import (
	"context"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/internal/quant/reference"
)

func TestCountHandComputed(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	current := quant.DefaultRecipe(quant.Float8CurrentScaling)
	delayed := quant.DefaultRecipe(quant.DelayedScaling)
	delayed.Delayed.AmaxHistoryLen = 1
	mxTE := quant.DefaultRecipe(quant.MXFP8BlockScaling)
	mxOCP := mxTE
	mxOCP.MXFP8.ScaleRounding = quant.ScaleRoundingOCP
	nvPlain := quant.DefaultRecipe(quant.NVFP4BlockScaling)
	nvPlain.NVFP4.RandomHadamardTransform, nvPlain.NVFP4.StochasticRounding = false, false
	nvRHT := quant.DefaultRecipe(quant.NVFP4BlockScaling)
	nvRHT.NVFP4.StochasticRounding = false
	blockFP32 := quant.DefaultRecipe(quant.Float8BlockScaling)
	blockFP32.Block.Power2Scales = false

	nvBlocks := make([]float32, 32)
	nvBlocks[0], nvBlocks[16] = 6, 4.4
	rhtColumn := quant.NewTensor(16, 1)
	rhtColumn.Data[0] = 168
	blockRow := make([]float32, 130)
	blockRow[0], blockRow[1], blockRow[128] = 3, 1e-6, 1

	cases := []struct {
		name       string
		recipe     quant.Recipe
		usage      quant.Usage
		stateScale float32
		x          quant.Tensor
		want       Counts
	}{
		// amax is +inf (NaN ignored), so the scale is 1: 2 stays 2; 1e-6
		// is below half of E4M3's smallest subnormal 2^-9 and becomes 0;
		// NaN and inf are counted in neither.
		{"current: inf amax gives scale 1, NaN and inf not counted", current, 0, 0,
			row(2, 1e-6, nan, inf, -inf), Counts{FlushedToZero: 1}},
		// Scale 2: 600 is beyond E4M3's midpoint 464 and clamps; -450 is
		// above 448 but rounds to -448 by itself; 400 is in range; 224·2 =
		// 448 is the max; 2e-4 < 2^-10 becomes 0; 232·2 = 464, the tie,
		// rounds to even 448: not clamped.
		{"delayed: scale 2", delayed, 0, 2, row(300, 200, -225, 1e-4, 224, 232), Counts{Saturated: 1, FlushedToZero: 1}},
		// TE rounding: t = 448·float32(1/448) = (2^32+192)·2^-32 rounds
		// to 1, e = 127, factor 1: nothing is above 448; 1e-9 flushes.
		{"mxfp8 TE: never saturates", mxTE, 0, 0, row(448, 1e-9, -448), Counts{FlushedToZero: 1}},
		// OCP: e = floor(log2 15.5) - 8 + 127 = 122, factor 2^5: 496 >
		// 464 clamps, 32 does not; 14.4 in its own block (a block is 32
		// elements) gives 460.8, which rounds to 448 unclamped.
		{"mxfp8 OCP: significand well above 1.75 saturates", mxOCP, 0, 0, row(15.5, 1), Counts{Saturated: 1}},
		{"mxfp8 OCP: just above the max rounds, not clamps", mxOCP, 0, 0, row(14.4, 1), Counts{}},
		// Tensor amax 6: S = 448; block 0: d = E4M3(6·448/6) = 448 and f =
		// 1/(448·float32(1/448)) = 1 (the product rounds to 1), so 6 → 6,
		// not above. Block 1: d = E4M3(4.4·74.67 = 328.5) rounds down to
		// 320, f ≈ 448/320 = 1.4, and 4.4·1.4 = 6.16: above 6 but below
		// the midpoint 7, so it rounds to 6 unclamped: not saturated.
		{"nvfp4: block scale rounded down", nvPlain, 0, 0, row(nvBlocks...), Counts{}},

		{"nvfp4: small value flushes", nvPlain, 0, 0, row(6, 3, 1.5, -0.5, 0.1), Counts{FlushedToZero: 1}},
		// Columnwise only, so counted there, after the RHT: column
		// [168, 0, ...] is e_0 scaled; y_i = s_0·168/4 = 42 for all 16
		// rows (BF16 exact). Amax 42: S = 2688/42 = 64; d = E4M3(42 ·
		// float32(64/6)) = 448; f = 1/(448·2^-6) = float32(1/7) =
		// 9586981·2^-26, and 42·f = 6·(2^26+3)·2^-26 = 6 + 1.125·2^-22,
		// which rounds to 6 + 2^-21: above 6 by a float32 step, far below
		// the midpoint 7, so none of the 16 clamps.
		{"nvfp4 columnwise only: counted after the RHT", nvRHT, quant.UsageColumnwise, 0, rhtColumn, Counts{}},
		// Block 1x128 with float32 scales: block 0 amax 3, scale
		// float32(448/3) = 149.33333587646484, and 3·that = 448.0000076
		// rounds to 448: not above; 1e-6·149.3 = 1.5e-4 flushes. Block 1
		// (element 128): 1·448 = 448, not above.
		{"block 1x128: scale recomputed from the block amax", blockFP32, 0, 0, row(blockRow...), Counts{FlushedToZero: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var st *quant.State
			if tc.recipe.Scheme == quant.DelayedScaling {
				st = quant.NewState(tc.recipe)
				st.Scale = tc.stateScale
			}
			res, err := reference.New().Quantize(context.Background(), quant.Request{Recipe: tc.recipe, Role: quant.Input, Usage: tc.usage, State: st}, tc.x)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Count(tc.x, res)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Count (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClampsAtEachFormatsMidpoint pins the rule's boundary per format: the
// max itself and values below the midpoint round without clamping; beyond it,
// and at it where round-to-even goes up, they clamp.
func TestClampsAtEachFormatsMidpoint(t *testing.T) {
	for _, tc := range []struct {
		typ         element.Type
		notClamped  []float32
		wantClamped []float32
	}{
		{element.E4M3, []float32{448, 463.9, 464, -464}, []float32{464.01, -500, 1e30}},
		{element.E5M2, []float32{57344, 61439}, []float32{61440, -61440, 70000}},
		{element.E2M1, []float32{6, 6.9999, -6.5}, []float32{7, -7, 8}},
	} {
		clamped := clamps(tc.typ)
		for _, p := range tc.notClamped {
			if clamped(p) {
				t.Errorf("%s: %g counted as clamped", tc.typ, p)
			}
		}
		for _, p := range tc.wantClamped {
			if !clamped(p) {
				t.Errorf("%s: %g not counted as clamped", tc.typ, p)
			}
		}
		if clamped(float32(math.NaN())) {
			t.Errorf("%s: NaN counted", tc.typ)
		}
	}
}

func TestCountRejectsMismatchedInput(t *testing.T) {
	res, err := reference.New().Quantize(context.Background(), quant.Request{Recipe: quant.DefaultRecipe(quant.Float8CurrentScaling), Role: quant.Input}, row(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Count(row(1, 2, 3), res); err == nil {
		t.Error("shape mismatch accepted")
	}
	if _, err := Count(row(1, 2), &quant.Result{}); err == nil {
		t.Error("result without operands accepted")
	}
}

func row(v ...float32) quant.Tensor { return tensor(1, len(v), v...) }
