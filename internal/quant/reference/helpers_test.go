// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package reference

import (
	"math"
	"math/rand/v2"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
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

// heavyTailedTensor draws Cauchy values (a normal over the absolute value of
// another) rounded to BF16, with 1 in 8 blocks scaled towards the float32
// subnormal range (magnitudes near 2^-118, where an MXFP8 block's t is a
// subnormal and the E8M0 rule's subnormal case decides the scale). Sums of
// such values cancel and round in ways normal data hides.
func heavyTailedTensor(rng *rand.Rand, rows, cols int) quant.Tensor {
	t := quant.NewTensor(rows, cols)
	for i := range t.Data {
		z := rng.NormFloat64() / math.Abs(rng.NormFloat64())
		if (i/16)%8 == 3 {
			z = math.Ldexp(z, -118)
		}
		t.Data[i] = element.BF16ToFloat32(element.Float32ToBF16(float32(z)))
	}
	return t
}

// boundaryTensor fills a tensor with values at the rounding boundaries of
// the element types at scale 1 and their neighbours (E4M3 and E5M2
// midpoints and maxima, the saturation thresholds, E2M1 midpoints, BF16
// midpoints), signed, mixed with random values so that block scales vary.
func boundaryTensor(rng *rand.Rand, rows, cols int) quant.Tensor {
	t := randomTensor(rng, rows, cols)
	base := []float32{
		448, 464, 480, 432, 57344, 61440, 65536, // E4M3/E5M2 max, thresholds
		1.0625, 1.1875, 0x1p-9, 0x1p-10, 0x1.8p-10, 0x1p-16, 0x1p-17, // E4M3 midpoints, subnormals
		0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 6, 7, // E2M1 midpoints, max
		1 + 0x1p-8, 1 + 0x1p-7 + 0x1p-8, // BF16 midpoints
	}
	for i := range t.Data {
		if rng.IntN(3) == 0 {
			v := base[rng.IntN(len(base))]
			switch rng.IntN(4) {
			case 0:
				v = math.Nextafter32(v, 0)
			case 1:
				v = math.Nextafter32(v, float32(math.Inf(1)))
			}
			if rng.IntN(2) == 0 {
				v = -v
			}
			t.Data[i] = v
		}
	}
	return t
}

// inputKinds are the input distributions the oracle tests run on.
var inputKinds = []struct {
	name string
	gen  func(rng *rand.Rand, rows, cols int) quant.Tensor
}{
	{"normal", randomTensor},
	{"heavy", heavyTailedTensor},
	{"boundary", boundaryTensor},
	{"special", specialTensor},
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
	add("nvfp4/4over6-weights", func(r *quant.Recipe) { r.NVFP4.FourOverSix = quant.ScopeWeights }, quant.NVFP4BlockScaling)
	add("nvfp4/4over6-all-MSE-448", func(r *quant.Recipe) {
		r.NVFP4.RandomHadamardTransform, r.NVFP4.FourOverSix = false, quant.ScopeAll
		r.NVFP4.FourOverSixErrorMode, r.NVFP4.FourOverSixE4M3Bound256 = quant.ErrorMSE, quant.ScopeNone
	}, quant.NVFP4BlockScaling)
	return out
}

var allRoles = []quant.TensorRole{quant.Input, quant.Weight, quant.Gradient}

func log10(x float64) float64 { return math.Log10(x) }
