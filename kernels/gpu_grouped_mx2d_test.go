//go:build gpu

package kernels_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kquant/kquant/agent/cuda"
	"github.com/kquant/kquant/agent/quant"
	"github.com/kquant/kquant/agent/quant/reference"
	"github.com/kquant/kquant/kernels"
)

// TestGroupedMXFP82D: grouped MXFP8 with 32x32 weight tiles
// (GroupedMXFP82D), 64 groups x 3 split vectors with empty groups, both
// operands with swizzled scales and per-group amaxes in one pass and each
// operand alone, F32/BF16/F16, TE and OCP rounding, column counts that are
// not multiples of 32 or 128 (element accesses where cols % 8 != 0), a
// shape with more macro tiles than blocks (the blocks stride across
// groups), and scale buffers off 16-byte alignment (byte stores), against
// the reference's QuantizeGrouped group by group: data, the concatenated
// padded scale matrices and their swizzled layouts, amaxes. The harness
// then replays one captured graph with the three split vectors (equal to
// the eager runs) and reports a misaligned group by name.
func TestGroupedMXFP82D(t *testing.T) {
	const groups = 64
	ctx := context.Background()
	cases := []struct {
		rows, cols int
		dt         kernels.DType
		ocp        bool
		skew       int // byte offset of the scale buffers (0: aligned)
	}{
		{4096, 256, kernels.BF16, false, 0},
		{4096, 200, kernels.F32, false, 0},
		{2048, 264, kernels.F16, true, 0},
		{2048, 100, kernels.BF16, true, 0},
		{1024, 36, kernels.F32, false, 0},
		{16384, 512, kernels.BF16, false, 0},
		{8192, 384, kernels.F16, true, 0},
		{2048, 320, kernels.BF16, false, 4},
	}
	for i, cs := range cases {
		name := fmt.Sprintf("%dx%d/%v/ocp=%v/skew=%d", cs.rows, cs.cols, cs.dt, cs.ocp, cs.skew)
		t.Run(name, func(t *testing.T) {
			rows, cols, dt := cs.rows, cs.cols, cs.dt
			in := makeInput(dt, rows*cols, true, uint64(6200+i))
			x := tensorOf(in, rows, cols)
			r := quant.DefaultRecipe(quant.MXFP8BlockScaling)
			r.MXFP8.TwoDimensionalWeights = true
			if cs.ocp {
				r.MXFP8.ScaleRounding = quant.ScaleRoundingOCP
			}
			plan, err := r.Plan(quant.Weight)
			if err != nil {
				t.Fatal(err)
			}
			if plan.BlockRows != 32 {
				t.Fatalf("plan BlockRows %d, want 32", plan.BlockRows)
			}
			f := fp8Format(plan.Element)
			run(t, func(c *cuda.Ctx, b *bufs) error {
				xb := b.upload(in.raw)
				splits := b.alloc(4*groups, 0)
				maxRows := kernels.GroupedMXFP8ScaleRows(rows, groups)
				rsz := maxRows * (((cols+31)/32 + 3) / 4 * 4)
				csz := maxRows / 32 * ((cols + 127) / 128 * 128)
				n := rows * cols
				sc := func(size int) cuda.Buffer {
					if cs.skew == 0 {
						return b.alloc(size, 0)
					}
					return b.alloc(size+cs.skew, 0).Slice(cs.skew, size)
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
				oRow := kernels.GroupedMXFP8Out{Data: b.alloc(n, 0), Scales: sc(rsz), Swizzled: sc(rsz)}
				oCol := kernels.GroupedMXFP8Out{Data: b.alloc(n, 0), Scales: sc(csz)}
				h := &groupedHarness{c: c, splits: splits, flags: []cuda.Buffer{wsB.Flag, wsR.Flag, wsC.Flag}, align: kernels.GroupedMXFP8Align,
					outs: []cuda.Buffer{bRow.Data, bRow.Scales, bRow.Swizzled, bCol.Data, bCol.Scales, bCol.Swizzled, wsB.Amax,
						oRow.Data, oRow.Scales, oRow.Swizzled, oCol.Data, oCol.Scales}, kernels: 9, nouts: 12}
				h.step = func() error {
					if err := set.GroupedMXFP82D(c, stream, dt, xb, rows, cols, splits, groups, wsB, tiles[0], bRow, bCol, f, cs.ocp); err != nil {
						return err
					}
					if err := set.GroupedMXFP82D(c, stream, dt, xb, rows, cols, splits, groups, wsR, tiles[1], oRow, kernels.GroupedMXFP8Out{}, f, cs.ocp); err != nil {
						return err
					}
					return set.GroupedMXFP82D(c, stream, dt, xb, rows, cols, splits, groups, wsC, tiles[2], kernels.GroupedMXFP8Out{}, oCol, f, cs.ocp)
				}
				h.cmp = func(k int, sp []int32) int {
					ref, err := reference.New().QuantizeGrouped(ctx, quant.Request{Recipe: r, Role: quant.Weight, Usage: quant.UsageBoth}, x, intsOf(sp), nil)
					if err != nil {
						t.Fatalf("reference: %v", err)
					}
					var rd, rs, rw, cd, cs_, cw, wam []byte
					for g := range groups {
						ro, co := ref[g].Rowwise, ref[g].Columnwise
						if sp[g] == 0 && (ro == nil || co == nil) {
							wam = append(wam, f32Bytes([]float32{ref[g].Amax})...)
							continue
						}
						rd, rs, rw = append(rd, ro.Data...), append(rs, ro.ScaleCodes...), append(rw, ro.Swizzled...)
						cd, cs_, cw = append(cd, co.Data...), append(cs_, co.ScaleCodes...), append(cw, co.Swizzled...)
						wam = append(wam, f32Bytes([]float32{ref[g].Amax})...)
					}
					pre := fmt.Sprintf("splits %d: ", k)
					m := 0
					m += check(t, pre+"rowwise data", download(c, bRow.Data, n), rd, x.Data)
					m += check(t, pre+"rowwise scales", download(c, bRow.Scales, len(rs)), rs, nil)
					m += check(t, pre+"rowwise swizzled", download(c, bRow.Swizzled, len(rw)), rw, nil)
					m += check(t, pre+"columnwise data", download(c, bCol.Data, n), cd, x.Data)
					m += check(t, pre+"columnwise scales", download(c, bCol.Scales, len(cs_)), cs_, nil)
					m += check(t, pre+"columnwise swizzled", download(c, bCol.Swizzled, len(cw)), cw, nil)
					m += check(t, pre+"group amaxes", download(c, wsB.Amax, 4*groups), wam, nil)
					m += check(t, pre+"rowwise-only data", download(c, oRow.Data, n), rd, x.Data)
					m += check(t, pre+"rowwise-only scales", download(c, oRow.Scales, len(rs)), rs, nil)
					m += check(t, pre+"rowwise-only swizzled", download(c, oRow.Swizzled, len(rw)), rw, nil)
					m += check(t, pre+"columnwise-only data", download(c, oCol.Data, n), cd, x.Data)
					m += check(t, pre+"columnwise-only scales", download(c, oCol.Scales, len(cs_)), cs_, nil)
					return m
				}
				return h.run(t, alignedSplits(rows, kernels.GroupedMXFP8Align, groups))
			})
		})
	}
}
