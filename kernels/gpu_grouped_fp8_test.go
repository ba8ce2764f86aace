// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/internal/quant/reference"
	"github.com/kquant/kquant/kernels"
)

// GPU tests of the grouped (MoE) Float8CurrentScaling and MXFP8 quantize
// (GroupedCurrent, GroupedMXFP8) against the reference's QuantizeGrouped,
// byte for byte: several split vectors of 64 groups (empty groups
// included), eager runs, one captured graph replayed with three split
// vectors, and a misaligned split reported naming the group.

// alignedSplits returns three split vectors of groups sizes, multiples of
// align adding up to rows: near uniform, random with the odd groups empty,
// and skewed (one group takes half).
func alignedSplits(rows, align, groups int) [][]int32 {
	units := rows / align
	uniform := make([]int32, groups)
	for u := range units {
		uniform[u*groups/units] += int32(align)
	}
	rng := rand.New(rand.NewPCG(uint64(rows), uint64(align)))
	random := make([]int32, groups)
	for range units {
		random[rng.IntN((groups+1)/2)*2] += int32(align)
	}
	skewed := make([]int32, groups)
	skewed[groups/3] = int32(units/2) * int32(align)
	for u := range units - units/2 {
		skewed[(u*7)%groups] += int32(align)
	}
	return [][]int32{uniform, random, skewed}
}

func intsOf(sp []int32) []int {
	out := make([]int, len(sp))
	for i, v := range sp {
		out[i] = int(v)
	}
	return out
}

func fp8Format(e element.Type) kernels.Format {
	if e == element.E5M2 {
		return kernels.E5M2
	}
	return kernels.E4M3
}

// groupedHarness runs one grouped test: eager steps compared by cmp for each
// split vector, then one captured graph replayed with the same vectors
// (outputs poisoned before each run) equal to the eager runs, then a
// misaligned vector through the graph, reported by GroupError naming the
// group.
type groupedHarness struct {
	c       *cuda.Ctx
	splits  cuda.Buffer
	flags   []cuda.Buffer
	outs    []cuda.Buffer
	align   int
	kernels int
	step    func() error
	cmp     func(k int, sp []int32) int
	nouts   int
}

func (h *groupedHarness) run(t *testing.T, splitsList [][]int32) error {
	c := h.c
	snapshot := func() []byte {
		var all []byte
		for _, ob := range h.outs {
			all = append(all, download(c, ob, ob.Size())...)
		}
		return all
	}
	poison := func() error {
		for _, ob := range h.outs {
			if err := c.Memset(ob, 0xAA); err != nil {
				return err
			}
		}
		return nil
	}
	var eager [][]byte
	for k, sp := range splitsList {
		if err := cuda.Upload(c, h.splits, sp); err != nil {
			return err
		}
		if err := poison(); err != nil {
			return err
		}
		if err := h.step(); err != nil {
			return err
		}
		for _, f := range h.flags {
			if err := kernels.GroupError(c, f, sp, h.align); err != nil {
				t.Errorf("split vector %d: %v", k, err)
			}
		}
		eager = append(eager, snapshot())
		n := h.cmp(k, sp)
		t.Logf("split vector %d: %d of %d grouped outputs bit-exact with the reference", k, n, h.nouts)
	}
	g, err := c.Capture(stream, h.step)
	if err != nil {
		return fmt.Errorf("capturing the grouped step: %w", err)
	}
	defer c.DestroyGraphExec(g)
	for k, sp := range splitsList {
		if err := cuda.Upload(c, h.splits, sp); err != nil {
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
			t.Logf("graph replay %d: %d output bytes equal to the eager run (%d kernels, one graph)", k, len(got), h.kernels)
		}
	}
	bad := append([]int32(nil), splitsList[0]...)
	bad[9], bad[10] = bad[9]-int32(h.align)/2, bad[10]+int32(h.align)/2
	if err := cuda.Upload(c, h.splits, bad); err != nil {
		return err
	}
	if err := c.LaunchGraph(g, stream); err != nil {
		return err
	}
	for _, f := range h.flags {
		gerr := kernels.GroupError(c, f, bad, h.align)
		switch {
		case gerr == nil:
			t.Errorf("misaligned group 9: no error reported")
		case !strings.Contains(gerr.Error(), "group 9 "):
			t.Errorf("misaligned group 9 reported as %v", gerr)
		default:
			t.Logf("misaligned split reported: %v", gerr)
		}
	}
	return c.Synchronize()
}

// TestGroupedCurrent: grouped Float8CurrentScaling, both operands in one
// step (amax + 128x128 cast+transpose, or the element-wise tiles for other
// shapes) and rowwise only (amax + cast), E4M3 and E5M2, power-of-2 and
// epsilon options, against the reference group by group: data, per-group
// scale, scale_inv and amax.
func TestGroupedCurrent(t *testing.T) {
	const groups = 64
	ctx := context.Background()
	cases := []struct {
		rows, cols int
		dt         kernels.DType
		role       quant.TensorRole
		pow2       bool
		eps        float32
	}{
		{4096, 256, kernels.BF16, quant.Input, false, 0},
		{4096, 264, kernels.F16, quant.Gradient, false, 0},
		{2048, 200, kernels.F32, quant.Input, true, 0},
		{2048, 100, kernels.BF16, quant.Gradient, false, 1e-3},
		{1024, 36, kernels.F32, quant.Input, false, 0},
	}
	for i, cs := range cases {
		name := fmt.Sprintf("%dx%d/%v/%s/pow2=%v", cs.rows, cs.cols, cs.dt, cs.role, cs.pow2)
		t.Run(name, func(t *testing.T) {
			rows, cols, dt := cs.rows, cs.cols, cs.dt
			in := makeInput(dt, rows*cols, true, uint64(5100+i))
			x := tensorOf(in, rows, cols)
			r := quant.DefaultRecipe(quant.Float8CurrentScaling)
			r.Current.Power2Scales, r.Current.AmaxEpsilon = cs.pow2, cs.eps
			plan, err := r.Plan(cs.role)
			if err != nil {
				t.Fatal(err)
			}
			o := kernels.CurrentOpts{Format: fp8Format(plan.Element), Eps: plan.Epsilon, Pow2: plan.Power2Scales}
			run(t, func(c *cuda.Ctx, b *bufs) error {
				xb := b.upload(in.raw)
				splits := b.alloc(4*groups, 0)
				newWS := func() kernels.GroupWorkspace {
					return kernels.GroupWorkspace{Offsets: b.alloc(4*(groups+1), 0), Flag: b.alloc(4, 0), Amax: b.alloc(4*groups, 0)}
				}
				wsB, wsR := newWS(), newWS()
				n := rows * cols
				row, col, scale, sinv := b.alloc(n, 0), b.alloc(n, 0), b.alloc(4*groups, 0), b.alloc(4*groups, 0)
				row2, sinv2 := b.alloc(n, 0), b.alloc(4*groups, 0)
				h := &groupedHarness{c: c, splits: splits, flags: []cuda.Buffer{wsB.Flag, wsR.Flag}, align: kernels.GroupedCurrentAlign,
					outs: []cuda.Buffer{row, col, scale, sinv, wsB.Amax, row2, sinv2, wsR.Amax}, kernels: 6, nouts: 8}
				h.step = func() error {
					if err := set.GroupedCurrent(c, stream, dt, xb, rows, cols, splits, groups, wsB, row, col, scale, sinv, o); err != nil {
						return err
					}
					return set.GroupedCurrent(c, stream, dt, xb, rows, cols, splits, groups, wsR, row2, cuda.Buffer{}, cuda.Buffer{}, sinv2, o)
				}
				h.cmp = func(k int, sp []int32) int {
					ref, err := reference.New().QuantizeGrouped(ctx, quant.Request{Recipe: r, Role: cs.role, Usage: quant.UsageBoth}, x, intsOf(sp), nil)
					if err != nil {
						t.Fatalf("reference: %v", err)
					}
					var rd, cd, ws, wsi, wam []byte
					for g := range groups {
						rd, cd = append(rd, ref[g].Rowwise.Data...), append(cd, ref[g].Columnwise.Data...)
						ws = append(ws, f32Bytes([]float32{ref[g].Rowwise.Scale})...)
						wsi = append(wsi, f32Bytes(ref[g].Rowwise.ScaleInv)...)
						wam = append(wam, f32Bytes([]float32{ref[g].Amax})...)
					}
					pre := fmt.Sprintf("splits %d: ", k)
					m := 0
					m += check(t, pre+"rowwise data", download(c, row, n), rd, x.Data)
					m += check(t, pre+"columnwise data", download(c, col, n), cd, nil)
					m += check(t, pre+"group scales", download(c, scale, 4*groups), ws, nil)
					m += check(t, pre+"group scale_inv", download(c, sinv, 4*groups), wsi, nil)
					m += check(t, pre+"group amaxes", download(c, wsB.Amax, 4*groups), wam, nil)
					m += check(t, pre+"rowwise-only data", download(c, row2, n), rd, x.Data)
					m += check(t, pre+"rowwise-only scale_inv", download(c, sinv2, 4*groups), wsi, nil)
					m += check(t, pre+"rowwise-only amaxes", download(c, wsR.Amax, 4*groups), wam, nil)
					return m
				}
				return h.run(t, alignedSplits(rows, kernels.GroupedCurrentAlign, groups))
			})
		})
	}
}

// TestGroupedMXFP8: grouped MXFP8, both operands with swizzled scales and
// per-group amaxes in one pass, and each operand alone, TE and OCP
// rounding, E4M3 and E5M2 (HYBRID gradients), vectorised and element-wise
// shapes, against the reference group by group: data, the concatenated
// padded scale matrices and their swizzled layouts, amaxes.
func TestGroupedMXFP8(t *testing.T) {
	const groups = 64
	ctx := context.Background()
	cases := []struct {
		rows, cols int
		dt         kernels.DType
		role       quant.TensorRole
		hybrid     bool
		ocp        bool
	}{
		{4096, 256, kernels.BF16, quant.Input, false, false},
		{4096, 200, kernels.F32, quant.Gradient, true, false},
		{2048, 264, kernels.F16, quant.Gradient, true, true},
		{2048, 100, kernels.BF16, quant.Input, false, true},
		{1024, 36, kernels.F32, quant.Input, false, false},
	}
	for i, cs := range cases {
		name := fmt.Sprintf("%dx%d/%v/%s/hybrid=%v/ocp=%v", cs.rows, cs.cols, cs.dt, cs.role, cs.hybrid, cs.ocp)
		t.Run(name, func(t *testing.T) {
			rows, cols, dt := cs.rows, cs.cols, cs.dt
			in := makeInput(dt, rows*cols, true, uint64(5200+i))
			x := tensorOf(in, rows, cols)
			r := quant.DefaultRecipe(quant.MXFP8BlockScaling)
			if cs.hybrid {
				r.Format = quant.FormatHybrid
			}
			if cs.ocp {
				r.MXFP8.ScaleRounding = quant.ScaleRoundingOCP
			}
			plan, err := r.Plan(cs.role)
			if err != nil {
				t.Fatal(err)
			}
			groupedMXFP8Run{launch: set.GroupedMXFP8, req: quant.Request{Recipe: r, Role: cs.role, Usage: quant.UsageBoth}, in: in, x: x,
				groups: groups, dt: dt, f: fp8Format(plan.Element), ocp: cs.ocp}.run(ctx, t)
		})
	}
}

// groupedMXFP8Launcher is GroupedMXFP8's signature, which GroupedMXFP82D
// shares (the same buffers and layout).
type groupedMXFP8Launcher func(c *cuda.Ctx, st cuda.Stream, dt kernels.DType, x cuda.Buffer, rows, cols int, splits cuda.Buffer, groups int,
	ws kernels.GroupWorkspace, tiles cuda.Buffer, row, col kernels.GroupedMXFP8Out, f kernels.Format, ocp bool) error

// groupedMXFP8Run is one grouped MXFP8 check: three launches of launch per
// step (both operands with swizzled scales and group amaxes; rowwise only;
// columnwise only, the swizzled scales on the rowwise-only run when
// rowOnlySwizzled, else on the columnwise-only one), the scale buffers
// skew bytes off their allocation, compared after each split vector with
// the reference's QuantizeGrouped of req, then the harness's graph replay
// and misaligned-split checks.
type groupedMXFP8Run struct {
	launch          groupedMXFP8Launcher
	req             quant.Request
	in              input
	x               quant.Tensor
	groups          int
	dt              kernels.DType
	f               kernels.Format
	ocp             bool
	skew            int
	rowOnlySwizzled bool
}

func (g groupedMXFP8Run) run(ctx context.Context, t *testing.T) {
	t.Helper()
	rows, cols, groups, dt, f, x := g.x.Rows, g.x.Cols, g.groups, g.dt, g.f, g.x
	run(t, func(c *cuda.Ctx, b *bufs) error {
		xb := b.upload(g.in.raw)
		splits := b.alloc(4*groups, 0)
		maxRows := kernels.GroupedMXFP8ScaleRows(rows, groups)
		rsz := maxRows * (((cols+31)/32 + 3) / 4 * 4)
		csz := maxRows / 32 * ((cols + 127) / 128 * 128)
		n := rows * cols
		sc := func(size int) cuda.Buffer {
			if g.skew == 0 {
				return b.alloc(size, 0)
			}
			return b.alloc(size+g.skew, 0).Slice(g.skew, size)
		}
		newWS := func(amax bool) kernels.GroupWorkspace {
			ws := kernels.GroupWorkspace{Offsets: b.alloc(4*(groups+1), 0), Flag: b.alloc(4, 0)}
			if amax {
				ws.Amax = b.alloc(4*groups, 0)
			}
			return ws
		}
		wsB, wsR, wsC := newWS(true), newWS(false), newWS(false)
		tiles := []cuda.Buffer{b.alloc(4*(groups+1), 0), b.alloc(4*(groups+1), 0), b.alloc(4*(groups+1), 0)}
		bRow := kernels.GroupedMXFP8Out{Data: b.alloc(n, 0), Scales: sc(rsz), Swizzled: sc(rsz)}
		bCol := kernels.GroupedMXFP8Out{Data: b.alloc(n, 0), Scales: sc(csz), Swizzled: sc(csz)}
		oRow := kernels.GroupedMXFP8Out{Data: b.alloc(n, 0), Scales: sc(rsz)}
		oCol := kernels.GroupedMXFP8Out{Data: b.alloc(n, 0), Scales: sc(csz)}
		outs := []cuda.Buffer{bRow.Data, bRow.Scales, bRow.Swizzled, bCol.Data, bCol.Scales, bCol.Swizzled, wsB.Amax, oRow.Data, oRow.Scales}
		if g.rowOnlySwizzled {
			oRow.Swizzled = sc(rsz)
			outs = append(outs, oRow.Swizzled, oCol.Data, oCol.Scales)
		} else {
			oCol.Swizzled = sc(csz)
			outs = append(outs, oCol.Data, oCol.Scales, oCol.Swizzled)
		}
		h := &groupedHarness{c: c, splits: splits, flags: []cuda.Buffer{wsB.Flag, wsR.Flag, wsC.Flag}, align: kernels.GroupedMXFP8Align,
			outs: outs, kernels: 9, nouts: 12}
		h.step = func() error {
			if err := g.launch(c, stream, dt, xb, rows, cols, splits, groups, wsB, tiles[0], bRow, bCol, f, g.ocp); err != nil {
				return err
			}
			if err := g.launch(c, stream, dt, xb, rows, cols, splits, groups, wsR, tiles[1], oRow, kernels.GroupedMXFP8Out{}, f, g.ocp); err != nil {
				return err
			}
			return g.launch(c, stream, dt, xb, rows, cols, splits, groups, wsC, tiles[2], kernels.GroupedMXFP8Out{}, oCol, f, g.ocp)
		}
		h.cmp = func(k int, sp []int32) int {
			ref, err := reference.New().QuantizeGrouped(ctx, g.req, x, intsOf(sp), nil)
			if err != nil {
				t.Fatalf("reference: %v", err)
			}
			var rd, rs, rw, cd, cs, cw, wam []byte
			for gi := range groups {
				ro, co := ref[gi].Rowwise, ref[gi].Columnwise
				wam = append(wam, f32Bytes([]float32{ref[gi].Amax})...)
				if sp[gi] == 0 && (ro == nil || co == nil) {
					continue
				}
				rd, rs, rw = append(rd, ro.Data...), append(rs, ro.ScaleCodes...), append(rw, ro.Swizzled...)
				cd, cs, cw = append(cd, co.Data...), append(cs, co.ScaleCodes...), append(cw, co.Swizzled...)
			}
			pre := fmt.Sprintf("splits %d: ", k)
			m := 0
			m += check(t, pre+"rowwise data", download(c, bRow.Data, n), rd, x.Data)
			m += check(t, pre+"rowwise scales", download(c, bRow.Scales, len(rs)), rs, nil)
			m += check(t, pre+"rowwise swizzled", download(c, bRow.Swizzled, len(rw)), rw, nil)
			m += check(t, pre+"columnwise data", download(c, bCol.Data, n), cd, x.Data)
			m += check(t, pre+"columnwise scales", download(c, bCol.Scales, len(cs)), cs, nil)
			m += check(t, pre+"columnwise swizzled", download(c, bCol.Swizzled, len(cw)), cw, nil)
			m += check(t, pre+"group amaxes", download(c, wsB.Amax, 4*groups), wam, nil)
			m += check(t, pre+"rowwise-only data", download(c, oRow.Data, n), rd, x.Data)
			m += check(t, pre+"rowwise-only scales", download(c, oRow.Scales, len(rs)), rs, nil)
			if g.rowOnlySwizzled {
				m += check(t, pre+"rowwise-only swizzled", download(c, oRow.Swizzled, len(rw)), rw, nil)
			}
			m += check(t, pre+"columnwise-only data", download(c, oCol.Data, n), cd, x.Data)
			m += check(t, pre+"columnwise-only scales", download(c, oCol.Scales, len(cs)), cs, nil)
			if !g.rowOnlySwizzled {
				m += check(t, pre+"columnwise-only swizzled", download(c, oCol.Swizzled, len(cw)), cw, nil)
			}
			return m
		}
		return h.run(t, alignedSplits(rows, kernels.GroupedMXFP8Align, groups))
	})
}

// TestGroupedFP8Bench times the 64-group steps at 16384x4096 BF16 (uniform
// splits) next to the ungrouped kernels and the copy bandwidth: GPU time,
// host enqueue time, graph replay host time.
func TestGroupedFP8Bench(t *testing.T) {
	const rows, cols, groups = 16384, 4096, 64
	dt := kernels.BF16
	in := makeInput(dt, rows*cols, false, 99)
	run(t, func(c *cuda.Ctx, b *bufs) error {
		tm, err := newTimer(c, 20)
		if err != nil {
			return err
		}
		defer tm.close()
		bw := 1.0
		if os.Getenv("KQUANT_GBENCH_ONCE") == "" {
			if bw, err = tm.copyBandwidth(b); err != nil {
				return err
			}
		}
		xb := b.upload(in.raw)
		splits := b.alloc(4*groups, 0)
		if err := cuda.Upload(c, splits, alignedSplits(rows, 128, groups)[0]); err != nil {
			return err
		}
		ws := kernels.GroupWorkspace{Offsets: b.alloc(4*(groups+1), 0), Flag: b.alloc(4, 0), Amax: b.alloc(4*groups, 0)}
		n := rows * cols
		row, col, scale, sinv := b.alloc(n, 0), b.alloc(n, 0), b.alloc(4*groups, 0), b.alloc(4*groups, 0)
		maxRows := kernels.GroupedMXFP8ScaleRows(rows, groups)
		rsz, csz := maxRows*(cols/32), maxRows/32*cols
		tiles := b.alloc(4*(groups+1), 0)
		mRow := kernels.GroupedMXFP8Out{Data: row, Scales: b.alloc(rsz, 0), Swizzled: b.alloc(rsz, 0)}
		mCol := kernels.GroupedMXFP8Out{Data: col, Scales: b.alloc(csz, 0), Swizzled: b.alloc(csz, 0)}
		state := b.alloc(kernels.StateBytes, 0)
		f := kernels.E4M3
		o := kernels.CurrentOpts{Format: f}
		steps := []struct {
			name     string
			launches int
			bytes    float64 // least traffic: input once, outputs once
			fn       func() error
		}{
			{"grouped current, row+col (offsets, amax, cast+transpose)", 3, float64(n) * 4, func() error {
				return set.GroupedCurrent(c, stream, dt, xb, rows, cols, splits, groups, ws, row, col, scale, sinv, o)
			}},
			{"grouped current, rowwise (offsets, amax, cast)", 3, float64(n) * 3, func() error {
				return set.GroupedCurrent(c, stream, dt, xb, rows, cols, splits, groups, ws, row, cuda.Buffer{}, scale, sinv, o)
			}},
			{"ungrouped current, row+col (Amax, CastTranspose)", 2, float64(n) * 4, func() error {
				if err := set.Amax(c, stream, dt, xb, n, state, f, 0, false); err != nil {
					return err
				}
				return set.CastTranspose(c, stream, dt, xb, rows, cols, state, row, col, sinv, cuda.Buffer{}, f)
			}},
			{"grouped MXFP8, row+col+swizzled+amax (offsets, tiles, quantize)", 3, float64(n)*4 + 4*float64(n)/32, func() error {
				return set.GroupedMXFP8(c, stream, dt, xb, rows, cols, splits, groups, ws, tiles, mRow, mCol, f, false)
			}},
			{"grouped MXFP8, rowwise (offsets, tiles, quantize)", 3, float64(n)*3 + float64(n)/32, func() error {
				return set.GroupedMXFP8(c, stream, dt, xb, rows, cols, splits, groups, ws, tiles, kernels.GroupedMXFP8Out{Data: row, Scales: mRow.Scales}, kernels.GroupedMXFP8Out{}, f, false)
			}},
			{"ungrouped MXFP8Both", 1, float64(n)*4 + 2*float64(n)/32, func() error {
				return set.MXFP8Both(c, stream, dt, xb, rows, cols, row, mRow.Scales, col, mCol.Scales, f, false, cuda.Buffer{})
			}},
		}
		if os.Getenv("KQUANT_GBENCH_ONCE") != "" {
			// One launch of each step, for a profiler.
			for _, s := range steps {
				if err := s.fn(); err != nil {
					return fmt.Errorf("%s: %w", s.name, err)
				}
			}
			return c.Synchronize()
		}
		for _, s := range steps {
			ms, err := tm.gpuMillis(s.fn)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			host, err := tm.hostMicros(s.fn, 20, 5)
			if err != nil {
				return err
			}
			g, err := c.Capture(stream, s.fn)
			if err != nil {
				return err
			}
			replay := func() error { return c.LaunchGraph(g, stream) }
			gms, err := tm.gpuMillis(replay)
			if err != nil {
				return err
			}
			ghost, err := tm.hostMicros(replay, 20, 5)
			c.DestroyGraphExec(g)
			if err != nil {
				return err
			}
			gbs := s.bytes / (ms * 1e-3) / 1e9
			fmt.Printf("%dx%d bf16, %d groups: %-66s %d launches  %.3f ms  %5.0f GB/s (least traffic) = %4.1f%% of copy  host %.1f us  graph %.3f ms, host %.1f us\n",
				rows, cols, groups, s.name, s.launches, ms, gbs, 100*gbs/bw, host, gms, ghost)
		}
		return kernels.GroupError(c, ws.Flag, nil, 16)
	})
}
