// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"os"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/kernels"
)

// TestProfileBlock launches each block FP8 kernel once on a 16384^2 BF16
// input, in the order rowwise, columnwise, row+col in one pass (where the
// Set has it), 128x128, for a profiler to pick up (ncu -k regex:kq_blk).
// It uses only launchers that every version of block.go has, so that the
// same file profiles an older commit's kernels too. Runs only with
// KQUANT_PROFILE=1.
func TestProfileBlock(t *testing.T) {
	if os.Getenv("KQUANT_PROFILE") != "1" {
		t.Skip("set KQUANT_PROFILE=1 to launch the kernels for a profiler")
	}
	sh := profileShape(shape{16384, 16384})
	rows, cols := sh.rows, sh.cols
	dt := kernels.BF16
	in := makeInput(dt, rows*cols, false, 42)
	run(t, func(c *cuda.Ctx, b *bufs) error {
		x := b.upload(in.raw)
		row, col := b.alloc(rows*cols, 0), b.alloc(rows*cols, 0)
		rs, cs := b.alloc(4*rows*cols/128, 0), b.alloc(4*rows*cols/128, 0)
		o := kernels.BlockOpts{Format: kernels.E4M3, Pow2: true}
		if err := set.BlockRow(c, stream, dt, x, rows, cols, row, rs, o); err != nil {
			return err
		}
		if err := set.BlockCol(c, stream, dt, x, rows, cols, col, cs, o); err != nil {
			return err
		}
		type rowCol interface {
			BlockRowCol(c *cuda.Ctx, st cuda.Stream, dt kernels.DType, x cuda.Buffer, rows, cols int, outRow, sinvRow, outCol, sinvCol cuda.Buffer, o kernels.BlockOpts) error
		}
		if f, ok := any(set).(rowCol); ok {
			if err := f.BlockRowCol(c, stream, dt, x, rows, cols, row, rs, col, cs, o); err != nil {
				return err
			}
		}
		if err := set.Block2D(c, stream, dt, x, rows, cols, row, rs, col, cs, o); err != nil {
			return err
		}
		return c.Synchronize()
	})
}
