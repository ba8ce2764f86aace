// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/accuracy"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/internal/quant/linear"
	"github.com/kquant/kquant/internal/quant/reference"
	"github.com/kquant/kquant/kernels"
)

// GPU tests of the issue-5 kernels (block FP8, NVFP4, swizzle, grouped,
// payload, QuantizedLinear GEMM) against internal/quant/reference, byte for
// byte.

func tensorOf(in input, rows, cols int) quant.Tensor {
	return quant.Tensor{Rows: rows, Cols: cols, Data: in.vals}
}

func refQuantize(t *testing.T, r quant.Recipe, role quant.TensorRole, x quant.Tensor, seed uint64) *quant.Result {
	t.Helper()
	res, err := reference.New().Quantize(context.Background(), quant.Request{Recipe: r, Role: role, Seed: seed}, x)
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	return res
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// sameFloats compares float32 byte images treating any two NaNs as equal.
func sameFloats(got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("length %d, want %d", len(got), len(want))
	}
	n, first := 0, ""
	for i := 0; i+4 <= len(got); i += 4 {
		g, w := f32At(got, i), f32At(want, i)
		if !sameF32(g, w) {
			if n < 5 {
				first += fmt.Sprintf("\n  [%d] got %g (%#08x) want %g (%#08x)", i/4, g, math.Float32bits(g), w, math.Float32bits(w))
			}
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d floats differ:%s", n, len(got)/4, first)
}

// check compares and counts: it reports a mismatch as a test error and
// returns 1 for an exact match.
func check(t *testing.T, what string, got, want []byte, raw []float32) int {
	t.Helper()
	if d := diffBytes(got, want, raw); d != "" {
		t.Errorf("%s: %s", what, d)
		return 0
	}
	return 1
}

type p2case struct {
	sh       shape
	dt       kernels.DType
	specials bool
}

func p2cases(types []kernels.DType) []p2case {
	var out []p2case
	for _, sh := range smallShapes {
		for _, dt := range types {
			for _, sp := range []bool{false, true} {
				out = append(out, p2case{sh, dt, sp})
			}
		}
	}
	for _, sh := range bigShapes() {
		for _, sp := range []bool{false, true} {
			out = append(out, p2case{sh, kernels.BF16, sp})
		}
	}
	return out
}

func (c p2case) String() string {
	k := "normal"
	if c.specials {
		k = "specials"
	}
	return fmt.Sprintf("%v/%v/%s", c.sh, c.dt, k)
}

// TestBlockFP8 compares 1x128 (rowwise and columnwise) and 128x128 block
// scaling with the reference, E4M3 and E5M2 (HYBRID gradients), power-of-2
// and float32 scales.
func TestBlockFP8(t *testing.T) {
	exact, total := 0, 0
	for i, cs := range p2cases(allTypes) {
		in := makeInput(cs.dt, cs.sh.n(), cs.specials, uint64(9000+i))
		x := tensorOf(in, cs.sh.rows, cs.sh.cols)
		for _, v := range []struct {
			role   quant.TensorRole
			format quant.Format
			pow2   bool
		}{{quant.Input, quant.FormatE4M3, true}, {quant.Gradient, quant.FormatHybrid, false}, {quant.Weight, quant.FormatE4M3, true}, {quant.Weight, quant.FormatE4M3, false}} {
			name := fmt.Sprintf("%v/%s/%s/pow2=%v", cs, v.role, v.format, v.pow2)
			if cs.sh.n() > 1<<24 && v.role == quant.Weight && !v.pow2 {
				continue // one 128x128 variant per big shape keeps the run short
			}
			t.Run(name, func(t *testing.T) {
				r := quant.DefaultRecipe(quant.Float8BlockScaling)
				r.Format, r.Block.Power2Scales = v.format, v.pow2
				ref := refQuantize(t, r, v.role, x, 0)
				f := kernels.E4M3
				if ref.Plan.Element == element.E5M2 {
					f = kernels.E5M2
				}
				o := kernels.BlockOpts{Format: f, Pow2: v.pow2}
				rows, cols := cs.sh.rows, cs.sh.cols
				tile := ref.Plan.BlockRows == 128
				run(t, func(c *cuda.Ctx, b *bufs) error {
					xb := b.upload(in.raw)
					rsr, rsc := kernels.BlockScaleShape(rows, cols, tile, false)
					csr, csc := kernels.BlockScaleShape(rows, cols, tile, true)
					row, col := b.alloc(cs.sh.n(), 0xAA), b.alloc(cs.sh.n(), 0xAA)
					rs, cls := b.alloc(4*rsr*rsc, 0xAA), b.alloc(4*csr*csc, 0xAA)
					if tile {
						if err := set.Block2D(c, stream, cs.dt, xb, rows, cols, row, rs, col, cls, o); err != nil {
							return err
						}
					} else {
						if err := set.BlockRow(c, stream, cs.dt, xb, rows, cols, row, rs, o); err != nil {
							return err
						}
						if err := set.BlockCol(c, stream, cs.dt, xb, rows, cols, col, cls, o); err != nil {
							return err
						}
					}
					n := 0
					n += check(t, "rowwise data", download(c, row, cs.sh.n()), ref.Rowwise.Data, x.Data)
					n += check(t, "rowwise scale_inv", download(c, rs, 4*rsr*rsc), f32Bytes(ref.Rowwise.ScaleInv), nil)
					n += check(t, "columnwise data", download(c, col, cs.sh.n()), ref.Columnwise.Data, nil)
					n += check(t, "columnwise scale_inv", download(c, cls, 4*csr*csc), f32Bytes(ref.Columnwise.ScaleInv), nil)
					exact += n
					total += 4
					return nil
				})
			})
		}
	}
	t.Logf("block FP8: %d of %d outputs bit-exact with the reference", exact, total)
}

// nvfp4Run quantizes x on the GPU as the reference does for a role and
// returns the downloaded operands' bytes.
type nvfp4Out struct {
	rowData, rowScales, rowSwz, rowAmax []byte
	colData, colScales, colSwz, colAmax []byte
	rowDeq                              []byte
}

func nvfp4GPU(c *cuda.Ctx, b *bufs, dt kernels.DType, raw []byte, rows, cols int, plan quant.Plan, seed uint64) (nvfp4Out, error) {
	var out nvfp4Out
	xb := b.upload(raw)
	rsr, rsc := kernels.NVFP4ScaleShape(rows, cols, false)
	csr, csc := kernels.NVFP4ScaleShape(rows, cols, true)
	rowB, colB := rows*kernels.NVFP4RowBytes(cols), cols*kernels.NVFP4RowBytes(rows)
	row, col := b.alloc(rowB, 0xAA), b.alloc(colB, 0xAA)
	rs, cls := b.alloc(rsr*rsc, 0xAA), b.alloc(csr*csc, 0xAA)
	rsw, csw := b.alloc(rsr*rsc, 0xAA), b.alloc(csr*csc, 0xAA)
	amR, amC := b.alloc(4, 0xAA), b.alloc(4, 0xAA)
	deq := b.alloc(4*rows*cols, 0xAA)
	o := kernels.NVFP4Opts{RHT: plan.RHT, Signs: plan.RHTSignMask, Stochastic: plan.Stochastic, Seed: seed}
	if nvfp4Claimed {
		o.State = b.alloc(kernels.StateBytes, 0)
	}
	amaxes := nvfp4Amaxes && plan.BlockRows != 16 && plan.RHT
	if amaxes {
		// Both amaxes from one pass (kernels.NVFP4Amaxes).
		if err := set.NVFP4Amaxes(c, stream, dt, xb, rows, cols, amR, amC, plan.RHTSignMask); err != nil {
			return out, err
		}
	} else if err := set.NVFP4Amax(c, stream, dt, xb, rows, cols, amR, false, 0); err != nil {
		return out, err
	}
	if plan.BlockRows == 16 {
		if nvfp4TwoDSplit {
			// Rowwise only (the persistent walk), then columnwise only.
			if err := set.NVFP4TwoD(c, stream, dt, xb, rows, cols, amR, row, rs, cuda.Buffer{}, cuda.Buffer{}, cuda.Buffer{}, cuda.Buffer{}); err != nil {
				return out, err
			}
			if err := set.NVFP4TwoD(c, stream, dt, xb, rows, cols, amR, cuda.Buffer{}, cuda.Buffer{}, cuda.Buffer{}, col, cls, cuda.Buffer{}); err != nil {
				return out, err
			}
		} else if err := set.NVFP4TwoD(c, stream, dt, xb, rows, cols, amR, row, rs, cuda.Buffer{}, col, cls, cuda.Buffer{}); err != nil {
			return out, err
		}
		if err := set.Swizzle(c, stream, rs, rsr, rsc, rsw, false); err != nil {
			return out, err
		}
		if err := set.Swizzle(c, stream, cls, csr, csc, csw, false); err != nil {
			return out, err
		}
		amC = amR
	} else {
		if err := set.NVFP4Row(c, stream, dt, xb, rows, cols, amR, row, rs, rsw, o); err != nil {
			return out, err
		}
		if !amaxes { // else amC came from NVFP4Amaxes
			if err := set.NVFP4Amax(c, stream, dt, xb, rows, cols, amC, plan.RHT, plan.RHTSignMask); err != nil {
				return out, err
			}
		}
		// Twice with a state: the second launch finds the counter words
		// the first left, which must be zero.
		launches := 1
		if nvfp4Claimed {
			launches = 2
		}
		for range launches {
			if err := set.NVFP4Col(c, stream, dt, xb, rows, cols, amC, col, cls, csw, o); err != nil {
				return out, err
			}
		}
		if nvfp4Claimed {
			if st := download(c, o.State, kernels.StateBytes); !bytes.Equal(st, make([]byte, kernels.StateBytes)) {
				return out, fmt.Errorf("NVFP4Col left the state's words nonzero: % x", st)
			}
		}
	}
	if err := set.NVFP4Dequantize(c, stream, row, rows, cols, rs, rsc, amR, deq); err != nil {
		return out, err
	}
	out.rowData, out.rowScales, out.rowSwz = download(c, row, rowB), download(c, rs, rsr*rsc), download(c, rsw, rsr*rsc)
	out.colData, out.colScales, out.colSwz = download(c, col, colB), download(c, cls, csr*csc), download(c, csw, csr*csc)
	out.rowAmax, out.colAmax = download(c, amR, 4), download(c, amC, 4)
	out.rowDeq = download(c, deq, 4*rows*cols)
	return out, nil
}

// TestNVFP4 compares NVFP4 for the three roles (Input: 1D + RHT columnwise;
// Gradient: 1D + RHT + stochastic rounding; Weight: 16x16 2D) with the
// reference: packed data, E4M3 scales, swizzled scales (written by the
// quantize kernels for 1D, by the standalone kernel for 2D), tensor
// amaxes, and the rowwise dequantize.
func TestNVFP4(t *testing.T) {
	exact, total := 0, 0
	ctx := context.Background()
	for i, cs := range p2cases(allTypes) {
		in := makeInput(cs.dt, cs.sh.n(), cs.specials, uint64(7000+i))
		x := tensorOf(in, cs.sh.rows, cs.sh.cols)
		for _, role := range []quant.TensorRole{quant.Input, quant.Gradient, quant.Weight} {
			t.Run(fmt.Sprintf("%v/%s", cs, role), func(t *testing.T) {
				r := quant.DefaultRecipe(quant.NVFP4BlockScaling)
				seed := uint64(0x5EED0000 + i)
				ref := refQuantize(t, r, role, x, seed)
				deq, err := reference.New().Dequantize(ctx, ref, quant.UsageRowwise)
				if err != nil {
					t.Fatal(err)
				}
				run(t, func(c *cuda.Ctx, b *bufs) error {
					got, err := nvfp4GPU(c, b, cs.dt, in.raw, cs.sh.rows, cs.sh.cols, ref.Plan, seed)
					if err != nil {
						return err
					}
					n := 0
					n += check(t, "rowwise data", got.rowData, ref.Rowwise.Data, nil)
					n += check(t, "rowwise scales", got.rowScales, ref.Rowwise.ScaleCodes, nil)
					n += check(t, "rowwise swizzled", got.rowSwz, ref.Rowwise.Swizzled, nil)
					n += check(t, "rowwise amax", got.rowAmax, f32Bytes([]float32{ref.Rowwise.Amax}), nil)
					n += check(t, "columnwise data", got.colData, ref.Columnwise.Data, nil)
					n += check(t, "columnwise scales", got.colScales, ref.Columnwise.ScaleCodes, nil)
					n += check(t, "columnwise swizzled", got.colSwz, ref.Columnwise.Swizzled, nil)
					n += check(t, "columnwise amax", got.colAmax, f32Bytes([]float32{ref.Columnwise.Amax}), nil)
					if d := sameFloats(got.rowDeq, f32Bytes(deq.Data)); d != "" {
						t.Errorf("rowwise dequantize: %s", d)
					} else {
						n++
					}
					exact += n
					total += 9
					return nil
				})
			})
		}
	}
	t.Logf("NVFP4: %d of %d outputs bit-exact with the reference", exact, total)
}

// TestSwizzleMXFP8 swizzles the reference's MXFP8 scale matrices with the
// standalone kernel (the columnwise one transposed first, as the contract
// says) and compares with the reference's swizzled layout.
func TestSwizzleMXFP8(t *testing.T) {
	exact, total := 0, 0
	for i, sh := range []shape{{1, 1}, {129, 17}, {300, 200}, {1000, 1000}, {4096, 4096}} {
		in := makeInput(kernels.BF16, sh.n(), i%2 == 1, uint64(4000+i))
		x := tensorOf(in, sh.rows, sh.cols)
		ref := refQuantize(t, quant.DefaultRecipe(quant.MXFP8BlockScaling), quant.Input, x, 0)
		run(t, func(c *cuda.Ctx, b *bufs) error {
			for _, o := range []*quant.Operand{ref.Rowwise, ref.Columnwise} {
				colwise := o == ref.Columnwise
				src, swz := b.upload(o.ScaleCodes), b.alloc(len(o.ScaleCodes), 0xAA)
				if err := set.Swizzle(c, stream, src, o.ScaleRows, o.ScaleCols, swz, colwise); err != nil {
					return err
				}
				exact += check(t, fmt.Sprintf("%v colwise=%v swizzled", sh, colwise), download(c, swz, len(o.ScaleCodes)), o.Swizzled, nil)
				total++
			}
			return nil
		})
	}
	t.Logf("swizzle: %d of %d MXFP8 scale matrices bit-exact with the reference", exact, total)
}

// groupedSplits returns three split-size vectors of 64 groups adding up to
// rows (multiples of 128, some empty).
func groupedSplits(rows int) [][]int32 {
	const g = 64
	units := rows / 128
	uniform := make([]int32, g)
	for i := range uniform {
		uniform[i] = int32(rows / g)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	random := make([]int32, g)
	for u := 0; u < units; u++ {
		random[rng.IntN(g/2)*2] += 128 // odd groups stay empty
	}
	skewed := make([]int32, g)
	skewed[5] = int32(units/2) * 128
	for u := 0; u < units-units/2; u++ {
		skewed[(u*7)%g] += 128
	}
	return [][]int32{uniform, random, skewed}
}

// TestGrouped: 64-group NVFP4 (gradient role: per-group amax, SR stream per
// group) and block FP8 rowwise quantize with the split sizes in device
// memory; eager runs equal the reference, and one captured graph replayed
// with three split-size vectors (only the device split buffer changes)
// equals the eager runs. Then an alignment violation is reported.
func TestGrouped(t *testing.T) {
	const rows, cols, groups = 16384, 256, 64
	const seed = 77
	dt := kernels.BF16
	in := makeInput(dt, rows*cols, true, 31337)
	x := tensorOf(in, rows, cols)
	ctx := context.Background()
	splitsList := groupedSplits(rows)
	nvR := quant.DefaultRecipe(quant.NVFP4BlockScaling)
	blR := quant.DefaultRecipe(quant.Float8BlockScaling)
	run(t, func(c *cuda.Ctx, b *bufs) error {
		xb := b.upload(in.raw)
		splits := b.alloc(4*groups, 0)
		ws := kernels.GroupWorkspace{Offsets: b.alloc(4*(groups+1), 0), Flag: b.alloc(4, 0), Amax: b.alloc(4*groups, 0)}
		ws2 := kernels.GroupWorkspace{Offsets: b.alloc(4*(groups+1), 0), Flag: b.alloc(4, 0)}
		sc := (cols/16 + 3) / 4 * 4
		nvData, nvScales, nvSwz := b.alloc(rows*cols/2, 0), b.alloc(rows*sc, 0), b.alloc(rows*sc, 0)
		blData, blSinv := b.alloc(rows*cols, 0), b.alloc(4*rows*(cols/128), 0)
		outs := []cuda.Buffer{nvData, nvScales, nvSwz, ws.Amax, blData, blSinv, ws.Offsets}
		step := func() error {
			if err := set.GroupedNVFP4Row(c, stream, dt, xb, rows, cols, splits, groups, ws, nvData, nvScales, nvSwz,
				kernels.NVFP4Opts{Stochastic: true, Seed: seed}); err != nil {
				return err
			}
			return set.GroupedBlockRow(c, stream, dt, xb, rows, cols, splits, groups, ws2, blData, blSinv, kernels.BlockOpts{Format: kernels.E4M3, Pow2: true})
		}
		snapshot := func() []byte {
			var all []byte
			for _, o := range outs {
				all = append(all, download(c, o, o.Size())...)
			}
			return all
		}
		poison := func() error {
			for _, o := range outs[:6] {
				if err := c.Memset(o, 0xAA); err != nil {
					return err
				}
			}
			return nil
		}
		var eager [][]byte
		for k, sp := range splitsList {
			if err := cuda.Upload(c, splits, sp); err != nil {
				return err
			}
			if err := poison(); err != nil {
				return err
			}
			if err := step(); err != nil {
				return err
			}
			if err := kernels.GroupError(c, ws.Flag, sp, 128); err != nil {
				t.Errorf("split vector %d: %v", k, err)
			}
			eager = append(eager, snapshot())
			// Reference, group by group.
			ints := make([]int, groups)
			for g, v := range sp {
				ints[g] = int(v)
			}
			nvRef, err := reference.New().QuantizeGrouped(ctx, quant.Request{Recipe: nvR, Role: quant.Gradient, Usage: quant.UsageRowwise, Seed: seed}, x, ints, nil)
			if err != nil {
				return err
			}
			blRef, err := reference.New().QuantizeGrouped(ctx, quant.Request{Recipe: blR, Role: quant.Input, Usage: quant.UsageRowwise}, x, ints, nil)
			if err != nil {
				return err
			}
			var wd, wsc, wsw, wam, bd, bs []byte
			for g := range groups {
				o := nvRef[g].Rowwise
				wd, wsc, wsw = append(wd, o.Data...), append(wsc, o.ScaleCodes...), append(wsw, o.Swizzled...)
				wam = append(wam, f32Bytes([]float32{o.Amax})...)
				bd, bs = append(bd, blRef[g].Rowwise.Data...), append(bs, f32Bytes(blRef[g].Rowwise.ScaleInv)...)
			}
			n := 0
			n += check(t, fmt.Sprintf("splits %d: NVFP4 data", k), download(c, nvData, nvData.Size()), wd, nil)
			n += check(t, fmt.Sprintf("splits %d: NVFP4 scales", k), download(c, nvScales, nvScales.Size()), wsc, nil)
			n += check(t, fmt.Sprintf("splits %d: NVFP4 swizzled", k), download(c, nvSwz, nvSwz.Size()), wsw, nil)
			n += check(t, fmt.Sprintf("splits %d: NVFP4 group amaxes", k), download(c, ws.Amax, ws.Amax.Size()), wam, nil)
			n += check(t, fmt.Sprintf("splits %d: block data", k), download(c, blData, blData.Size()), bd, nil)
			n += check(t, fmt.Sprintf("splits %d: block scale_inv", k), download(c, blSinv, blSinv.Size()), bs, nil)
			t.Logf("split vector %d: eager grouped step, %d of 6 outputs bit-exact with the reference", k, n)
		}
		g, err := c.Capture(stream, step)
		if err != nil {
			return fmt.Errorf("capturing the grouped step: %w", err)
		}
		defer c.DestroyGraphExec(g)
		for k, sp := range splitsList {
			if err := cuda.Upload(c, splits, sp); err != nil {
				return err
			}
			if err := poison(); err != nil {
				return err
			}
			if err := c.LaunchGraph(g, stream); err != nil {
				return err
			}
			if got := snapshot(); !bytes.Equal(got, eager[k]) {
				t.Errorf("graph replay %d: %s", k, diffBytes(got, eager[k], nil))
			} else {
				t.Logf("graph replay %d (split vector %d): %d output bytes equal to the eager run (5 kernels, one graph)", k, k, len(got))
			}
		}
		// Alignment violation: group 9 gets 100 rows (and group 10 28),
		// replayed through the same graph.
		bad := append([]int32(nil), splitsList[0]...)
		bad[9], bad[10] = bad[9]-28, bad[10]+28
		if err := cuda.Upload(c, splits, bad); err != nil {
			return err
		}
		if err := c.LaunchGraph(g, stream); err != nil {
			return err
		}
		gerr := kernels.GroupError(c, ws.Flag, bad, 128)
		if gerr == nil {
			t.Errorf("misaligned group 9: no error reported")
		} else {
			t.Logf("misaligned split reported: %v", gerr)
		}
		short := append([]int32(nil), splitsList[0]...)
		short[3] -= 128
		if err := cuda.Upload(c, splits, short); err != nil {
			return err
		}
		if err := c.LaunchGraph(g, stream); err != nil {
			return err
		}
		if gerr := kernels.GroupError(c, ws.Flag, short, 128); gerr == nil {
			t.Errorf("split sizes short of the rows: no error reported")
		} else {
			t.Logf("short split reported: %v", gerr)
		}
		return c.Synchronize()
	})
}

// TestPayload copies 1, 16, 64, 100, 256 and 1000 8-byte entries (every
// size class of the packed launch) through kernel parameters; the host
// buffer is overwritten right after each call, and a captured copy replays
// the captured values. The general Args launch is checked too.
func TestPayload(t *testing.T) {
	for _, entries := range []int{1, 16, 64, 100, 256, 1000} {
		run(t, func(c *cuda.Ctx, b *bufs) error {
			n := 8 * entries
			src := make([]byte, n)
			rng := rand.New(rand.NewPCG(uint64(entries), 3))
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			want := append([]byte(nil), src...)
			dst := b.alloc(n+64, 0xAA)
			if err := set.CopyViaParams(c, stream, dst, src); err != nil {
				return err
			}
			for i := range src {
				src[i] = ^src[i] // the host buffer is free once the call returns
			}
			got := download(c, dst, n+64)
			if check(t, fmt.Sprintf("%d entries", entries), got[:n], want, nil) == 1 && bytes.Count(got[n:], []byte{0xAA}) == 64 {
				t.Logf("payload of %d entries (%d launches): bit-exact, bytes after it untouched", entries, (n+kernels.PayloadChunk-1)/kernels.PayloadChunk)
			} else if bytes.Count(got[n:], []byte{0xAA}) != 64 {
				t.Errorf("%d entries: bytes after the payload overwritten", entries)
			}
			// Graph capture stores the values.
			copy(src, want)
			g, err := c.Capture(stream, func() error { return set.CopyViaParams(c, stream, dst, src) })
			if err != nil {
				return err
			}
			defer c.DestroyGraphExec(g)
			for i := range src {
				src[i] = 0x55
			}
			if err := c.Memset(dst, 0); err != nil {
				return err
			}
			if err := c.LaunchGraph(g, stream); err != nil {
				return err
			}
			check(t, fmt.Sprintf("%d entries, graph replay", entries), download(c, dst, n), want, nil)
			if err := c.Memset(dst, 0); err != nil {
				return err
			}
			if err := set.CopyViaParamsArgs(c, stream, dst, want); err != nil {
				return err
			}
			check(t, fmt.Sprintf("%d entries, Args launch", entries), download(c, dst, n), want, nil)
			return nil
		})
	}
}

// TestQuantizedLinear runs QuantizedLinear (block FP8 and NVFP4) on the
// GPU: quantize X (input) and W (weight) rowwise, dequantize (bytes equal
// to the reference's dequantize), float32 GEMM. The output must match the
// reference GEMM within float32 summation order: for each element,
// |y_gpu - y_ref| <= 2 K 2^-24 sum_k |x_k w_k| (both sums are float32 with
// different orders, each within K u sum|x w| of the exact sum), and the
// SNR within 0.01 dB.
func TestQuantizedLinear(t *testing.T) {
	ctx := context.Background()
	for _, sh := range []struct{ m, n, k int }{{256, 384, 512}, {129, 65, 300}, {1000, 77, 1024}} {
		for _, scheme := range []quant.Scheme{quant.Float8BlockScaling, quant.NVFP4BlockScaling} {
			t.Run(fmt.Sprintf("%dx%dx%d/%s", sh.m, sh.n, sh.k, scheme), func(t *testing.T) {
				xin := makeInput(kernels.F32, sh.m*sh.k, false, uint64(sh.m))
				win := makeInput(kernels.F32, sh.n*sh.k, false, uint64(sh.n+1))
				// Moderate range: the wide-range inputs of the byte tests
				// make SNR meaningless.
				for _, in := range []input{xin, win} {
					for i, v := range in.vals {
						in.vals[i] = float32(math.Mod(float64(v), 8))
						binary.LittleEndian.PutUint32(in.raw[4*i:], math.Float32bits(in.vals[i]))
					}
				}
				r := quant.DefaultRecipe(scheme)
				X, W := tensorOf(xin, sh.m, sh.k), tensorOf(win, sh.n, sh.k)
				ref, err := linear.Run(ctx, reference.New(), linear.Request{Recipe: r, X: X, W: W})
				if err != nil {
					t.Fatal(err)
				}
				xd, _ := reference.New().Dequantize(ctx, ref.X, quant.UsageRowwise)
				wd, _ := reference.New().Dequantize(ctx, ref.W, quant.UsageRowwise)
				run(t, func(c *cuda.Ctx, b *bufs) error {
					deq := func(in input, rows, cols int, role quant.TensorRole) (cuda.Buffer, error) {
						xb := b.upload(in.raw)
						out := b.alloc(4*rows*cols, 0xAA)
						if scheme == quant.NVFP4BlockScaling {
							plan, _ := r.Plan(role)
							sr, sc := kernels.NVFP4ScaleShape(rows, cols, false)
							q, s, am := b.alloc(rows*kernels.NVFP4RowBytes(cols), 0), b.alloc(sr*sc, 0), b.alloc(4, 0)
							if err := set.NVFP4Amax(c, stream, kernels.F32, xb, rows, cols, am, false, 0); err != nil {
								return out, err
							}
							var err error
							if plan.BlockRows == 16 {
								err = set.NVFP4TwoD(c, stream, kernels.F32, xb, rows, cols, am, q, s, cuda.Buffer{}, cuda.Buffer{}, cuda.Buffer{}, cuda.Buffer{})
							} else {
								err = set.NVFP4Row(c, stream, kernels.F32, xb, rows, cols, am, q, s, cuda.Buffer{}, kernels.NVFP4Opts{})
							}
							if err != nil {
								return out, err
							}
							return out, set.NVFP4Dequantize(c, stream, q, rows, cols, s, sc, am, out)
						}
						tile := role == quant.Weight
						sr, sc := kernels.BlockScaleShape(rows, cols, tile, false)
						q, s := b.alloc(rows*cols, 0), b.alloc(4*sr*sc, 0)
						o := kernels.BlockOpts{Format: kernels.E4M3, Pow2: true}
						var err error
						if tile {
							err = set.Block2D(c, stream, kernels.F32, xb, rows, cols, q, s, cuda.Buffer{}, cuda.Buffer{}, o)
						} else {
							err = set.BlockRow(c, stream, kernels.F32, xb, rows, cols, q, s, o)
						}
						if err != nil {
							return out, err
						}
						return out, set.BlockDequantize(c, stream, q, rows, cols, s, sc, tile, kernels.E4M3, out)
					}
					xq, err := deq(xin, sh.m, sh.k, quant.Input)
					if err != nil {
						return err
					}
					wq, err := deq(win, sh.n, sh.k, quant.Weight)
					if err != nil {
						return err
					}
					if d := sameFloats(download(c, xq, xq.Size()), f32Bytes(xd.Data)); d != "" {
						t.Errorf("dequantized X: %s", d)
					}
					if d := sameFloats(download(c, wq, wq.Size()), f32Bytes(wd.Data)); d != "" {
						t.Errorf("dequantized W: %s", d)
					}
					y := b.alloc(4*sh.m*sh.n, 0xAA)
					if err := set.GEMM(c, stream, xq, wq, y, sh.m, sh.n, sh.k); err != nil {
						return err
					}
					yb := download(c, y, y.Size())
					yg := quant.NewTensor(sh.m, sh.n)
					worst := 0.0
					for i := range yg.Data {
						yg.Data[i] = f32At(yb, 4*i)
						mi, nj := i/sh.n, i%sh.n
						var abs float64
						for kk := range sh.k {
							abs += math.Abs(float64(xd.Data[mi*sh.k+kk]) * float64(wd.Data[nj*sh.k+kk]))
						}
						bound := 2 * float64(sh.k) * 0x1p-24 * abs
						diff := math.Abs(float64(yg.Data[i]) - float64(ref.Y.Data[i]))
						if diff > bound {
							t.Errorf("y[%d,%d] = %g, reference %g: difference %g over the summation-order bound %g", mi, nj, yg.Data[i], ref.Y.Data[i], diff, bound)
							break
						}
						if bound > 0 {
							worst = max(worst, diff/bound)
						}
					}
					m, err := accuracy.Compare(ref.Exact, yg)
					if err != nil {
						return err
					}
					if math.Abs(m.SNRdB-ref.Output.SNRdB) > 0.01 {
						t.Errorf("SNR %.4f dB, reference %.4f dB", m.SNRdB, ref.Output.SNRdB)
					}
					t.Logf("SNR %.4f dB (reference %.4f dB); largest difference %.3g of the summation-order bound", m.SNRdB, ref.Output.SNRdB, worst)
					return nil
				})
			})
		}
	}
}
