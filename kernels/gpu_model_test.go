// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/internal/quant/reference"
	"github.com/kquant/kquant/internal/quant/scaling"
	"github.com/kquant/kquant/kernels"
)

// The expected bytes come from the reference (internal/quant/reference and the
// scaling rules and element conversions it is built from), so that the
// kernels are checked against the same oracle as the CUDA backend.

func elemType(f kernels.Format) element.Type {
	if f == kernels.E5M2 {
		return element.E5M2
	}
	return element.E4M3
}

// parallel runs fn over [0, n) in contiguous chunks on all CPUs.
func parallel(n int, fn func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if n < 64 || workers == 1 {
		fn(0, n)
		return
	}
	chunk := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}

// amaxOf is amaxSmall on all CPUs.
func amaxOf(v []float32) float32 {
	var mu sync.Mutex
	var m float32
	parallel(len(v), func(lo, hi int) {
		var l float32
		for _, x := range v[lo:hi] {
			if a := float32(math.Abs(float64(x))); a > l {
				l = a
			}
		}
		mu.Lock()
		if l > m {
			m = l
		}
		mu.Unlock()
	})
	return m
}

type tensorState struct{ amax, scale, scaleInv float32 }

func modelCurrentScale(v []float32, f kernels.Format, eps float32, pow2 bool) tensorState {
	a := amaxOf(v)
	scale := scaling.FromAmax(a, f.MaxFinite(), eps, pow2)
	// The state keeps the raw amax; the epsilon only enters the scale.
	return tensorState{amax: a, scale: scale, scaleInv: scaling.Inverse(scale)}
}

func modelCast(v []float32, scale float32, f kernels.Format) []byte {
	out := make([]byte, len(v))
	t := elemType(f)
	parallel(len(v), func(lo, hi int) { t.EncodeScaled(out[lo:hi], v[lo:hi], scale) })
	return out
}

func transpose(q []byte, rows, cols int) []byte {
	out := make([]byte, len(q))
	parallel(rows, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			for c := 0; c < cols; c++ {
				out[c*rows+r] = q[r*cols+c]
			}
		}
	})
	return out
}

// delayedModel is the delayed-scaling state: scale and amax history.
type delayedModel struct {
	scale float32
	hist  []float32
}

func newDelayedModel(n int) *delayedModel { return &delayedModel{scale: 1, hist: make([]float32, n)} }

// step quantizes with the current scale and records the amax in entry 0.
func (d *delayedModel) step(v []float32, f kernels.Format) (q []byte, scaleInv float32) {
	q = modelCast(v, d.scale, f)
	if a := amaxOf(v); a > d.hist[0] {
		d.hist[0] = a
	}
	return q, 1 / d.scale
}

func (d *delayedModel) update(f kernels.Format, margin int, mostRecent bool) {
	algo := scaling.AmaxMax
	if mostRecent {
		algo = scaling.AmaxMostRecent
	}
	d.scale = scaling.DelayedUpdate(d.scale, d.hist, f.MaxFinite(), margin, algo)
}

// modelMXFP8 quantizes [rows, cols] in 1x32 (or 32x1) blocks with the
// reference backend and returns the data (same layout as the input) and the
// padded scale matrix.
func modelMXFP8(v []float32, rows, cols int, colwise bool, f kernels.Format, ocp bool) (data, scales []byte) {
	r := quant.DefaultRecipe(quant.MXFP8BlockScaling)
	role := quant.Input
	if f == kernels.E5M2 {
		r.Format, role = quant.FormatHybrid, quant.Gradient
	}
	if ocp {
		r.MXFP8.ScaleRounding = quant.ScaleRoundingOCP
	}
	u := quant.UsageRowwise
	if colwise {
		u = quant.UsageColumnwise
	}
	res, err := reference.New().Quantize(context.Background(), quant.Request{Recipe: r, Role: role, Usage: u},
		quant.Tensor{Rows: rows, Cols: cols, Data: v})
	if err != nil {
		panic(err)
	}
	o := res.Operand(u)
	return o.Data, o.ScaleCodes
}

// ---- inputs -----------------------------------------------------------------

type input struct {
	dt   kernels.DType
	raw  []byte    // what the kernel reads
	vals []float32 // the same values widened to float32
}

// makeInput draws n values over a wide dynamic range (2^-24 .. 2^20 times a
// normal variate); with specials, about 1% of elements become NaN, +-inf,
// values near the type's maximum, subnormals or signed zeros.
func makeInput(dt kernels.DType, n int, specials bool, seed uint64) input {
	in := input{dt: dt, raw: make([]byte, n*dt.Size()), vals: make([]float32, n)}
	const chunk = 1 << 16
	parallel((n+chunk-1)/chunk, func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			rng := rand.New(rand.NewPCG(seed, uint64(ch)))
			for i := ch * chunk; i < min(n, (ch+1)*chunk); i++ {
				x := float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(45)-24))
				if ch%4 == 3 {
					x = heavyTailed(rng, i)
				}
				var bits uint32
				if specials && rng.IntN(100) == 0 {
					bits = specialBits(dt, rng.IntN(9), rng.IntN(2) == 1)
				} else {
					bits = encodeIn(dt, x)
				}
				in.setBits(i, bits)
			}
		}
	})
	return in
}

func (in input) setBits(i int, bits uint32) {
	switch in.dt {
	case kernels.F32:
		in.raw[4*i], in.raw[4*i+1], in.raw[4*i+2], in.raw[4*i+3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
		in.vals[i] = math.Float32frombits(bits)
	case kernels.BF16:
		in.raw[2*i], in.raw[2*i+1] = byte(bits), byte(bits>>8)
		in.vals[i] = element.BF16ToFloat32(uint16(bits))
	case kernels.F16:
		in.raw[2*i], in.raw[2*i+1] = byte(bits), byte(bits>>8)
		in.vals[i] = element.FP16ToFloat32(uint16(bits))
	}
}

func encodeIn(dt kernels.DType, x float32) uint32 {
	switch dt {
	case kernels.BF16:
		return uint32(element.Float32ToBF16(x))
	case kernels.F16:
		return uint32(element.Float32ToFP16(x))
	}
	return math.Float32bits(x)
}

// specialBits returns the bits of special value k in dt, negated if neg.
func specialBits(dt kernels.DType, k int, neg bool) uint32 {
	var b uint32
	switch dt {
	case kernels.F32:
		b = [...]uint32{0x7FC00000, 0x7F800000, 0x7F7FFFFF, 0x7E967699, 0x00000001, 0x007FFFFF, 0, 0x43E80000, 0x3A800000}[k] // NaN, inf, max, 1e38, subnormals, 0, 464, 2^-10
		if neg {
			b |= 0x80000000
		}
	case kernels.BF16:
		b = [...]uint32{0x7FC0, 0x7F80, 0x7F7F, 0x7E97, 0x0001, 0x007F, 0, 0x43E8, 0x3A80}[k]
		if neg {
			b |= 0x8000
		}
	case kernels.F16:
		b = [...]uint32{0x7E00, 0x7C00, 0x7BFF, 0x7800, 0x0001, 0x03FF, 0, 0x5F40, 0x1400}[k]
		if neg {
			b |= 0x8000
		}
	}
	return b
}

// heavyTailed draws element i of a heavy-tailed chunk (every fourth chunk
// of an input): Cauchy values, a normal over the absolute value of another,
// whose runs of 16 cancel and round in the ways that expose a summation
// order (the RHT) where the wide-range normal draws do not; one block of 32
// in 8 is scaled by 2^-118 (held by F32 and BF16 inputs), where an MXFP8
// block's t is a float32 subnormal and the E8M0 rule's subnormal case sets
// the scale.
func heavyTailed(rng *rand.Rand, i int) float32 {
	z := rng.NormFloat64() / math.Abs(rng.NormFloat64())
	if (i/32)%8 == 5 {
		z = math.Ldexp(z, -118)
	}
	return float32(z)
}
