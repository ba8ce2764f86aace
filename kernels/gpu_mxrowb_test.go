// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"fmt"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/kernels"
)

// TestMXFP8RowGridCap: the rowwise streaming MXFP8 kernel (kq_mxfp8_rowb)
// gives the same bytes on its resident grid and on grids capped at 3 and 1
// blocks (SetTileGridCap), so that a block takes many tiles; every output:
// data, plain scales, swizzled scales (and the plain scales without them)
// and the fused amax, outputs poisoned first so that padding must be
// written. 16-bit inputs with cols % 8 == 0 (the shapes it takes), partial
// 128-row groups, partial scale words' column blocks (cols % 32 != 0),
// partial 2048-column tiles, rows of 1..65 blocks, a scale word's 4 blocks
// (nb % 4 == 0) or not. TestMXFP8 and TestMXFP8SwizzledScales check the
// kernel against the contract.
func TestMXFP8RowGridCap(t *testing.T) {
	shapes := []shape{{1, 8}, {7, 4096}, {33, 1000}, {65, 40}, {129, 136}, {208, 392}, {300, 200}, {1000, 1000},
		{4097, 64}, {2048, 2048}, {131, 2056}, {5, 6152},
		{1, 32}, {3, 64}, {130, 96}, {77, 160}, {257, 128}, {129, 1152}, {300, 1056}, {1000, 2080}, {31, 4128}}
	shapes = append(shapes, bigShapes()...)
	caps := []int{0, 3, 1}
	exact, total := 0, 0
	for i, sh := range shapes {
		for _, dt := range []kernels.DType{kernels.BF16, kernels.F16} {
			for _, f := range formats {
				for _, ocp := range []bool{false, true} {
					total++
					specials := (i+int(f))%2 == 0
					t.Run(fmt.Sprintf("%v/%v/%v/ocp=%v/specials=%v", sh, dt, elemType(f), ocp, specials), func(t *testing.T) {
						in := makeInput(dt, sh.n(), specials, uint64(15000+i))
						ok := true
						run(t, func(c *cuda.Ctx, b *bufs) error {
							n := sh.n()
							sr, scl := kernels.MXFP8ScaleShape(sh.rows, sh.cols, false)
							ns := sr * scl
							x := b.upload(in.raw)
							// outs: data, scales, swizzled scales, state;
							// scales again without the swizzled output.
							var want [5][]byte
							for _, blocks := range caps {
								oldCap := set.SetTileGridCap(blocks)
								out, sc, swz := b.alloc(n, 0xAA), b.alloc(ns, 0xAA), b.alloc(ns, 0x55)
								st, sc2, st2 := b.alloc(kernels.StateBytes, 0), b.alloc(ns, 0x33), b.alloc(kernels.StateBytes, 0)
								err := set.MXFP8Swizzled(c, stream, dt, x, sh.rows, sh.cols, out, sc, swz, false, f, ocp, st)
								if err == nil {
									err = set.MXFP8(c, stream, dt, x, sh.rows, sh.cols, b.alloc(n, 0x11), sc2, false, f, ocp, st2)
								}
								set.SetTileGridCap(oldCap)
								if err != nil {
									return err
								}
								got := [5][]byte{download(c, out, n), download(c, sc, ns), download(c, swz, ns),
									download(c, st, kernels.StateBytes), download(c, sc2, ns)}
								if blocks == caps[0] {
									want = got
									continue
								}
								for k, what := range []string{"data", "scales", "swizzled scales", "state", "scales (no swizzled)"} {
									var raw []float32
									if k == 0 {
										raw = in.vals
									}
									if d := diffBytes(got[k], want[k], raw); d != "" {
										t.Errorf("grid capped at %d vs resident: %s: %s", blocks, what, d)
										ok = false
									}
								}
							}
							return nil
						})
						if ok {
							exact++
						}
					})
				}
			}
		}
	}
	t.Logf("MXFP8 rowwise grid caps: %d of %d cases byte-identical (capped at 3, 1 vs resident)", exact, total)
}
