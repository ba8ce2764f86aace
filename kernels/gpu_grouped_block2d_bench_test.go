// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/kernels"
)

// TestGroupedBlock2DBench times block FP8 128x128 with both operands at
// 16384x8192 BF16: the ungrouped Block2D, the 64-group GroupedBlock2D
// (uniform splits of 256 rows: offsets + quantize) and the per-group path
// (one Block2D launch per group, bound to the host sizes): GPU ms (median
// of 50 event-timed steps), bandwidth of the least traffic (input read
// once, both codes and scales written once) and its fraction of the
// device-to-device copy, host µs per eager step and per graph replay.
// KQUANT_B2D_UNGROUPED=1 times the ungrouped step alone.
func TestGroupedBlock2DBench(t *testing.T) {
	measure(t, 50, func(c *cuda.Ctx, b *bufs, tm *timer) error {
		copyBW, err := tm.copyBandwidth(b)
		if err != nil {
			return err
		}
		const rows, cols, groups = 16384, 8192, 64
		dt := kernels.BF16
		n := rows * cols
		in := makeInput(dt, n, false, 46)
		x := b.upload(in.raw)
		row, col := b.alloc(n, 0), b.alloc(n, 0)
		sr, sc := kernels.BlockScaleShape(rows, cols, true, false)
		csr, csc := kernels.BlockScaleShape(rows, cols, true, true)
		rs := b.alloc(4*sr*sc, 0)
		cs := b.alloc(4*(cols/128)*max(csc, kernels.GroupedBlock2DColScaleCols(rows, groups)), 0)
		o := kernels.BlockOpts{Format: kernels.E4M3, Pow2: true}
		least := float64(2*n + 2*n + 4*sr*sc + 4*csr*csc)
		host := make([]int32, groups)
		for g := range host {
			host[g] = rows / groups
		}
		type step struct {
			name    string
			kernels int
			fn      func() error
		}
		steps := []step{{"128x128 row+col ungrouped", 1, func() error {
			return set.Block2D(c, stream, dt, x, rows, cols, row, rs, col, cs, o)
		}}}
		if os.Getenv("KQUANT_B2D_UNGROUPED") == "" {
			splits := b.alloc(4*groups, 0)
			if err := cuda.Upload(c, splits, host); err != nil {
				return err
			}
			ws := kernels.GroupWorkspace{Offsets: b.alloc(4*(groups+1), 0), Flag: b.alloc(4, 0)}
			steps = append(steps, step{"128x128 row+col grouped64", 2, func() error {
				return set.GroupedBlock2D(c, stream, dt, x, rows, cols, splits, groups, ws, row, rs, col, cs, o)
			}}, step{"128x128 row+col per-group", groups, func() error {
				// Group g as a tensor of its own: its rows of x and of the
				// rowwise outputs, its transposed codes at cols*o_g, its
				// columnwise scales [cols/128, roundup(n_g/128,4)] packed.
				off, coff := 0, 0
				for _, ng := range host {
					m := int(ng)
					_, gsc := kernels.BlockScaleShape(m, cols, true, false)
					_, gcc := kernels.BlockScaleShape(m, cols, true, true)
					if err := set.Block2D(c, stream, dt, x.Slice(2*off*cols, 2*m*cols), m, cols, row.Slice(off*cols, m*cols),
						rs.Slice(4*(off/128)*gsc, 4*(m/128)*gsc), col.Slice(off*cols, m*cols), cs.Slice(4*coff, 4*(cols/128)*gcc), o); err != nil {
						return err
					}
					off += m
					coff += (cols / 128) * gcc
				}
				return nil
			}})
		}
		fmt.Printf("%-11s %-28s %7s %6s %6s %8s %8s %3s\n", "shape", "block FP8 step", "gpu-ms", "GB/s", "ofcopy", "host-us", "graph-us", "krn")
		for _, s := range steps {
			ms, hu, gu, err := tm.stepCosts(s.fn, 5)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			bw := least / (ms * 1e-3) / 1e9
			fmt.Printf("%-11s %-28s %7.3f %6.0f %5.0f%% %8.2f %8.2f %3d\n", "16384x8192", s.name, ms, bw, 100*bw/copyBW, hu, gu, s.kernels)
		}
		return nil
	})
}
