// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/internal/quant/reference"
	"github.com/kquant/kquant/kernels"
)

// GPU tests of the one-pass 1x128 row+col block FP8 kernel (BlockRowCol)
// and of the grouped columnwise variants against internal/quant/reference,
// byte for byte. TestBlockFP8 (gpu_part2_test.go) covers BlockRow,
// BlockCol and Block2D.

// TestBlockRowColFused compares both operands of BlockRowCol with the
// reference over the shared shapes, all input types, E4M3 with power-of-2
// scales and E5M2 (HYBRID gradients) with float32 scales; then once more
// with every buffer misaligned, so that only the kernels' slow paths run.
func TestBlockRowColFused(t *testing.T) {
	exact, total := 0, 0
	for i, cs := range p2cases(allTypes) {
		in := makeInput(cs.dt, cs.sh.n(), cs.specials, uint64(19000+i))
		x := tensorOf(in, cs.sh.rows, cs.sh.cols)
		for _, v := range []struct {
			role   quant.TensorRole
			format quant.Format
			pow2   bool
			shift  int
		}{{quant.Input, quant.FormatE4M3, true, 0}, {quant.Gradient, quant.FormatHybrid, false, 0}, {quant.Input, quant.FormatE4M3, false, 1}} {
			if v.shift != 0 && cs.sh.n() > 1<<24 {
				continue // the slow paths are for odd shapes; big shapes keep the fast ones
			}
			name := fmt.Sprintf("%v/%s/%s/pow2=%v/shift=%d", cs, v.role, v.format, v.pow2, v.shift)
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
				run(t, func(c *cuda.Ctx, b *bufs) error {
					// shift moves every buffer off its natural alignment:
					// the input by one element, the outputs by one byte.
					es := cs.dt.Size()
					xall := b.alloc(len(in.raw)+16, 0)
					xb := xall.Slice(v.shift*es, len(in.raw))
					if err := c.CopyToDevice(xb, in.raw); err != nil {
						return err
					}
					rsr, rsc := kernels.BlockScaleShape(rows, cols, false, false)
					csr, csc := kernels.BlockScaleShape(rows, cols, false, true)
					row := b.alloc(cs.sh.n()+8, 0xAA).Slice(v.shift, cs.sh.n())
					col := b.alloc(cs.sh.n()+8, 0xAA).Slice(v.shift, cs.sh.n())
					rs, cls := b.alloc(4*rsr*rsc, 0xAA), b.alloc(4*csr*csc, 0xAA)
					if err := set.BlockRowCol(c, stream, cs.dt, xb, rows, cols, row, rs, col, cls, o); err != nil {
						return err
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
	t.Logf("block FP8 1x128 row+col in one pass: %d of %d outputs bit-exact with the reference", exact, total)
}

// TestGroupedBlockCol: 64-group block FP8 columnwise (GroupedBlockCol) and
// row+col (GroupedBlockRowCol) quantize with the split sizes in device
// memory, against the reference's grouped quantize group by group, for
// the three split vectors of TestGrouped; one captured graph replayed with
// the three vectors equals the eager runs; a misaligned split is reported.
func TestGroupedBlockCol(t *testing.T) {
	const rows, groups = 8192, 64
	ctx := context.Background()
	splitsList := groupedSplits(rows)
	for _, cols := range []int{256, 264} {
		for _, dt := range []kernels.DType{kernels.BF16, kernels.F32} {
			in := makeInput(dt, rows*cols, true, uint64(4242+cols))
			x := tensorOf(in, rows, cols)
			r := quant.DefaultRecipe(quant.Float8BlockScaling)
			o := kernels.BlockOpts{Format: kernels.E4M3, Pow2: true}
			name := fmt.Sprintf("%dx%d/%v", rows, cols, dt)
			t.Run(name, func(t *testing.T) {
				run(t, func(c *cuda.Ctx, b *bufs) error {
					xb := b.upload(in.raw)
					splits := b.alloc(4*groups, 0)
					wsC := kernels.GroupWorkspace{Offsets: b.alloc(4*(groups+1), 0), Flag: b.alloc(4, 0)}
					wsB := kernels.GroupWorkspace{Offsets: b.alloc(4*(groups+1), 0), Flag: b.alloc(4, 0)}
					sc := (cols + 3) / 4 * 4
					nkb := (cols + 127) / 128
					cData, cSinv := b.alloc(rows*cols, 0), b.alloc(4*(rows/128)*sc, 0)
					bRow, bRowS := b.alloc(rows*cols, 0), b.alloc(4*rows*nkb, 0)
					bCol, bColS := b.alloc(rows*cols, 0), b.alloc(4*(rows/128)*sc, 0)
					outs := []cuda.Buffer{cData, cSinv, bRow, bRowS, bCol, bColS}
					step := func() error {
						if err := set.GroupedBlockCol(c, stream, dt, xb, rows, cols, splits, groups, wsC, cData, cSinv, o); err != nil {
							return err
						}
						return set.GroupedBlockRowCol(c, stream, dt, xb, rows, cols, splits, groups, wsB, bRow, bRowS, bCol, bColS, o)
					}
					snapshot := func() []byte {
						var all []byte
						for _, ob := range outs {
							all = append(all, download(c, ob, ob.Size())...)
						}
						return all
					}
					poison := func() error {
						for _, ob := range outs {
							if err := c.Memset(ob, 0xAA); err != nil {
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
						for _, ws := range []kernels.GroupWorkspace{wsC, wsB} {
							if err := kernels.GroupError(c, ws.Flag, sp, 128); err != nil {
								t.Errorf("split vector %d: %v", k, err)
							}
						}
						eager = append(eager, snapshot())
						ints := make([]int, groups)
						for g, v := range sp {
							ints[g] = int(v)
						}
						ref, err := reference.New().QuantizeGrouped(ctx, quant.Request{Recipe: r, Role: quant.Input, Usage: quant.UsageBoth}, x, ints, nil)
						if err != nil {
							return err
						}
						var rd, rs, cd, cs []byte
						for g := range groups {
							rd, rs = append(rd, ref[g].Rowwise.Data...), append(rs, f32Bytes(ref[g].Rowwise.ScaleInv)...)
							cd, cs = append(cd, ref[g].Columnwise.Data...), append(cs, f32Bytes(ref[g].Columnwise.ScaleInv)...)
						}
						n := 0
						n += check(t, fmt.Sprintf("splits %d: columnwise data", k), download(c, cData, cData.Size()), cd, nil)
						n += check(t, fmt.Sprintf("splits %d: columnwise scale_inv", k), download(c, cSinv, cSinv.Size()), cs, nil)
						n += check(t, fmt.Sprintf("splits %d: row+col rowwise data", k), download(c, bRow, bRow.Size()), rd, nil)
						n += check(t, fmt.Sprintf("splits %d: row+col rowwise scale_inv", k), download(c, bRowS, bRowS.Size()), rs, nil)
						n += check(t, fmt.Sprintf("splits %d: row+col columnwise data", k), download(c, bCol, bCol.Size()), cd, nil)
						n += check(t, fmt.Sprintf("splits %d: row+col columnwise scale_inv", k), download(c, bColS, bColS.Size()), cs, nil)
						t.Logf("split vector %d: %d of 6 grouped outputs bit-exact with the reference", k, n)
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
							t.Logf("graph replay %d: %d output bytes equal to the eager run (4 kernels, one graph)", k, len(got))
						}
					}
					bad := append([]int32(nil), splitsList[0]...)
					bad[9], bad[10] = bad[9]-28, bad[10]+28
					if err := cuda.Upload(c, splits, bad); err != nil {
						return err
					}
					if err := c.LaunchGraph(g, stream); err != nil {
						return err
					}
					if gerr := kernels.GroupError(c, wsC.Flag, bad, 128); gerr == nil {
						t.Errorf("misaligned group 9: no error reported")
					} else {
						t.Logf("misaligned split reported: %v", gerr)
					}
					return c.Synchronize()
				})
			})
		}
	}
}
