package reference

import (
	"math"
	"math/rand/v2"

	"github.com/kquant/kquant/internal/quant"
)

// randomTensor draws a tensor whose magnitudes span many binades, so that
// blocks differ in scale, with exact zeros.
func randomTensor(rng *rand.Rand, rows, cols int) quant.Tensor {
	t := quant.NewTensor(rows, cols)
	for i := range t.Data {
		switch rng.IntN(20) {
		case 0:
			t.Data[i] = 0
		default:
			t.Data[i] = float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(12)-6)))
		}
	}
	return t
}

// specialTensor sprinkles NaN, infinities, subnormals and huge values into
// a random tensor.
func specialTensor(rng *rand.Rand, rows, cols int) quant.Tensor {
	t := randomTensor(rng, rows, cols)
	specials := []float32{
		float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0x1p-149, -0x1p-140,
		math.MaxFloat32, -3e38, float32(math.Copysign(0, -1)), 1e-30,
	}
	for i := range t.Data {
		if rng.IntN(50) == 0 {
			t.Data[i] = specials[rng.IntN(len(specials))]
		}
	}
	return t
}

type recipeCase struct {
	name   string
	recipe quant.Recipe
}

// allRecipes returns every scheme with its TE defaults and with each
// option flipped.
func allRecipes() []recipeCase {
	var out []recipeCase
	add := func(name string, mod func(*quant.Recipe), s quant.Scheme) {
		r := quant.DefaultRecipe(s)
		if mod != nil {
			mod(&r)
		}
		out = append(out, recipeCase{name, r})
	}
	add("delayed/default", nil, quant.DelayedScaling)
	add("delayed/E4M3/most_recent/margin1", func(r *quant.Recipe) {
		r.Format, r.Delayed.AmaxComputeAlgo, r.Delayed.Margin, r.Delayed.AmaxHistoryLen = quant.FormatE4M3, quant.AmaxComputeMostRecent, 1, 4
	}, quant.DelayedScaling)
	add("current/default", nil, quant.Float8CurrentScaling)
	add("current/pow2/epsilon", func(r *quant.Recipe) {
		r.Current.Power2Scales, r.Current.AmaxEpsilon = true, 1e-3
	}, quant.Float8CurrentScaling)
	add("block/default", nil, quant.Float8BlockScaling)
	add("block/fp32/hybrid", func(r *quant.Recipe) { r.Block.Power2Scales, r.Format = false, quant.FormatHybrid }, quant.Float8BlockScaling)
	add("mxfp8/default", nil, quant.MXFP8BlockScaling)
	add("mxfp8/ocp/hybrid", func(r *quant.Recipe) {
		r.MXFP8.ScaleRounding, r.Format = quant.ScaleRoundingOCP, quant.FormatHybrid
	}, quant.MXFP8BlockScaling)
	add("mxfp8/2d", func(r *quant.Recipe) { r.MXFP8.TwoDimensionalWeights = true }, quant.MXFP8BlockScaling)
	add("nvfp4/default", nil, quant.NVFP4BlockScaling)
	add("nvfp4/plain", func(r *quant.Recipe) {
		r.NVFP4.RandomHadamardTransform, r.NVFP4.StochasticRounding, r.NVFP4.TwoDimensionalWeights = false, false, false
	}, quant.NVFP4BlockScaling)
	return out
}

var allRoles = []quant.TensorRole{quant.Input, quant.Weight, quant.Gradient}

func log10(x float64) float64 { return math.Log10(x) }
