// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/scaling"
	"github.com/kquant/kquant/internal/quant/swizzle"
	"github.com/kquant/kquant/kernels"
)

// GPU tests of MXFP82D (kernels/mx2d.cu): MXFP8 with 32x32 weight tiles
// against the reference's quantizeMXFP82D.

// mx2dWant is one 2D quantize's expected bytes: the codes (both operands),
// each operand's padded scale matrix and its swizzled layout, the amax.
type mx2dWant struct {
	codes                        []byte
	rowSc, rowSwz, colSc, colSwz []byte
	amax                         float32
}

// mx2dReference is the reference backend's 2D weight quantize (E4M3: a
// Weight is E4M3 under every recipe format).
func mx2dReference(t *testing.T, in input, rows, cols int, ocp bool) mx2dWant {
	t.Helper()
	r := quant.DefaultRecipe(quant.MXFP8BlockScaling)
	r.MXFP8.TwoDimensionalWeights = true
	if ocp {
		r.MXFP8.ScaleRounding = quant.ScaleRoundingOCP
	}
	res := refQuantize(t, r, quant.Weight, tensorOf(in, rows, cols), 0)
	if !bytes.Equal(res.Rowwise.Data, res.Columnwise.Data) {
		t.Fatalf("reference: the operands' codes differ")
	}
	return mx2dWant{res.Rowwise.Data, res.Rowwise.ScaleCodes, res.Rowwise.Swizzled, res.Columnwise.ScaleCodes, res.Columnwise.Swizzled, res.Amax}
}

// mx2dModel is quantizeMXFP82D written out from the same primitives (the
// scaling rule, the factor, the element encoder, the swizzle) for any FP8
// format: the E5M2 oracle, which no recipe reaches through the reference
// (HYBRID gives E5M2 to gradients, 2D tiles only to weights). For E4M3 the
// test checks it against mx2dReference first.
func mx2dModel(vals []float32, rows, cols int, f kernels.Format, ocp bool) mx2dWant {
	const b = 32
	et := elemType(f)
	rounding := scaling.RoundingTE
	if ocp {
		rounding = scaling.RoundingOCP
	}
	rule := scaling.NewMXFP8Rule(et, rounding)
	nmb, nkb := (rows+b-1)/b, (cols+b-1)/b
	tiles := make([]byte, nmb*nkb)
	w := mx2dWant{codes: make([]byte, rows*cols)}
	parallel(nmb, func(lo, hi int) {
		fac := make([]float32, cols)
		for mb := lo; mb < hi; mb++ {
			for kb := range nkb {
				m := uint32(0)
				for r := mb * b; r < min(mb*b+b, rows); r++ {
					for c := kb * b; c < min(kb*b+b, cols); c++ {
						if a := math.Float32bits(vals[r*cols+c]) & 0x7FFFFFFF; a > m && a <= 0x7F800000 {
							m = a
						}
					}
				}
				e := rule.Exponent(math.Float32frombits(m))
				tiles[mb*nkb+kb] = e
				for c := kb * b; c < min(kb*b+b, cols); c++ {
					fac[c] = scaling.MXFP8Factor(e)
				}
			}
			for r := mb * b; r < min(mb*b+b, rows); r++ {
				et.EncodeScaledEach(w.codes[r*cols:(r+1)*cols], vals[r*cols:(r+1)*cols], fac)
			}
		}
	})
	// The tensor amax is the largest tile amax: the largest |x|, NaN
	// ignored.
	w.amax = amaxOf(vals)
	rr, rc := kernels.MXFP8ScaleShape(rows, cols, false)
	cr, cc := kernels.MXFP8ScaleShape(rows, cols, true)
	w.rowSc, w.colSc = make([]byte, rr*rc), make([]byte, cr*cc)
	for r := range rows {
		copy(w.rowSc[r*rc:r*rc+nkb], tiles[(r/b)*nkb:(r/b+1)*nkb])
	}
	for mb := range nmb {
		for c := range cols {
			w.colSc[mb*cc+c] = tiles[mb*nkb+c/b]
		}
	}
	var err error
	if w.rowSwz, err = swizzle.Swizzle(w.rowSc, rr, rc); err != nil {
		panic(err)
	}
	if w.colSwz, err = swizzle.Swizzle(swizzle.Transpose(w.colSc, cr, cc), cc, cr); err != nil {
		panic(err)
	}
	return w
}

func (w mx2dWant) equal(o mx2dWant) bool {
	return bytes.Equal(w.codes, o.codes) && bytes.Equal(w.rowSc, o.rowSc) && bytes.Equal(w.rowSwz, o.rowSwz) &&
		bytes.Equal(w.colSc, o.colSc) && bytes.Equal(w.colSwz, o.colSwz) && sameF32(w.amax, o.amax)
}

// TestMXFP82D: every input type, E4M3 and E5M2, TE and OCP rounding, with
// and without special values (NaN, inf, huge values, subnormals, signed
// zeros), the MXFP8 tests' shapes (ragged ones included) plus shapes with
// cols % 16 == 8, partial tiles and pieces that only write scale padding,
// and the big shapes (4096², 16384x8192) in BF16; both operands with
// swizzled scales and the fused amax, and on the small shapes each operand
// alone. Outputs are poisoned first, so every byte must be written.
func TestMXFP82D(t *testing.T) {
	extra := []shape{{1, 8}, {16, 8}, {48, 24}, {80, 200}, {129, 136}, {96, 192}, {200, 72}, {257, 520}}
	specs := cases(allTypes, formats)
	for _, sh := range extra {
		for _, dt := range allTypes {
			for _, f := range formats {
				for _, sp := range []bool{false, true} {
					specs = append(specs, caseSpec{sh, dt, f, sp})
				}
			}
		}
	}
	exact, total, anchored := 0, 0, 0
	for i, cs := range specs {
		if cs.sh.n() > 1<<24 && cs.f == kernels.E5M2 {
			continue // as TestMXFP8: E4M3 only on 16384x8192, to keep the run short
		}
		for _, ocp := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/ocp=%v", cs, ocp), func(t *testing.T) {
				rows, cols, n := cs.sh.rows, cs.sh.cols, cs.sh.n()
				in := makeInput(cs.dt, n, cs.specials, uint64(12000+i))
				var want mx2dWant
				if cs.f == kernels.E4M3 {
					want = mx2dReference(t, in, rows, cols, ocp)
					if n <= 1<<20 {
						if !mx2dModel(in.vals, rows, cols, cs.f, ocp).equal(want) {
							t.Fatalf("the test's 2D model differs from the reference")
						}
						anchored++
					}
				} else {
					want = mx2dModel(in.vals, rows, cols, cs.f, ocp)
				}
				modes := []int{3}
				if n <= 1<<20 {
					modes = append(modes, 1, 2)
				}
				run(t, func(c *cuda.Ctx, b *bufs) error {
					x := b.upload(in.raw)
					for _, mode := range modes {
						total++
						doRow, doCol := mode&1 != 0, mode&2 != 0
						var or, sr, zr, oc, sc, zc cuda.Buffer
						if doRow {
							or, sr, zr = b.alloc(n, 0xAA), b.alloc(len(want.rowSc), 0xAA), b.alloc(len(want.rowSc), 0xAA)
						}
						if doCol {
							oc, sc, zc = b.alloc(n, 0xAA), b.alloc(len(want.colSc), 0xAA), b.alloc(len(want.colSc), 0xAA)
						}
						st := b.alloc(kernels.StateBytes, 0)
						// Twice: the second launch finds the amax scratch the
						// first one left and must give the same bytes.
						for range 2 {
							if err := set.MXFP82D(c, stream, cs.dt, x, rows, cols, or, sr, zr, oc, sc, zc, cs.f, ocp, st); err != nil {
								return err
							}
						}
						ok := 1
						state := download(c, st, kernels.StateBytes)
						if g := f32At(state, kernels.StateAmaxOffset); !sameF32(g, want.amax) {
							t.Errorf("mode %d: fused amax %g, want %g", mode, g, want.amax)
							ok = 0
						}
						if !bytes.Equal(state[:8], make([]byte, 8)) {
							t.Errorf("mode %d: the amax scratch is not reset: % x", mode, state[:8])
							ok = 0
						}
						if doRow {
							ok &= check(t, fmt.Sprintf("mode %d rowwise data", mode), download(c, or, n), want.codes, in.vals)
							ok &= check(t, fmt.Sprintf("mode %d rowwise scales", mode), download(c, sr, len(want.rowSc)), want.rowSc, nil)
							ok &= check(t, fmt.Sprintf("mode %d rowwise swizzled", mode), download(c, zr, len(want.rowSc)), want.rowSwz, nil)
						}
						if doCol {
							ok &= check(t, fmt.Sprintf("mode %d columnwise data", mode), download(c, oc, n), want.codes, in.vals)
							ok &= check(t, fmt.Sprintf("mode %d columnwise scales", mode), download(c, sc, len(want.colSc)), want.colSc, nil)
							ok &= check(t, fmt.Sprintf("mode %d columnwise swizzled", mode), download(c, zc, len(want.colSc)), want.colSwz, nil)
						}
						exact += ok
					}
					return nil
				})
			})
		}
	}
	t.Logf("MXFP8 2D: %d of %d launches bit-exact (codes of both operands, padded scales, swizzled scales, fused amax); model anchored to the reference in %d E4M3 cases", exact, total, anchored)
}

// TestMXFP82DGraphReplay captures one 2D launch (both operands, swizzled
// scales, amax) once, replays it on 3 inputs copied into the same input
// buffer, and compares every output and the state with eager launches.
func TestMXFP82DGraphReplay(t *testing.T) {
	for _, tc := range []struct {
		sh shape
		dt kernels.DType
	}{{shape{1000, 1000}, kernels.BF16}, {shape{4096, 4096}, kernels.BF16}, {shape{129, 257}, kernels.F32}} {
		rows, cols, n := tc.sh.rows, tc.sh.cols, tc.sh.n()
		dt, f := tc.dt, kernels.E4M3
		run(t, func(c *cuda.Ctx, b *bufs) error {
			x := b.alloc(n*dt.Size(), 0)
			rr, rc := kernels.MXFP8ScaleShape(rows, cols, false)
			cr, cc := kernels.MXFP8ScaleShape(rows, cols, true)
			or, sr, zr := b.alloc(n, 0), b.alloc(rr*rc, 0), b.alloc(rr*rc, 0)
			oc, sc, zc := b.alloc(n, 0), b.alloc(cr*cc, 0), b.alloc(cr*cc, 0)
			st := b.alloc(kernels.StateBytes, 0)
			outputs := []cuda.Buffer{or, sr, zr, oc, sc, zc, st}
			step := func() error { return set.MXFP82D(c, stream, dt, x, rows, cols, or, sr, zr, oc, sc, zc, f, false, st) }
			snapshot := func() []byte {
				var all []byte
				for _, o := range outputs {
					all = append(all, download(c, o, o.Size())...)
				}
				return all
			}
			inputs := make([][]byte, 3)
			for k := range inputs {
				inputs[k] = makeInput(dt, n, k == 1, uint64(600+k)).raw
			}
			var eager [][]byte
			for _, in := range inputs {
				if err := c.CopyToDevice(x, in); err != nil {
					return err
				}
				if err := step(); err != nil {
					return err
				}
				eager = append(eager, snapshot())
			}
			g, err := c.Capture(stream, step)
			if err != nil {
				return fmt.Errorf("capturing: %w", err)
			}
			defer c.DestroyGraphExec(g)
			for k, in := range inputs {
				for _, o := range outputs[:6] {
					if err := c.Memset(o, 0xAA); err != nil {
						return err
					}
				}
				if err := c.CopyToDevice(x, in); err != nil {
					return err
				}
				if err := c.LaunchGraph(g, stream); err != nil {
					return err
				}
				if got := snapshot(); !bytes.Equal(got, eager[k]) {
					t.Errorf("%v %v replay %d: %s", tc.sh, dt, k, diffBytes(got, eager[k], nil))
				} else {
					t.Logf("%v %v replay %d: %d output bytes equal to the eager launch", tc.sh, dt, k, len(got))
				}
			}
			return nil
		})
	}
}

// TestMeasureMXFP82D prints, for 8192² and 16384² BF16 E4M3 TE: the 2D
// weight step (one MXFP82D launch: both operands' codes, both padded scale
// matrices and their swizzled layout, the fused amax) and, for comparison,
// the 1D both-operand MXFP8 step (MXFP8BothSwizzled, same outputs and
// amax): GPU ms (median of 20 event-timed launches), bytes (input read once,
// every output written once), GB/s, fraction of the same run's
// device-to-device copy, host µs per eager launch and per graph replay.
// Runs only with KQUANT_BENCH=1.
func TestMeasureMXFP82D(t *testing.T) {
	measure(t, 20, func(c *cuda.Ctx, b *bufs, tm *timer) error {
		copyBW, err := tm.copyBandwidth(b)
		if err != nil {
			return err
		}
		fmt.Printf("%-12s %-34s %7s %8s %7s %7s %8s %8s\n", "shape", "step", "gpu-ms", "GB", "GB/s", "ofcopy", "host-us", "graph-us")
		dt := kernels.BF16
		for _, sh := range []shape{{8192, 8192}, {16384, 16384}} {
			rows, cols, n := sh.rows, sh.cols, sh.n()
			x := b.upload(makeInput(dt, n, false, 42).raw)
			rr, rc := kernels.MXFP8ScaleShape(rows, cols, false)
			cr, cc := kernels.MXFP8ScaleShape(rows, cols, true)
			or, sr, zr := b.alloc(n, 0), b.alloc(rr*rc, 0), b.alloc(rr*rc, 0)
			oc, sc, zc := b.alloc(n, 0), b.alloc(cr*cc, 0), b.alloc(cr*cc, 0)
			st := b.alloc(kernels.StateBytes, 0)
			bytesMoved := int64(n)*2 + 2*int64(n) + 2*int64(rr*rc) + 2*int64(cr*cc)
			for _, s := range []struct {
				name string
				fn   func() error
			}{
				{"mxfp8 2D 32x32 weights (MXFP82D)", func() error {
					return set.MXFP82D(c, stream, dt, x, rows, cols, or, sr, zr, oc, sc, zc, kernels.E4M3, false, st)
				}},
				{"mxfp8 1D both (MXFP8BothSwizzled)", func() error {
					return set.MXFP8BothSwizzled(c, stream, dt, x, rows, cols, or, sr, zr, oc, sc, zc, kernels.E4M3, false, st)
				}},
			} {
				ms, hu, gu, err := tm.stepCosts(s.fn, 5)
				if err != nil {
					return fmt.Errorf("%s: %w", s.name, err)
				}
				bw := float64(bytesMoved) / (ms * 1e-3) / 1e9
				fmt.Printf("%-12s %-34s %7.3f %8.3f %7.0f %6.1f%% %8.2f %8.2f\n", sh, s.name, ms, float64(bytesMoved)/1e9, bw, 100*bw/copyBW, hu, gu)
			}
			b.free()
			b.all = nil
		}
		return nil
	})
}
