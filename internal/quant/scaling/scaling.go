// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scaling

import (
	"math"

	"github.com/kquant/kquant/internal/quant/element"
)

const maxFloat32 = float32(math.MaxFloat32)

func isFinite(x float32) bool {
	return math.Float32bits(x)&0x7F800000 != 0x7F800000
}

// FromAmax returns the FP8 encode scale for a tensor or block whose amax is
// given (steps 1-4 of the contract's per-tensor rule): the amax is raised
// to epsilon; an amax of 0, inf or NaN gives 1; otherwise
// scale = fp8Max / amax in float32, an overflow to inf becomes the largest
// float32, and with pow2 the mantissa bits are cleared (rounding down to a
// power of two).
func FromAmax(amax, fp8Max, epsilon float32, pow2 bool) float32 {
	if amax < epsilon { // false for NaN amax, which then gives 1 below
		amax = epsilon
	}
	if amax == 0 || !isFinite(amax) {
		return 1
	}
	scale := fp8Max / amax
	if !isFinite(scale) {
		scale = maxFloat32
	}
	if pow2 {
		scale = math.Float32frombits(math.Float32bits(scale) & 0xFF800000)
	}
	return scale
}

// Inverse returns the stored decode factor scale_inv = 1 / scale.
func Inverse(scale float32) float32 {
	return 1 / scale
}

// AmaxAlgo picks the amax a delayed-scaling update derives its scale from.
type AmaxAlgo uint8

const (
	// AmaxMax takes the maximum of every history entry.
	AmaxMax AmaxAlgo = iota
	// AmaxMostRecent takes entry 0, the step that just ended.
	AmaxMostRecent
)

// DelayedUpdate performs the end-of-step update of delayed scaling on a
// scale and an amax history (entry 0 holds the step's amax), in place, and
// returns the new scale:
//
//   - the chosen amax is the maximum of all entries (AmaxMax, NaN
//     propagating, as torch.max does) or entry 0 (AmaxMostRecent);
//   - if it is 0, nothing changes at all: no roll, same scale;
//   - if it is finite and positive, scale = (fp8Max * 2^-margin) / amax with
//     inf becoming the largest float32; otherwise the old scale stays;
//   - then the history rolls left by one (entry i takes entry i+1, the last
//     takes the old entry 0) and entry 0 is zeroed.
//
// fp8Max*2^-margin is exact for the margins the API allows (0..32).
func DelayedUpdate(scale float32, history []float32, fp8Max float32, margin int, algo AmaxAlgo) float32 {
	if len(history) == 0 {
		return scale
	}
	amax := history[0]
	if algo == AmaxMax {
		for _, h := range history[1:] {
			if h > amax || h != h {
				amax = h
			}
			if amax != amax {
				break
			}
		}
	}
	if amax == 0 {
		return scale
	}
	if amax > 0 && isFinite(amax) {
		s := float32(math.Ldexp(float64(fp8Max), -margin)) / amax
		if !isFinite(s) {
			s = maxFloat32
		}
		scale = s
	}
	first := history[0]
	copy(history, history[1:])
	history[len(history)-1] = first
	history[0] = 0
	return scale
}

// MXFP8 scale rounding modes.
type Rounding uint8

const (
	// RoundingTE rounds the block exponent up (TransformerEngine).
	RoundingTE Rounding = iota
	// RoundingOCP uses floor(log2(amax)) - emax (OCP MX v1.0).
	RoundingOCP
)

// MXFP8Exponent returns the E8M0 code of an MXFP8 block with the given amax
// and element type. TE: t = amax * float32(1/fp8Max) (a multiply by the
// rounded reciprocal, not a division), rounded up by element.E8M0RoundUp.
// OCP: element.E8M0FloorOCP with the type's emax.
func MXFP8Exponent(amax float32, t element.Type, r Rounding) uint8 {
	if r == RoundingOCP {
		return element.E8M0FloorOCP(amax, t.EMax())
	}
	rcp := 1 / t.MaxFinite()
	return element.E8M0RoundUp(amax * rcp)
}

// MXFP8Rule is MXFP8Exponent with its per-type constants computed once, for
// the per-block loops; it gives the same codes.
type MXFP8Rule struct {
	rcp  float32
	emax int
	ocp  bool
}

// NewMXFP8Rule returns the exponent rule of an element type and rounding.
func NewMXFP8Rule(t element.Type, r Rounding) MXFP8Rule {
	return MXFP8Rule{rcp: 1 / t.MaxFinite(), emax: t.EMax(), ocp: r == RoundingOCP}
}

// Exponent returns MXFP8Exponent(amax, t, r) for the rule's t and r.
func (r MXFP8Rule) Exponent(amax float32) uint8 {
	if r.ocp {
		return element.E8M0FloorOCP(amax, r.emax)
	}
	return element.E8M0RoundUp(amax * r.rcp)
}

// MXFP8Factor returns the element factor 2^(127-e) of a block with E8M0
// code e: exact powers of two (e = 254 gives the float32 subnormal 2^-127),
// NaN for e = 255. It is the value of the E8M0 code 254-e, whose wrap-around
// maps 255 to 0xFF, E8M0's NaN.
func MXFP8Factor(e uint8) float32 {
	return element.E8M0ToFloat32(254 - e)
}

// The E4M3 bounds of NVFP4's tensor scale: the E4M3 maximum, and the
// smaller bound TE (nvfp4_4over6_e4m3_use_256) gives 4over6 tensors so
// that a map-to-4 block scale, 1.5 times the map-to-6 one, stays below the
// E4M3 maximum.
const (
	NVFP4Bound            float32 = 448
	NVFP4FourOverSixBound float32 = 256
)

// NVFP4TensorScale returns the tensor encode scale S = (448*6) / amax, the
// largest float32 if that overflows, and 1 if amax is 0 or S is 0 (amax
// infinite). amax is NaN-free by construction (NaN elements do not raise
// it); a NaN amax gives 1.
func NVFP4TensorScale(amax float32) float32 {
	return NVFP4TensorScaleBounded(amax, NVFP4Bound)
}

// NVFP4TensorScaleBounded is NVFP4TensorScale with bound (NVFP4Bound or
// NVFP4FourOverSixBound) in place of 448: S = (bound*6) / amax, the
// product exact.
func NVFP4TensorScaleBounded(amax, bound float32) float32 {
	if amax == 0 || amax != amax {
		return 1
	}
	s := bound * element.E2M1.MaxFinite() / amax
	switch {
	case !isFinite(s):
		return maxFloat32
	case s == 0:
		return 1
	}
	return s
}

// NVFP4BlockScale returns the E4M3 code of the block decode scale
// d = E4M3(blockAmax * (S / 6)), both operations float32 RNE, the
// conversion saturating.
func NVFP4BlockScale(blockAmax, s float32) uint8 {
	return element.ToE4M3(blockAmax * (s / element.E2M1.MaxFinite()))
}

// NVFP4ElementFactor returns f = 1 / (float(d) * (1 / S)), clamped to the
// largest float32 with fminf semantics: a zero block scale (f = +inf) and a
// NaN (unreachable for the S that NVFP4TensorScale produces) both give the
// largest float32.
func NVFP4ElementFactor(d uint8, s float32) float32 {
	return clampFactor(1 / (element.E4M3ToFloat32(d) * (1 / s)))
}

func clampFactor(f float32) float32 {
	if !(f <= maxFloat32) {
		return maxFloat32
	}
	return f
}

// NVFP4ElementFactorInv is NVFP4ElementFactor with 1/S computed by the
// caller once per tensor (sInv must be exactly the float32 1/S); the result
// is the same.
func NVFP4ElementFactorInv(d uint8, sInv float32) float32 {
	return clampFactor(1 / (element.E4M3ToFloat32(d) * sInv))
}

// NVFP4Decode returns the dequantized value of an E2M1 code q with block
// scale code d under tensor scale S: (E2M1(q) * float(d)) / S, the product
// exact and the division float32 RNE.
func NVFP4Decode(q, d uint8, s float32) float32 {
	return element.E2M1ToFloat32(q) * element.E4M3ToFloat32(d) / s
}

// FourOverSix holds an NVFP4 block's two 4over6 candidates (TE's
// nvfp4_4over6): the map-to-6 decode scale, which lets the block maximum
// reach E2M1's 6, and the map-to-4 one, 1.5 times larger, which maps it
// near 4; with their element factors.
type FourOverSix struct {
	Map6, Map4 uint8   // E4M3 codes of the decode scales
	Inv6, Inv4 float32 // element factors, as NVFP4ElementFactorInv
}

// NewFourOverSix returns the candidates of a block with amax blockAmax in
// a tensor with encode scale s: base = (blockAmax / 6) * s (a division,
// then a multiply, both float32 RNE; not the multiply by a rounded 1/6 of
// NVFP4BlockScale), Map6 = E4M3(fminf(base, 448)), Map4 =
// E4M3(fminf(base * 1.5, 448)). The clamp is to the E4M3 maximum whatever
// the tensor scale's bound.
func NewFourOverSix(blockAmax, s float32) FourOverSix {
	base := float32(blockAmax/element.E2M1.MaxFinite()) * s
	map4 := float32(base * 1.5)
	sInv := 1 / s
	c := FourOverSix{
		Map6: element.ToE4M3(fminf(base, NVFP4Bound)),
		Map4: element.ToE4M3(fminf(map4, NVFP4Bound)),
	}
	c.Inv6 = NVFP4ElementFactorInv(c.Map6, sInv)
	c.Inv4 = NVFP4ElementFactorInv(c.Map4, sInv)
	return c
}

// fminf is C's fminf(x, y) for a finite y: a NaN x gives y.
func fminf(x, y float32) float32 {
	if x < y {
		return x
	}
	return y
}

// FourOverSixError returns the error measure of one element x that a
// 4over6 candidate encodes as E2M1 code q with decode scale code d, in a
// tensor of amax amax whose scale has the given bound (TE's default, not
// fast-math, error path):
//
//	val  = ((E2M1(q) * float(d)) * amax) / (6 * bound)   each step float32 RNE
//	diff = val - x
//	MAE: |diff|    MSE: diff * diff (rounded before any accumulation)
//
// The sum over a block is accumulated from 0 in element order by the
// caller; squared is false for MAE.
func FourOverSixError(q, d uint8, x, amax, bound float32, squared bool) float32 {
	denom := element.E2M1.MaxFinite() * bound // exact
	prod := float32(element.E2M1ToFloat32(q) * element.E4M3ToFloat32(d))
	val := float32(prod*amax) / denom
	diff := val - x
	if squared {
		return float32(diff * diff)
	}
	return float32(math.Abs(float64(diff)))
}

// SumTree16 adds 16 values in the order of a 16-lane shuffle-down
// reduction (offsets 8, 4, 2, 1), the order in which TE sums the per-row
// errors of a 16x16 4over6 tile: v[i] += v[i+8], then v[i] += v[i+4],
// v[i] += v[i+2], v[0] + v[1]. It works on a copy.
func SumTree16(v [16]float32) float32 {
	for h := 8; h >= 1; h /= 2 {
		for i := range h {
			v[i] += v[i+h]
		}
	}
	return v[0]
}
