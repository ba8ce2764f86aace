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

// TestMeasureBlock prints, for the Float8BlockScaling steps on BF16 inputs
// of 8192^2, 16384x8192 and 16384^2: GPU time (median of event-timed
// runs), the bytes the step actually moves (each kernel's input read and
// outputs written), bandwidth and its fraction of the same run's
// device-to-device copy, for both-operand steps also the fraction for the
// least traffic of both operands (input read once), host microseconds per
// eager step and per graph replay, and kernels per step. Runs only with
// KQUANT_BENCH=1.
func TestMeasureBlock(t *testing.T) {
	const iters = 50
	measure(t, iters, func(c *cuda.Ctx, b *bufs, tm *timer) error {
		copyBW, err := tm.copyBandwidth(b)
		if err != nil {
			return err
		}
		fmt.Printf("%-11s %-26s %7s %7s %6s %6s %7s %8s %8s %3s\n", "shape", "block FP8 step", "gpu-ms", "GB", "GB/s", "ofcopy", "minofcp", "host-us", "graph-us", "krn")
		dt := kernels.BF16
		for _, sh := range []shape{{8192, 8192}, {16384, 8192}, {16384, 16384}} {
			rows, cols := sh.rows, sh.cols
			n := int64(sh.n())
			in := makeInput(dt, sh.n(), false, 42)
			x := b.upload(in.raw)
			row, col := b.alloc(sh.n(), 0), b.alloc(sh.n(), 0)
			rsr, rsc := kernels.BlockScaleShape(rows, cols, false, false)
			csr, csc := kernels.BlockScaleShape(rows, cols, false, true)
			rs, cs := b.alloc(4*rsr*rsc, 0), b.alloc(4*csr*csc, 0)
			tr1, tc1 := kernels.BlockScaleShape(rows, cols, true, false)
			tr2, tc2 := kernels.BlockScaleShape(rows, cols, true, true)
			ts1, ts2 := b.alloc(4*tr1*tc1, 0), b.alloc(4*tr2*tc2, 0)
			o := kernels.BlockOpts{Format: kernels.E4M3, Pow2: true}
			in2 := 2 * n
			rsb, csb := int64(4*rsr*rsc), int64(4*csr*csc)
			tsb := int64(4*tr1*tc1 + 4*tr2*tc2)
			type step struct {
				name         string
				kernels      int
				bytes, least int64
				fn           func() error
			}
			rowFn := func() error { return set.BlockRow(c, stream, dt, x, rows, cols, row, rs, o) }
			colFn := func() error { return set.BlockCol(c, stream, dt, x, rows, cols, col, cs, o) }
			both := in2 + 2*n + rsb + csb
			for _, s := range []step{
				{"1x128 rowwise", 1, in2 + n + rsb, 0, rowFn},
				{"128x1 columnwise", 1, in2 + n + csb, 0, colFn},
				{"1x128 row+col, 2 kernels", 2, 2*in2 + 2*n + rsb + csb, both, func() error {
					if err := rowFn(); err != nil {
						return err
					}
					return colFn()
				}},
				{"1x128 row+col, fused", 1, both, both, func() error {
					return set.BlockRowCol(c, stream, dt, x, rows, cols, row, rs, col, cs, o)
				}},
				{"128x128 row+col", 1, in2 + 2*n + tsb, in2 + 2*n + tsb, func() error {
					return set.Block2D(c, stream, dt, x, rows, cols, row, ts1, col, ts2, o)
				}},
			} {
				ms, hu, gu, err := tm.stepCosts(s.fn, 5)
				if err != nil {
					return fmt.Errorf("%s: %w", s.name, err)
				}
				bw := float64(s.bytes) / (ms * 1e-3) / 1e9
				least := "-"
				if s.least > 0 {
					least = fmt.Sprintf("%.0f%%", 100*float64(s.least)/(ms*1e-3)/1e9/copyBW)
				}
				fmt.Printf("%-11s %-26s %7.3f %7.3f %6.0f %5.0f%% %7s %8.2f %8.2f %3d\n", sh, s.name, ms, float64(s.bytes)/1e9, bw, 100*bw/copyBW, least, hu, gu, s.kernels)
			}
			b.free()
			b.all = nil
		}
		// Grouped 64 groups over [16384, 4096] BF16: rowwise (the backend's
		// GroupedBlockRow), columnwise and row+col, each offsets + quantize.
		{
			const rows, cols, groups = 16384, 4096, 64
			sh := shape{rows, cols}
			n := int64(rows * cols)
			in := makeInput(dt, rows*cols, false, 5)
			x := b.upload(in.raw)
			splits := b.alloc(4*groups, 0)
			if err := cuda.Upload(c, splits, groupedSplits(rows)[1]); err != nil {
				return err
			}
			ws := kernels.GroupWorkspace{Offsets: b.alloc(4*(groups+1), 0), Flag: b.alloc(4, 0)}
			rd, rsv := b.alloc(rows*cols, 0), b.alloc(4*rows*(cols/128), 0)
			cd, csv := b.alloc(rows*cols, 0), b.alloc(4*(rows/128)*cols, 0)
			o := kernels.BlockOpts{Format: kernels.E4M3, Pow2: true}
			sb := 4 * n / 128
			for _, s := range []struct {
				name  string
				bytes int64
				fn    func() error
			}{
				{"grouped64 rowwise", 2*n + n + sb, func() error {
					return set.GroupedBlockRow(c, stream, dt, x, rows, cols, splits, groups, ws, rd, rsv, o)
				}},
				{"grouped64 columnwise", 2*n + n + sb, func() error {
					return set.GroupedBlockCol(c, stream, dt, x, rows, cols, splits, groups, ws, cd, csv, o)
				}},
				{"grouped64 row+col", 2*n + 2*n + 2*sb, func() error {
					return set.GroupedBlockRowCol(c, stream, dt, x, rows, cols, splits, groups, ws, rd, rsv, cd, csv, o)
				}},
			} {
				ms, hu, gu, err := tm.stepCosts(s.fn, 5)
				if err != nil {
					return fmt.Errorf("%s: %w", s.name, err)
				}
				bw := float64(s.bytes) / (ms * 1e-3) / 1e9
				fmt.Printf("%-11s %-26s %7.3f %7.3f %6.0f %5.0f%% %7s %8.2f %8.2f %3d\n", sh, s.name, ms, float64(s.bytes)/1e9, bw, 100*bw/copyBW, "-", hu, gu, 2)
			}
			if err := kernels.GroupError(c, ws.Flag, nil, 128); err != nil {
				return err
			}
		}
		return nil
	})
}
