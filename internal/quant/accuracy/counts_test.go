package accuracy

import (
	"context"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kquant/kquant/internal/quant"
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
		// Scale 2: 600 and -450 are above 448; 400 is not; 224·2 = 448 is
		// the max itself, not above it; 2e-4 < 2^-10 becomes 0.
		{"delayed: scale 2", delayed, 0, 2, row(300, 200, -225, 1e-4, 224), Counts{Saturated: 2, FlushedToZero: 1}},
		// TE rounding: t = 448·float32(1/448) = (2^32+192)·2^-32 rounds
		// to 1, e = 127, factor 1: nothing is above 448; 1e-9 flushes.
		{"mxfp8 TE: never saturates", mxTE, 0, 0, row(448, 1e-9, -448), Counts{FlushedToZero: 1}},
		// OCP: e = floor(log2 14.4) - 8 + 127 = 122, factor 2^5: 460.8 >
		// 448 saturates, 32 does not.
		{"mxfp8 OCP: significand above 1.75 saturates", mxOCP, 0, 0, row(14.4, 1), Counts{Saturated: 1}},
		// Tensor amax 6: S = 448; block 0: d = E4M3(6·448/6) = 448 and f =
		// 1/(448·float32(1/448)) = 1 (the product rounds to 1), so 6 → 6,
		// not above. Block 1: d = E4M3(4.4·74.67 = 328.5) rounds down to
		// 320, f ≈ 448/320 = 1.4, and 4.4·1.4 = 6.16 > 6: saturated
		// (although it converts to 6 without clamping: the rule is "above
		// the max").
		{"nvfp4: block scale rounded down", nvPlain, 0, 0, row(nvBlocks...), Counts{Saturated: 1}},
		{"nvfp4: small value flushes", nvPlain, 0, 0, row(6, 3, 1.5, -0.5, 0.1), Counts{FlushedToZero: 1}},
		// Columnwise only, so counted there, after the RHT: column
		// [168, 0, ...] is e_0 scaled; y_i = s_0·168/4 = 42 for all 16
		// rows (BF16 exact). Amax 42: S = 2688/42 = 64; d = E4M3(42 ·
		// float32(64/6)) = 448; f = 1/(448·2^-6) = float32(1/7) =
		// 9586981·2^-26, and 42·f = 6·(2^26+3)·2^-26 = 6 + 1.125·2^-22,
		// which rounds to 6 + 2^-21 > 6: all 16 count as saturated.
		{"nvfp4 columnwise only: counted after the RHT", nvRHT, quant.UsageColumnwise, 0, rhtColumn, Counts{Saturated: 16}},
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
