// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package reference

import (
	"math"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/internal/quant/philox"
	"github.com/kquant/kquant/internal/quant/scaling"
)

// This file is a slow, element-by-element restatement of the recipes: for
// every element of every operand it finds the element's block by brute
// force, computes the block's amax, scale and code with the scalar rules,
// and writes the expected codes and the expected padded scale matrix. It
// shares only the scalar rules (element, scaling, philox.Block) with the
// backend, not its loops, strides, packing or transposes.

type oracleOperand struct {
	rows, cols int
	codes      []uint8 // unpacked, row-major, stored orientation
	scaleRows  int
	scaleCols  int
	scaleInv   []float32
	scaleCodes []uint8
	tensorS    float32
}

func oracleTranspose(x quant.Tensor) quant.Tensor {
	t := quant.NewTensor(x.Cols, x.Rows)
	for i := range x.Rows {
		for j := range x.Cols {
			t.Data[j*x.Rows+i] = x.Data[i*x.Cols+j]
		}
	}
	return t
}

// oracleRHT is contract v2's RHT stated per output: y_i is H_16 · v
// evaluated as [H_8·a + H_8·b, H_8·a − H_8·b] on the halves a, b of v
// (the butterfly's order), v = ±x/4, each result rounded to BF16.
func oracleRHT(x quant.Tensor, signs uint16) quant.Tensor {
	out := quant.NewTensor(x.Rows, x.Cols)
	// wht returns entry i of the Sylvester transform of v in butterfly order.
	var wht func(v []float32, i int) float32
	wht = func(v []float32, i int) float32 {
		if len(v) == 1 {
			return v[0]
		}
		n := len(v) / 2
		a, b := wht(v[:n], i%n), wht(v[n:], i%n)
		if i < n {
			return float32(a + b)
		}
		return float32(a - b)
	}
	for r := range x.Rows {
		for c0 := 0; c0 < x.Cols; c0 += 16 {
			v := make([]float32, 16)
			for j := 0; j < 16 && c0+j < x.Cols; j++ {
				v[j] = float32(x.Data[r*x.Cols+c0+j] * 0.25)
				if signs>>j&1 == 1 {
					v[j] = -v[j]
				}
			}
			for i := 0; i < 16 && c0+i < x.Cols; i++ {
				out.Data[r*x.Cols+c0+i] = element.BF16ToFloat32(element.Float32ToBF16(wht(v, i)))
			}
		}
	}
	return out
}

// amaxCache memoizes block amaxes of one source matrix so that the
// per-element oracle does not rescan a block for each of its elements.
type amaxCache struct {
	x quant.Tensor
	m map[[4]int]float32
}

func (c *amaxCache) get(r0, r1, c0, c1 int) float32 {
	k := [4]int{r0, r1, c0, c1}
	if v, ok := c.m[k]; ok {
		return v
	}
	v := oracleAmax(c.x, r0, r1, c0, c1)
	c.m[k] = v
	return v
}

func newAmaxCache(x quant.Tensor) *amaxCache { return &amaxCache{x: x, m: map[[4]int]float32{}} }

func oracleAmax(x quant.Tensor, r0, r1, c0, c1 int) float32 {
	m := 0.0
	for i := r0; i < r1; i++ {
		for j := c0; j < c1; j++ {
			v := math.Abs(float64(x.Data[i*x.Cols+j]))
			if v > m { // NaN compares false and is skipped
				m = v
			}
		}
	}
	return float32(m)
}

func roundUpTo(a, b int) int { return (a + b - 1) / b * b }
func ceilTo(a, b int) int    { return (a + b - 1) / b }

// oracleQuantize returns the expected rowwise and columnwise operands.
func oracleQuantize(plan quant.Plan, x quant.Tensor, st *quant.State, seed uint64, group uint32) (row, col oracleOperand) {
	M, K := x.Rows, x.Cols
	xt := oracleTranspose(x)
	switch plan.Scheme {
	case quant.DelayedScaling, quant.Float8CurrentScaling:
		amax := oracleAmax(x, 0, M, 0, K)
		var scale float32
		if plan.Scheme == quant.DelayedScaling {
			scale = st.Scale
		} else {
			scale = scaling.FromAmax(amax, plan.Element.MaxFinite(), plan.Epsilon, plan.Power2Scales)
		}
		mk := func(src quant.Tensor) oracleOperand {
			o := oracleOperand{rows: src.Rows, cols: src.Cols, scaleRows: 1, scaleCols: 1, scaleInv: []float32{1 / scale}}
			for _, v := range src.Data {
				o.codes = append(o.codes, plan.Element.Encode(v*scale))
			}
			return o
		}
		return mk(x), mk(xt)
	case quant.Float8BlockScaling:
		fp8Max := plan.Element.MaxFinite()
		mk := func(src quant.Tensor, br, bc, sr, sc int, idx func(i, j int) int) oracleOperand {
			o := oracleOperand{rows: src.Rows, cols: src.Cols, scaleRows: sr, scaleCols: sc, scaleInv: make([]float32, sr*sc)}
			cache := newAmaxCache(src)
			for i := range src.Rows {
				for j := range src.Cols {
					r0, c0 := i/br*br, j/bc*bc
					a := cache.get(r0, min(r0+br, src.Rows), c0, min(c0+bc, src.Cols))
					s := scaling.FromAmax(a, fp8Max, plan.Epsilon, plan.Power2Scales)
					o.codes = append(o.codes, plan.Element.Encode(src.Data[i*src.Cols+j]*s))
					o.scaleInv[idx(i, j)] = 1 / s
				}
			}
			return o
		}
		if plan.BlockRows == 1 {
			row = mk(x, 1, 128, ceilTo(K, 128), roundUpTo(M, 4), func(i, j int) int { return (j/128)*roundUpTo(M, 4) + i })
			col = mk(xt, 1, 128, ceilTo(M, 128), roundUpTo(K, 4), func(i, j int) int { return (j/128)*roundUpTo(K, 4) + i })
		} else {
			rc := roundUpTo(ceilTo(K, 128), 4)
			cc := roundUpTo(ceilTo(M, 128), 4)
			row = mk(x, 128, 128, ceilTo(M, 128), rc, func(i, j int) int { return (i/128)*rc + j/128 })
			col = mk(xt, 128, 128, ceilTo(K, 128), cc, func(i, j int) int { return (i/128)*cc + j/128 })
		}
		return row, col
	case quant.MXFP8BlockScaling:
		mk := func(br, bc, sr, sc int, idx func(i, j int) int) oracleOperand {
			o := oracleOperand{rows: M, cols: K, scaleRows: sr, scaleCols: sc, scaleCodes: make([]uint8, sr*sc)}
			cache := newAmaxCache(x)
			for i := range M {
				for j := range K {
					r0, c0 := i/br*br, j/bc*bc
					a := cache.get(r0, min(r0+br, M), c0, min(c0+bc, K))
					e := scaling.MXFP8Exponent(a, plan.Element, plan.Rounding)
					o.codes = append(o.codes, plan.Element.Encode(x.Data[i*K+j]*scaling.MXFP8Factor(e)))
					o.scaleCodes[idx(i, j)] = e
				}
			}
			return o
		}
		rsc := roundUpTo(ceilTo(K, 32), 4)
		csc := roundUpTo(K, 128)
		br := plan.BlockRows // 1, or 32 for 2D
		row = mk(br, 32, roundUpTo(M, 128), rsc, func(i, j int) int { return i*rsc + j/32 })
		cbc := 1 // 32x1 column blocks, or the 32x32 tiles of 2D weights
		if br > 1 {
			cbc = 32
		}
		col = mk(32, cbc, roundUpTo(ceilTo(M, 32), 4), csc, func(i, j int) int { return (i/32)*csc + j })
		return row, col
	case quant.NVFP4BlockScaling:
		mk := func(src quant.Tensor, br, sr, sc int, operand uint32) oracleOperand {
			amax := oracleAmax(src, 0, src.Rows, 0, src.Cols)
			s := scaling.NVFP4TensorScaleBounded(amax, plan.TensorScaleBound)
			o := oracleOperand{rows: src.Rows, cols: src.Cols, scaleRows: sr, scaleCols: sc, scaleCodes: make([]uint8, sr*sc), tensorS: s}
			key := philox.KeyFromSeed(seed)
			cache := newAmaxCache(src)
			for i := range src.Rows {
				for j := range src.Cols {
					r0, c0 := i/br*br, j/16*16
					a := cache.get(r0, min(r0+br, src.Rows), c0, min(c0+16, src.Cols))
					d := scaling.NVFP4BlockScale(a, s)
					f := scaling.NVFP4ElementFactor(d, s)
					if plan.FourOverSix != "" {
						d, f = oracleFourOverSix(plan, src, r0, min(r0+br, src.Rows), c0, min(c0+16, src.Cols), a, amax, s)
					}
					v := src.Data[i*src.Cols+j] * f
					if plan.Stochastic {
						n := uint64(i*src.Cols + j)
						w := philox.Block(philox.Counter{uint32(n / 16), uint32(n / 16 >> 32), operand, group}, key)
						r := uint8(w[n%16/4] >> (8 * (n % 4)))
						o.codes = append(o.codes, element.ToE2M1Stochastic(v, r))
					} else {
						o.codes = append(o.codes, element.ToE2M1(v))
					}
					o.scaleCodes[i*sc+j/16] = d
				}
			}
			return o
		}
		row = mk(x, plan.BlockRows, roundUpTo(M, 128), roundUpTo(ceilTo(K, 16), 4), 0)
		src := xt
		if plan.RHT {
			src = oracleRHT(xt, plan.RHTSignMask)
		}
		if plan.BlockRows > 1 && plan.FourOverSix == "" {
			// 2D: the columnwise operand is the rowwise one transposed,
			// tile scales included, with the tensor scale of x.
			col = oracleOperand{rows: K, cols: M, scaleRows: roundUpTo(K, 128), scaleCols: roundUpTo(ceilTo(M, 16), 4), tensorS: row.tensorS}
			col.scaleCodes = make([]uint8, col.scaleRows*col.scaleCols)
			for k := range K {
				for m := range M {
					col.codes = append(col.codes, row.codes[m*K+k])
					col.scaleCodes[k*col.scaleCols+m/16] = row.scaleCodes[m*row.scaleCols+k/16]
				}
			}
		} else {
			// With 4over6 a 2D tile chooses again from its column sums.
			col = mk(src, plan.BlockRows, roundUpTo(K, 128), roundUpTo(ceilTo(M, 16), 4), 1)
		}
		return row, col
	}
	panic("unknown scheme")
}

// oracleFourOverSix returns the decode scale code and element factor that
// the 4over6 block src[r0:r1, c0:c1] (block amax a, tensor amax amax,
// tensor scale s) keeps: the error of each candidate, element by element
// in row order, per row, the rows of a 16-row tile added pairwise as
// SumTree16 does; map-to-4 only when strictly smaller.
func oracleFourOverSix(plan quant.Plan, src quant.Tensor, r0, r1, c0, c1 int, a, amax, s float32) (uint8, float32) {
	c := scaling.NewFourOverSix(a, s)
	mse := plan.FourOverSix == quant.ErrorMSE
	var e4, e6 [16]float32
	for i := r0; i < r1; i++ {
		for j := c0; j < c1; j++ {
			x := src.Data[i*src.Cols+j]
			e4[i-r0] += scaling.FourOverSixError(element.ToE2M1(x*c.Inv4), c.Map4, x, amax, plan.TensorScaleBound, mse)
			e6[i-r0] += scaling.FourOverSixError(element.ToE2M1(x*c.Inv6), c.Map6, x, amax, plan.TensorScaleBound, mse)
		}
	}
	t4, t6 := e4[0], e6[0]
	if plan.BlockRows > 1 {
		t4, t6 = scaling.SumTree16(e4), scaling.SumTree16(e6)
	}
	if t4 < t6 {
		return c.Map4, c.Inv4
	}
	return c.Map6, c.Inv6
}
