// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/kernels"
)

// GPU tests of the kernels against the contract's reference. Build with
//	CGO_ENABLED=1 go test -c -tags gpu -o .gpubin/kernels.test ./kernels
// and run the binary on a GPU machine (KQUANT_PTX_DIR may point at freshly
// generated PTX). KQUANT_BIG=0 skips the largest shapes.

var (
	dev    *cuda.Device
	set    *kernels.Set
	stream cuda.Stream
)

func TestMain(m *testing.M) {
	drv, err := cuda.Open()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kernels GPU tests:", err)
		os.Exit(1)
	}
	dev, err = drv.OpenDevice(0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	err = dev.Do(func(c *cuda.Ctx) error {
		var err error
		if set, err = kernels.Load(c); err != nil {
			return err
		}
		stream, err = c.NewStream()
		return err
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "loading kernels:", err)
		os.Exit(1)
	}
	info := dev.Info()
	fmt.Printf("device: %s, CC %s, %d SMs, driver CUDA %s, PTX %s\n", info.Name, info.ComputeCapability(), info.SMs, drv.VersionString(), set.Target())
	code := m.Run()
	_ = dev.Close()
	os.Exit(code)
}

type shape struct{ rows, cols int }

func (s shape) String() string { return fmt.Sprintf("%dx%d", s.rows, s.cols) }

func (s shape) n() int { return s.rows * s.cols }

// {48, 200} and {208, 392} take the wide cast+transpose (rows % 16 == 0,
// cols % 8 == 0) with partial 64x128 tiles in both directions.
var smallShapes = []shape{{1, 1}, {1, 33}, {129, 17}, {7, 4096}, {31, 257}, {33, 1000}, {1000, 1000}, {4097, 65}, {65, 40}, {300, 200}, {48, 200}, {208, 392}}

func bigShapes() []shape {
	if os.Getenv("KQUANT_BIG") == "0" {
		return nil
	}
	return []shape{{4096, 4096}, {16384, 8192}}
}

// bufs allocates device buffers and frees them all at once.
type bufs struct {
	c   *cuda.Ctx
	all []cuda.Buffer
}

func (b *bufs) alloc(n int, fill byte) cuda.Buffer {
	buf, err := b.c.Alloc(max(n, 1))
	if err != nil {
		panic(err)
	}
	if err := b.c.Memset(buf, fill); err != nil {
		panic(err)
	}
	b.all = append(b.all, buf)
	return buf
}

func (b *bufs) upload(data []byte) cuda.Buffer {
	buf := b.alloc(len(data), 0)
	if err := b.c.CopyToDevice(buf, data); err != nil {
		panic(err)
	}
	return buf
}

func (b *bufs) free() {
	for _, x := range b.all {
		_ = b.c.Free(x)
	}
}

func download(c *cuda.Ctx, b cuda.Buffer, n int) []byte {
	out := make([]byte, n)
	if err := c.StreamSynchronize(stream); err != nil {
		panic(err)
	}
	if err := c.CopyToHost(out, b); err != nil {
		panic(err)
	}
	return out
}

func f32At(b []byte, off int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[off:]))
}

// diffBytes describes the first mismatches between got and want.
func diffBytes(got, want []byte, raw []float32) string {
	if len(got) != len(want) {
		return fmt.Sprintf("length %d, want %d", len(got), len(want))
	}
	var s string
	n := 0
	for i := range got {
		if got[i] != want[i] {
			if n < 5 {
				in := ""
				if raw != nil && i < len(raw) {
					in = fmt.Sprintf(" (input %g = %#08x)", raw[i], math.Float32bits(raw[i]))
				}
				s += fmt.Sprintf("\n  [%d] got %#02x want %#02x%s", i, got[i], want[i], in)
			}
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d bytes differ:%s", n, len(got), s)
}

func sameF32(got, want float32) bool {
	return math.Float32bits(got) == math.Float32bits(want) || (math.IsNaN(float64(got)) && math.IsNaN(float64(want)))
}

// run executes fn on the device thread and fails the test on error.
func run(t *testing.T, fn func(c *cuda.Ctx, b *bufs) error) {
	t.Helper()
	err := dev.Do(func(c *cuda.Ctx) error {
		b := &bufs{c: c}
		defer b.free()
		return fn(c, b)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestConversionExhaustive compares, for all 2^32 float32 bit patterns, the
// hardware's saturating conversion with the kernels' integer model of it.
func TestConversionExhaustive(t *testing.T) {
	for _, f := range []kernels.Format{kernels.E4M3, kernels.E5M2} {
		run(t, func(c *cuda.Ctx, b *bufs) error {
			res := b.alloc(72, 0)
			if err := set.CheckConversion(c, stream, 0, 1<<32, res, f); err != nil {
				return err
			}
			out := download(c, res, 72)
			bad := binary.LittleEndian.Uint64(out)
			t.Logf("format %d: %d of 2^32 patterns differ between cvt.rn.satfinite and the integer model", f, bad)
			for k := 0; k < int(min(bad, 8)); k++ {
				v := binary.LittleEndian.Uint64(out[8+8*k:])
				t.Errorf("format %d: bits %#08x: hardware %#02x, model %#02x", f, uint32(v), v>>40&0xFF, v>>32&0xFF)
			}
			return nil
		})
	}
}

// TestConversionVsReference converts a strided sample of all float32 bit
// patterns plus the contract's special values on the GPU and compares with
// the reference's element conversion; it logs the special-value bytes.
func TestConversionVsReference(t *testing.T) {
	const stride = 13
	var vals []float32
	for b := uint64(0); b < 1<<32; b += stride {
		vals = append(vals, math.Float32frombits(uint32(b)))
	}
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 464, -464, 448, 449, 480,
		57344, 61440, 65536, 0, float32(math.Copysign(0, -1)), 0x1p-9, 0x1p-10, 0x1.8p-10, 0x1p-16, 0x1p-17, 0x1.8p-17, 1e-45, math.MaxFloat32}
	nanNeg := math.Float32frombits(0xFFC00000)
	specials = append(specials, nanNeg)
	vals = append(vals, specials...)
	raw := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	for _, f := range []kernels.Format{kernels.E4M3, kernels.E5M2} {
		run(t, func(c *cuda.Ctx, b *bufs) error {
			x := b.upload(raw)
			out := b.alloc(len(vals), 0xAA)
			if err := set.ConvertF32(c, stream, x, len(vals), out, f); err != nil {
				return err
			}
			got := download(c, out, len(vals))
			want := make([]byte, len(vals))
			et := elemType(f)
			parallel(len(vals), func(lo, hi int) {
				for i := lo; i < hi; i++ {
					want[i] = et.Encode(vals[i])
				}
			})
			if d := diffBytes(got, want, vals); d != "" {
				t.Errorf("format %v: %s", et, d)
			} else {
				t.Logf("format %v: %d values bit-exact with the reference", et, len(vals))
			}
			line := ""
			for i, v := range specials {
				line += fmt.Sprintf(" %g(%#08x)->%#02x", v, math.Float32bits(v), got[len(vals)-len(specials)+i])
			}
			t.Logf("format %v hardware bytes:%s", et, line)
			return nil
		})
	}
}

var allTypes = []kernels.DType{kernels.F32, kernels.BF16, kernels.F16}

var formats = []kernels.Format{kernels.E4M3, kernels.E5M2}

type caseSpec struct {
	sh       shape
	dt       kernels.DType
	f        kernels.Format
	specials bool
}

func (c caseSpec) String() string {
	k := "normal"
	if c.specials {
		k = "specials"
	}
	return fmt.Sprintf("%v/%v/%v/%s", c.sh, c.dt, elemType(c.f), k)
}

func cases(types []kernels.DType, fmts []kernels.Format) []caseSpec {
	var out []caseSpec
	for _, sh := range smallShapes {
		for _, dt := range types {
			for _, f := range fmts {
				for _, sp := range []bool{false, true} {
					out = append(out, caseSpec{sh, dt, f, sp})
				}
			}
		}
	}
	for _, sh := range bigShapes() {
		for _, f := range fmts {
			for _, sp := range []bool{false, true} {
				out = append(out, caseSpec{sh, kernels.BF16, f, sp})
			}
		}
	}
	return out
}

// TestCurrentScaling: amax + scale kernel, then the rowwise cast and the
// fused cast+transpose, against the contract; with and without power-of-2
// scales and an amax epsilon.
func TestCurrentScaling(t *testing.T) {
	exact := 0
	for i, cs := range cases(allTypes, formats) {
		pow2 := i%3 == 1
		eps := float32(0)
		if i%5 == 2 {
			eps = 1e-3
		}
		t.Run(fmt.Sprintf("%v/pow2=%v/eps=%g", cs, pow2, eps), func(t *testing.T) {
			in := makeInput(cs.dt, cs.sh.n(), cs.specials, uint64(i+1))
			want := modelCurrentScale(in.vals, cs.f, eps, pow2)
			wantRow := modelCast(in.vals, want.scale, cs.f)
			wantCol := transpose(wantRow, cs.sh.rows, cs.sh.cols)
			run(t, func(c *cuda.Ctx, b *bufs) error {
				n := cs.sh.n()
				x := b.upload(in.raw)
				st := b.alloc(kernels.StateBytes, 0)
				row, row2, col := b.alloc(n, 0xAA), b.alloc(n, 0xAA), b.alloc(n, 0xAA)
				sinv := b.alloc(4, 0xAA)
				sinv2 := b.alloc(4, 0xAA)
				if err := set.Amax(c, stream, cs.dt, x, n, st, cs.f, eps, pow2); err != nil {
					return err
				}
				if err := set.Cast(c, stream, cs.dt, x, n, st, row, sinv, cuda.Buffer{}, cs.f); err != nil {
					return err
				}
				if err := set.CastTranspose(c, stream, cs.dt, x, cs.sh.rows, cs.sh.cols, st, row2, col, sinv2, cuda.Buffer{}, cs.f); err != nil {
					return err
				}
				gs := download(c, st, kernels.StateBytes)
				if binary.LittleEndian.Uint64(gs) != 0 {
					t.Errorf("amax scratch words not reset: %x", gs[:8])
				}
				got := tensorState{f32At(gs, kernels.StateAmaxOffset), f32At(gs, kernels.StateScaleOffset), f32At(gs, kernels.StateScaleInvOffset)}
				if !sameF32(got.amax, want.amax) || !sameF32(got.scale, want.scale) || !sameF32(got.scaleInv, want.scaleInv) {
					t.Errorf("state %+v, want %+v", got, want)
				}
				for _, s := range [][]byte{download(c, sinv, 4), download(c, sinv2, 4)} {
					if g := f32At(s, 0); !sameF32(g, want.scaleInv) {
						t.Errorf("scale_inv output %g, want %g", g, want.scaleInv)
					}
				}
				ok := true
				for name, p := range map[string]struct {
					buf  cuda.Buffer
					want []byte
				}{"rowwise cast": {row, wantRow}, "cast+transpose rowwise": {row2, wantRow}, "cast+transpose columnwise": {col, wantCol}} {
					if d := diffBytes(download(c, p.buf, n), p.want, in.vals); d != "" {
						t.Errorf("%s: %s", name, d)
						ok = false
					}
				}
				if ok {
					exact++
				}
				// Dequantize the rowwise data back.
				deq := b.alloc(4*n, 0)
				if err := set.Dequantize(c, stream, row, n, sinv, deq, cs.f); err != nil {
					return err
				}
				gd := download(c, deq, 4*n)
				et := elemType(cs.f)
				for i := range n {
					w := et.Decode(wantRow[i]) * want.scaleInv
					if g := f32At(gd, 4*i); !sameF32(g, w) {
						t.Errorf("dequantize [%d]: got %g, want %g", i, g, w)
						break
					}
				}
				return nil
			})
		})
	}
	t.Logf("current scaling: %d cases bit-exact (rowwise, cast+transpose row and column, state)", exact)
}

// TestDelayedScaling runs 5 steps of fused cast+amax and the history update
// (in the cast's launch every other step, else a launch of its own) and
// compares data, scale_inv, scale and history after every step.
func TestDelayedScaling(t *testing.T) {
	exact := 0
	type variant struct {
		histLen    int
		margin     int
		mostRecent bool
	}
	variants := []variant{{1024, 0, false}, {3, 0, false}, {1, 1, false}, {16, 2, true}, {2000, 0, false}}
	specs := cases([]kernels.DType{kernels.BF16, kernels.F32}, formats)
	for i, cs := range specs {
		v := variants[i%len(variants)]
		t.Run(fmt.Sprintf("%v/len=%d/margin=%d/mostRecent=%v", cs, v.histLen, v.margin, v.mostRecent), func(t *testing.T) {
			model := newDelayedModel(v.histLen)
			run(t, func(c *cuda.Ctx, b *bufs) error {
				n := cs.sh.n()
				st := b.alloc(kernels.StateBytes, 0)
				one := make([]byte, 4)
				binary.LittleEndian.PutUint32(one, math.Float32bits(1))
				if err := c.CopyToDevice(st.Slice(kernels.StateScaleOffset, 4), one); err != nil {
					return err
				}
				hist := b.alloc(4*v.histLen, 0)
				x := b.alloc(n*cs.dt.Size(), 0)
				row, col := b.alloc(n, 0xAA), b.alloc(n, 0xAA)
				sinv := b.alloc(4, 0xAA)
				stepOK := 0
				for step := range 5 {
					// Step 3 is all zeros except in tiny shapes: an amax
					// of 0 must leave the state alone.
					in := makeInput(cs.dt, n, cs.specials && step%2 == 1, uint64(100*i+step))
					if step == 3 {
						in = makeInput(cs.dt, n, false, 1)
						for k := range in.raw {
							in.raw[k] = 0
						}
						for k := range in.vals {
							in.vals[k] = 0
						}
					}
					if err := c.CopyToDevice(x, in.raw); err != nil {
						return err
					}
					wantRow, wantSinv := model.step(in.vals, cs.f)
					model.update(cs.f, v.margin, v.mostRecent)
					// Every other step runs the update in the cast's own
					// launch (CastUpdate, CastTransposeUpdate), the others
					// as a launch of its own: the same bytes either way.
					fused := (i+step)%2 == 1
					var u kernels.Update
					if fused {
						u = kernels.Update{HistoryLen: v.histLen, Margin: v.margin, MostRecent: v.mostRecent}
					}
					var err error
					if step%2 == 0 {
						err = set.CastTransposeUpdate(c, stream, cs.dt, x, cs.sh.rows, cs.sh.cols, st, row, col, sinv, hist, cs.f, u)
					} else {
						err = set.CastUpdate(c, stream, cs.dt, x, n, st, row, sinv, hist, cs.f, u)
					}
					if err != nil {
						return err
					}
					if !fused {
						if err := set.DelayedUpdate(c, stream, hist, v.histLen, st, cs.f, v.margin, v.mostRecent); err != nil {
							return err
						}
					}
					ok := true
					if d := diffBytes(download(c, row, n), wantRow, in.vals); d != "" {
						t.Errorf("step %d data: %s", step, d)
						ok = false
					}
					if step%2 == 0 {
						if d := diffBytes(download(c, col, n), transpose(wantRow, cs.sh.rows, cs.sh.cols), nil); d != "" {
							t.Errorf("step %d columnwise: %s", step, d)
							ok = false
						}
					}
					if g := f32At(download(c, sinv, 4), 0); !sameF32(g, wantSinv) {
						t.Errorf("step %d scale_inv %g, want %g", step, g, wantSinv)
						ok = false
					}
					gs := download(c, st, kernels.StateBytes)
					if g := f32At(gs, kernels.StateScaleOffset); !sameF32(g, model.scale) {
						t.Errorf("step %d scale %g, want %g", step, g, model.scale)
						ok = false
					}
					gh := download(c, hist, 4*v.histLen)
					for k, w := range model.hist {
						if g := f32At(gh, 4*k); !sameF32(g, w) {
							t.Errorf("step %d history[%d] = %g, want %g", step, k, g, w)
							ok = false
							break
						}
					}
					if ok {
						stepOK++
					}
				}
				if stepOK == 5 {
					exact++
				}
				return nil
			})
		})
	}
	t.Logf("delayed scaling: %d of %d cases bit-exact over 5 steps (data, scale_inv, scale, history)", exact, len(specs))
}

// TestMXFP8: rowwise and columnwise, TE and OCP scale rounding, data and
// padded scales, and dequantize.
func TestMXFP8(t *testing.T) {
	exact, total := 0, 0
	for i, cs := range cases(allTypes, formats) {
		for _, colwise := range []bool{false, true} {
			for _, ocp := range []bool{false, true} {
				if cs.sh.n() > 1<<24 && (cs.f == kernels.E5M2) {
					continue
				}
				total++
				t.Run(fmt.Sprintf("%v/colwise=%v/ocp=%v", cs, colwise, ocp), func(t *testing.T) {
					in := makeInput(cs.dt, cs.sh.n(), cs.specials, uint64(7000+i))
					wantData, wantScales := modelMXFP8(in.vals, cs.sh.rows, cs.sh.cols, colwise, cs.f, ocp)
					run(t, func(c *cuda.Ctx, b *bufs) error {
						n := cs.sh.n()
						x := b.upload(in.raw)
						out := b.alloc(n, 0xAA)
						sc := b.alloc(len(wantScales), 0xAA)
						st := b.alloc(kernels.StateBytes, 0)
						if err := set.MXFP8(c, stream, cs.dt, x, cs.sh.rows, cs.sh.cols, out, sc, colwise, cs.f, ocp, st); err != nil {
							return err
						}
						ok := true
						if g, w := f32At(download(c, st, kernels.StateBytes), kernels.StateAmaxOffset), amaxOf(in.vals); !sameF32(g, w) {
							t.Errorf("fused amax %g, want %g", g, w)
							ok = false
						}
						if d := diffBytes(download(c, out, n), wantData, in.vals); d != "" {
							t.Errorf("data: %s", d)
							ok = false
						}
						if d := diffBytes(download(c, sc, len(wantScales)), wantScales, nil); d != "" {
							t.Errorf("scales: %s", d)
							ok = false
						}
						if ok {
							exact++
						}
						if n > 1<<22 {
							return nil
						}
						deq := b.alloc(4*n, 0)
						if err := set.MXFP8Dequantize(c, stream, out, cs.sh.rows, cs.sh.cols, sc, colwise, deq, cs.f); err != nil {
							return err
						}
						gd := download(c, deq, 4*n)
						_, scols := kernels.MXFP8ScaleShape(cs.sh.rows, cs.sh.cols, colwise)
						et := elemType(cs.f)
						for k := range n {
							r, cc := k/cs.sh.cols, k%cs.sh.cols
							si := r*scols + cc/32
							if colwise {
								si = (r/32)*scols + cc
							}
							w := et.Decode(wantData[k]) * element.E8M0ToFloat32(wantScales[si])
							if g := f32At(gd, 4*k); !sameF32(g, w) {
								t.Errorf("dequantize [%d]: got %g, want %g", k, g, w)
								break
							}
						}
						return nil
					})
				})
			}
		}
	}
	t.Logf("MXFP8: %d of %d cases bit-exact (data and padded scales)", exact, total)
}

// TestGraphReplay captures one step of every recipe (current scaling with
// cast+transpose, MXFP8 rowwise and columnwise, delayed scaling cast and
// update, and cast+transpose with the update in its launch) once, replays it on 3 inputs copied into the same input buffer,
// and compares every output and state with an eager run of the same steps.
func TestGraphReplay(t *testing.T) {
	sh := shape{1000, 1000}
	const histLen = 16
	dt, f := kernels.BF16, kernels.E4M3
	n := sh.n()
	run(t, func(c *cuda.Ctx, b *bufs) error {
		x := b.alloc(n*dt.Size(), 0)
		stCur, stDel := b.alloc(kernels.StateBytes, 0), b.alloc(kernels.StateBytes, 0)
		hist := b.alloc(4*histLen, 0)
		row, col, sinv := b.alloc(n, 0), b.alloc(n, 0), b.alloc(4, 0)
		rs, rsc := kernels.MXFP8ScaleShape(sh.rows, sh.cols, false)
		cs, csc := kernels.MXFP8ScaleShape(sh.rows, sh.cols, true)
		mxr, mxrS := b.alloc(n, 0), b.alloc(rs*rsc, 0)
		mxc, mxcS := b.alloc(n, 0), b.alloc(cs*csc, 0)
		dOut, dSinv := b.alloc(n, 0), b.alloc(4, 0)
		// Delayed scaling with the update in the cast+transpose's launch.
		stDel2, hist2 := b.alloc(kernels.StateBytes, 0), b.alloc(4*histLen, 0)
		fRow, fCol, fSinv := b.alloc(n, 0), b.alloc(n, 0), b.alloc(4, 0)
		outputs := []cuda.Buffer{stCur, row, col, sinv, mxr, mxrS, mxc, mxcS, stDel, hist, dOut, dSinv, stDel2, hist2, fRow, fCol, fSinv}
		step := func() error {
			for _, fn := range []func() error{
				func() error { return set.Amax(c, stream, dt, x, n, stCur, f, 0, false) },
				func() error {
					return set.CastTranspose(c, stream, dt, x, sh.rows, sh.cols, stCur, row, col, sinv, cuda.Buffer{}, f)
				},
				func() error {
					return set.MXFP8(c, stream, dt, x, sh.rows, sh.cols, mxr, mxrS, false, f, false, cuda.Buffer{})
				},
				func() error {
					return set.MXFP8(c, stream, dt, x, sh.rows, sh.cols, mxc, mxcS, true, f, false, cuda.Buffer{})
				},
				func() error { return set.Cast(c, stream, dt, x, n, stDel, dOut, dSinv, hist, f) },
				func() error { return set.DelayedUpdate(c, stream, hist, histLen, stDel, f, 0, false) },
				func() error {
					return set.CastTransposeUpdate(c, stream, dt, x, sh.rows, sh.cols, stDel2, fRow, fCol, fSinv, hist2, f,
						kernels.Update{HistoryLen: histLen})
				},
			} {
				if err := fn(); err != nil {
					return err
				}
			}
			return nil
		}
		reset := func() error {
			init := make([]byte, kernels.StateBytes)
			binary.LittleEndian.PutUint32(init[kernels.StateScaleOffset:], math.Float32bits(1))
			for _, s := range []cuda.Buffer{stCur, stDel, stDel2} {
				if err := c.CopyToDevice(s, init); err != nil {
					return err
				}
			}
			if err := c.Memset(hist2, 0); err != nil {
				return err
			}
			return c.Memset(hist, 0)
		}
		inputs := make([][]byte, 3)
		for k := range inputs {
			inputs[k] = makeInput(dt, n, k == 1, uint64(500+k)).raw
		}
		snapshot := func() []byte {
			var all []byte
			for _, o := range outputs {
				all = append(all, download(c, o, o.Size())...)
			}
			return all
		}
		// Eager.
		if err := reset(); err != nil {
			return err
		}
		var eager [][]byte
		for _, in := range inputs {
			if err := c.CopyToDevice(x, in); err != nil {
				return err
			}
			if err := step(); err != nil {
				return err
			}
			// The fused update gives the separate update's state,
			// history and codes.
			for _, p := range [][2]cuda.Buffer{{stDel, stDel2}, {hist, hist2}, {dOut, fRow}, {dSinv, fSinv}} {
				if a, b := download(c, p[0], p[0].Size()), download(c, p[1], p[1].Size()); !bytes.Equal(a, b) {
					t.Errorf("delayed scaling, update in the cast's launch: %s", diffBytes(b, a, nil))
				}
			}
			eager = append(eager, snapshot())
		}
		// Graph: captured once, replayed per input.
		if err := reset(); err != nil {
			return err
		}
		g, err := c.Capture(stream, step)
		if err != nil {
			return fmt.Errorf("capturing the step: %w", err)
		}
		defer c.DestroyGraphExec(g)
		for k, in := range inputs {
			for _, o := range []cuda.Buffer{row, col, mxr, mxc, dOut, fRow, fCol} {
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
			got := snapshot()
			if !bytes.Equal(got, eager[k]) {
				t.Errorf("replay %d: %s", k, diffBytes(got, eager[k], nil))
			} else {
				t.Logf("replay %d: %d output bytes (7 kernels) equal to the eager run", k, len(got))
			}
		}
		return nil
	})
}
