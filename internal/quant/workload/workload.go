// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package workload

import (
	"fmt"
	"math"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/internal/quant/philox"
)

// Distribution is what the input is drawn from (the API's names).
type Distribution string

// The distributions.
const (
	Normal      Distribution = "Normal"
	Uniform     Distribution = "Uniform"
	HeavyTailed Distribution = "HeavyTailed"
)

// DType is the element type the generated values are rounded to.
type DType string

// The dtypes.
const (
	BF16 DType = "BF16"
	FP16 DType = "FP16"
	FP32 DType = "FP32"
)

// Spec describes a generated tensor.
type Spec struct {
	Distribution Distribution
	DType        DType
	Seed         int64
	// Stream separates tensors generated from one seed (for example 0 for
	// a linear layer's input and 1 for its weight, or one per shape).
	Stream uint32
}

func (s Spec) withDefaults() Spec {
	if s.Distribution == "" {
		s.Distribution = Normal
	}
	if s.DType == "" {
		s.DType = BF16
	}
	return s
}

// Generate returns the [rows, cols] tensor of the spec.
func Generate(spec Spec, rows, cols int) (quant.Tensor, error) {
	spec = spec.withDefaults()
	if rows < 0 || cols < 0 {
		return quant.Tensor{}, fmt.Errorf("generating input: negative shape [%d, %d]", rows, cols)
	}
	var round func(float32) float32
	switch spec.DType {
	case FP32:
		round = func(v float32) float32 { return v }
	case BF16:
		round = func(v float32) float32 { return element.BF16ToFloat32(element.Float32ToBF16(v)) }
	case FP16:
		round = func(v float32) float32 { return element.FP16ToFloat32(element.Float32ToFP16(v)) }
	default:
		return quant.Tensor{}, fmt.Errorf("generating input: unknown dtype %q (want BF16, FP16 or FP32)", string(spec.DType))
	}
	g := gen{key: philox.KeyFromSeed(uint64(spec.Seed)), stream: spec.Stream}
	t := quant.NewTensor(rows, cols)
	switch spec.Distribution {
	case Uniform:
		for n := range t.Data {
			w := philox.Block(g.counter(uint64(n), 0, 0), g.key)
			u := float32(w[0]>>8) * 0x1p-24
			t.Data[n] = round(2*u - 1)
		}
	case Normal:
		for n := 0; n < len(t.Data); n += 2 {
			z0, z1 := g.normalPair(uint64(n/2), 0)
			t.Data[n] = round(float32(z0))
			if n+1 < len(t.Data) {
				t.Data[n+1] = round(float32(z1))
			}
		}
	case HeavyTailed:
		for n := range t.Data {
			z0, z1 := g.normalPair(uint64(n), 1)
			z2, z3 := g.normalPair(uint64(n), 2)
			chi := float64(z1*z1) + float64(z2*z2)
			chi = chi + float64(z3*z3)
			t.Data[n] = round(float32(z0 / math.Sqrt(chi/3)))
		}
	default:
		return quant.Tensor{}, fmt.Errorf("generating input: unknown distribution %q (want Normal, Uniform or HeavyTailed)", string(spec.Distribution))
	}
	return t, nil
}

type gen struct {
	key    philox.Key
	stream uint32
}

func (g gen) counter(i uint64, lane, attempt uint32) philox.Counter {
	return philox.Counter{uint32(i), uint32(i >> 32), g.stream, lane<<16 | attempt&0xFFFF}
}

// normalPair returns two independent standard normal values (polar method).
func (g gen) normalPair(i uint64, lane uint32) (float64, float64) {
	for attempt := uint32(0); ; attempt++ {
		w := philox.Block(g.counter(i, lane, attempt), g.key)
		v1 := (float64(w[0])+0.5)*0x1p-31 - 1
		v2 := (float64(w[1])+0.5)*0x1p-31 - 1
		s := float64(v1*v1) + float64(v2*v2)
		if s > 0 && s < 1 {
			f := math.Sqrt(-2 * ln(s) / s)
			return float64(v1 * f), float64(v2 * f)
		}
	}
}

// ln returns the natural logarithm of x > 0 (finite), to about 1 ulp,
// with float64 operations only, so that every platform computes the same
// bits (math.Log is assembly on some architectures). x = f·2^e with f in
// [√½, √2); ln f = 2·atanh(s) with s = (f−1)/(f+1), |s| < 0.172, summed
// as the odd series up to s^25.
func ln(x float64) float64 {
	f, e := math.Frexp(x) // f in [0.5, 1)
	if f < math.Sqrt2/2 {
		f *= 2
		e--
	}
	s := (f - 1) / (f + 1)
	s2 := float64(s * s)
	// Horner from the highest term; the explicit conversions keep each
	// product rounded on its own (no fused multiply-add).
	sum := 1.0 / 25
	for k := 23; k >= 1; k -= 2 {
		sum = float64(sum*s2) + 1/float64(k)
	}
	return float64(float64(e)*math.Ln2) + float64(2*float64(s*sum))
}

// UniformSplits splits rows into count groups of equal aligned size: every
// group gets the same number of align-row chunks, the first groups one
// chunk more while chunks remain, and the last group also any rows that do
// not fill a chunk (so a misaligned row count shows as a misaligned last
// group, which the quantize then reports).
func UniformSplits(rows, count, align int) ([]int, error) {
	if err := checkSplitArgs(rows, count, align); err != nil {
		return nil, err
	}
	chunks := rows / align
	out := make([]int, count)
	for g := range out {
		out[g] = chunks / count * align
		if g < chunks%count {
			out[g] += align
		}
	}
	out[count-1] += rows % align
	return out, nil
}

// RandomSplits draws aligned split sizes from seed: each align-row chunk
// goes to a group chosen by Philox (key from seed, counter (chunk, 0,
// 0xFFFFFFFF, 0), word 0 modulo count); rows that do not fill a chunk go to
// the last group.
func RandomSplits(rows, count, align int, seed int64) ([]int, error) {
	if err := checkSplitArgs(rows, count, align); err != nil {
		return nil, err
	}
	key := philox.KeyFromSeed(uint64(seed))
	out := make([]int, count)
	for c := range rows / align {
		w := philox.Block(philox.Counter{uint32(c), uint32(uint64(c) >> 32), 0xFFFFFFFF, 0}, key)
		out[w[0]%uint32(count)] += align
	}
	out[count-1] += rows % align
	return out, nil
}

func checkSplitArgs(rows, count, align int) error {
	switch {
	case rows < 0:
		return fmt.Errorf("splitting: negative row count %d", rows)
	case count < 1:
		return fmt.Errorf("splitting: group count %d is below 1", count)
	case align < 1:
		return fmt.Errorf("splitting: alignment %d is below 1", align)
	}
	return nil
}
