// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant/hadamard"
	"github.com/kquant/kquant/kernels"
)

// TestNVFP4Bench times every NVFP4 kernel on its own and the NVFP4 steps,
// BF16 input, at 8192^2, 16384x8192 and 16384^2 (KQUANT_BENCH_SHAPES, e.g.
// "16384x16384,8192x8192", overrides): GPU milliseconds (median of events),
// the bytes the step actually moves (every kernel's reads and writes once,
// memsets included), bandwidth and its fraction of the same run's
// device-to-device copy, host microseconds per eager step and per graph
// replay, and graph nodes per step (kernels plus memsets). Runs only with KQUANT_BENCH=1;
// KQUANT_BENCH_ITERS sets the timed repetitions (default 20);
// KQUANT_BENCH_PROFILE=1 launches each NVFP4 kernel once per shape instead
// (for ncu).
func TestNVFP4Bench(t *testing.T) {
	iters := 20
	if v, err := strconv.Atoi(os.Getenv("KQUANT_BENCH_ITERS")); err == nil && v > 0 {
		iters = v
	}
	shapes := []shape{{8192, 8192}, {16384, 8192}, {16384, 16384}}
	if v := os.Getenv("KQUANT_BENCH_SHAPES"); v != "" {
		shapes = nil
		for _, f := range strings.Split(v, ",") {
			var sh shape
			if _, err := fmt.Sscanf(f, "%dx%d", &sh.rows, &sh.cols); err != nil {
				t.Fatalf("KQUANT_BENCH_SHAPES %q: %v", v, err)
			}
			shapes = append(shapes, sh)
		}
	}
	measure(t, iters, func(c *cuda.Ctx, b *bufs, tm *timer) error {
		copyBW, err := tm.copyBandwidth(b)
		if err != nil {
			return err
		}
		fmt.Printf("%-12s %-34s %7s %8s %7s %7s %8s %8s %5s\n", "shape", "step", "gpu-ms", "GB", "GB/s", "ofcopy", "host-us", "graph-us", "nodes")
		type step struct {
			name  string
			nodes int
			bytes int64
			fn    func() error
		}
		report := func(sh shape, s step) error {
			ms, hu, gu, err := tm.stepCosts(s.fn, 5)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			bw := float64(s.bytes) / (ms * 1e-3) / 1e9
			fmt.Printf("%-12s %-34s %7.3f %8.3f %7.0f %6.1f%% %8.2f %8.2f %5d\n", sh, s.name, ms, float64(s.bytes)/1e9, bw, 100*bw/copyBW, hu, gu, s.nodes)
			return nil
		}
		dt := kernels.BF16
		for _, sh := range shapes {
			rows, cols := sh.rows, sh.cols
			n := sh.n()
			in := makeInput(dt, n, false, 42)
			x := b.upload(in.raw)
			n64, in2 := int64(n), int64(n)*2
			rsr, rsc := kernels.NVFP4ScaleShape(rows, cols, false)
			csr, csc := kernels.NVFP4ScaleShape(rows, cols, true)
			rs, cs := int64(rsr*rsc), int64(csr*csc)
			fr, fc := b.alloc(n/2, 0), b.alloc(n/2, 0)
			frs, fcs := b.alloc(rsr*rsc, 0), b.alloc(csr*csc, 0)
			frz, fcz := b.alloc(rsr*rsc, 0), b.alloc(csr*csc, 0)
			am, amc := b.alloc(4, 0), b.alloc(4, 0)
			grad := kernels.NVFP4Opts{RHT: true, Signs: hadamard.TESignMask, Stochastic: true, Seed: 1}
			amax := func() error { return set.NVFP4Amax(c, stream, dt, x, rows, cols, am, false, 0) }
			amaxRHT := func() error { return set.NVFP4Amax(c, stream, dt, x, rows, cols, amc, true, grad.Signs) }
			row := func(o kernels.NVFP4Opts) func() error {
				return func() error { return set.NVFP4Row(c, stream, dt, x, rows, cols, am, fr, frs, frz, o) }
			}
			col := func() error { return set.NVFP4Col(c, stream, dt, x, rows, cols, amc, fc, fcs, fcz, grad) }
			// The same with the tiles in the claimed order (a state).
			claimed := grad
			claimed.State = b.alloc(kernels.StateBytes, 0)
			colClaimed := func() error { return set.NVFP4Col(c, stream, dt, x, rows, cols, amc, fc, fcs, fcz, claimed) }
			twoD := func() error {
				return set.NVFP4TwoD(c, stream, dt, x, rows, cols, am, fr, frs, cuda.Buffer{}, fc, fcs, cuda.Buffer{})
			}
			seq := func(fns ...func() error) func() error {
				return func() error {
					for _, f := range fns {
						if err := f(); err != nil {
							return err
						}
					}
					return nil
				}
			}
			if err := seq(amax, amaxRHT)(); err != nil {
				return err
			}
			if os.Getenv("KQUANT_BENCH_PROFILE") == "1" {
				// One launch of each kernel, for ncu.
				for _, f := range []func() error{amax, row(kernels.NVFP4Opts{}), row(kernels.NVFP4Opts{Stochastic: true, Seed: 1}), amaxRHT, col, twoD} {
					if err := f(); err != nil {
						return err
					}
				}
				if err := c.StreamSynchronize(stream); err != nil {
					return err
				}
				b.free()
				b.all = nil
				continue
			}
			rowBytes := in2 + n64/2 + 2*rs     // input, data, scales, swizzled scales
			colBytes := in2 + n64/2 + 2*cs     // the same for the transposed operand
			twoDBytes := in2 + n64 + 2*(rs+cs) // input, both data, scales written by the memsets and the kernel
			for _, s := range []step{
				{"nvfp4 amax kernel", 2, in2, amax},
				{"nvfp4 row kernel (+swizzled)", 1, rowBytes, row(kernels.NVFP4Opts{})},
				{"nvfp4 row kernel SR (+swizzled)", 1, rowBytes, row(kernels.NVFP4Opts{Stochastic: true, Seed: 1})},
				{"nvfp4 row step (amax + quantize)", 3, in2 + rowBytes, seq(amax, row(kernels.NVFP4Opts{}))},
				{"nvfp4 amax RHT kernel", 2, in2, amaxRHT},
				{"nvfp4 col kernel RHT+SR (+swz)", 1, colBytes, col},
				{"nvfp4 grad step row+col RHT SR", 6, 2*in2 + rowBytes + colBytes, seq(amax, row(grad), amaxRHT, col)},
				{"nvfp4 col kernel RHT+SR claimed", 1, colBytes, colClaimed},
				{"nvfp4 grad step, col claimed", 6, 2*in2 + rowBytes + colBytes, seq(amax, row(grad), amaxRHT, colClaimed)},
				{"nvfp4 2D kernel row+col", 3, twoDBytes, twoD},
				{"nvfp4 2D weights step", 5, in2 + twoDBytes, seq(amax, twoD)},
			} {
				if err := report(sh, s); err != nil {
					return err
				}
			}
			b.free()
			b.all = nil
		}
		return nil
	})
}
