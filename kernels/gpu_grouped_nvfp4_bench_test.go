// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant/hadamard"
	"github.com/kquant/kquant/kernels"
)

// TestGroupedNVFP4Bench times the grouped NVFP4 launchers at 16384x8192
// BF16 with 64 uniform groups (split sizes in device memory): the offsets
// kernel alone, GroupedNVFP4Row with SR, GroupedNVFP4Col with RHT+SR,
// GroupedNVFP4 with both (the gradient step) and GroupedNVFP4TwoD with
// both (the weights step); GPU ms (median of event-timed steps), the bytes
// the step moves, host µs per eager step and per graph replay, launches.
// Compare with TestNVFP4Bench's ungrouped rows at the same shape. Runs
// only with KQUANT_BENCH=1.
func TestGroupedNVFP4Bench(t *testing.T) {
	if os.Getenv("KQUANT_BENCH") != "1" {
		t.Skip("set KQUANT_BENCH=1 to measure")
	}
	const rows, cols, groups = 16384, 8192, 64
	measure(t, 20, func(c *cuda.Ctx, b *bufs, tm *timer) error {
		copyBW, err := tm.copyBandwidth(b)
		if err != nil {
			return err
		}
		dt := kernels.BF16
		n := rows * cols
		x := b.upload(makeInput(dt, n, false, 42).raw)
		sp := make([]int32, groups)
		for i := range sp {
			sp[i] = rows / groups
		}
		splits := b.alloc(4*groups, 0)
		if err := cuda.Upload(c, splits, sp); err != nil {
			return err
		}
		ws := kernels.GroupWorkspace{Offsets: b.alloc(4*(groups+1), 0), Flag: b.alloc(4, 0), Amax: b.alloc(8*groups, 0)}
		sc := (cols/16 + 3) / 4 * 4
		csb := kernels.GroupedNVFP4ColScaleBytes(rows, cols)
		row := kernels.GroupedNVFP4Out{Data: b.alloc(n/2, 0), Scales: b.alloc(rows*sc, 0), Swizzled: b.alloc(rows*sc, 0)}
		col := kernels.GroupedNVFP4Out{Data: b.alloc(n/2, 0), Scales: b.alloc(csb, 0), Swizzled: b.alloc(csb, 0)}
		grad := kernels.NVFP4Opts{RHT: true, Signs: hadamard.TESignMask, Stochastic: true, Seed: 1}
		in2, n64 := int64(n)*2, int64(n)
		rowB, colB := in2+n64/2+2*int64(rows*sc), in2+n64/2+2*int64(csb)
		fmt.Printf("%-12s %-38s %7s %8s %7s %7s %8s %8s %5s\n", "shape", "grouped step (64 groups)", "gpu-ms", "GB", "GB/s", "ofcopy", "host-us", "graph-us", "krn")
		for _, s := range []struct {
			name  string
			krn   int
			bytes int64
			fn    func() error
		}{
			{"offsets", 1, 8 * groups, func() error { return set.GroupOffsets(c, stream, splits, groups, rows, 128, ws, 2*groups) }},
			{"row SR (offsets+amax+row)", 3, in2 + rowB, func() error {
				return set.GroupedNVFP4Row(c, stream, dt, x, rows, cols, splits, groups, ws, row.Data, row.Scales, row.Swizzled, kernels.NVFP4Opts{Stochastic: true, Seed: 1})
			}},
			{"col RHT+SR (offsets+amaxRHT+col)", 3, in2 + colB, func() error {
				return set.GroupedNVFP4Col(c, stream, dt, x, rows, cols, splits, groups, ws, col, grad)
			}},
			{"grad both (5 launches)", 5, 2*in2 + rowB + colB, func() error {
				return set.GroupedNVFP4(c, stream, dt, x, rows, cols, splits, groups, ws, row, col, grad)
			}},
			{"2D weights both (offsets+amax+2D)", 3, 2*in2 + n64 + 2*int64(rows*sc) + 2*int64(csb), func() error {
				return set.GroupedNVFP4TwoD(c, stream, dt, x, rows, cols, splits, groups, ws, row, col)
			}},
		} {
			ms, hu, gu, err := tm.stepCosts(s.fn, 5)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			bw := float64(s.bytes) / (ms * 1e-3) / 1e9
			fmt.Printf("%-12s %-38s %7.3f %8.3f %7.0f %6.1f%% %8.2f %8.2f %5d\n", "16384x8192", s.name, ms, float64(s.bytes)/1e9, bw, 100*bw/copyBW, hu, gu, s.krn)
		}
		return kernels.GroupError(c, ws.Flag, sp, 128)
	})
}
