// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package kernels_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/accuracy"
	"github.com/kquant/kquant/internal/quant/hadamard"
	"github.com/kquant/kquant/kernels"
)

// TestMeasurePart2 prints, for the block FP8 and NVFP4 steps at 8192^2 and
// 16384^2 BF16: GPU time (median of events), bytes moved (each input read
// and output written once per pass the step makes), bandwidth and its
// fraction of the same run's device-to-device copy, host microseconds per
// eager step and per graph replay, and graph nodes per step; then the
// 64-group grouped step, the 64-pointer payload and the 8192^3
// QuantizedLinear GEMM. Runs only with KQUANT_BENCH=1.
func TestMeasurePart2(t *testing.T) {
	const iters = 20
	measure(t, iters, func(c *cuda.Ctx, b *bufs, tm *timer) error {
		timeGPU := tm.gpuMillis
		timeHost := func(fn func() error, k int) (float64, error) { return tm.hostMicros(fn, k, 5) }
		copyBW, err := tm.copyBandwidth(b)
		if err != nil {
			return err
		}
		pay := b.alloc(8192, 0)
		ptrs := make([]byte, 64*8)
		one := func() error { return set.CopyViaParams(c, stream, pay, ptrs[:8]) }
		lat, err := timeHost(one, 2000)
		if err != nil {
			return err
		}
		p64 := func() error { return set.CopyViaParams(c, stream, pay, ptrs) }
		p64us, err := timeHost(p64, 2000)
		if err != nil {
			return err
		}
		p1000 := make([]byte, 8000)
		p1000us, err := timeHost(func() error { return set.CopyViaParams(c, stream, pay, p1000) }, 500)
		if err != nil {
			return err
		}
		fmt.Printf("host cost: single launch (8-byte payload) %.2f us; 64-pointer payload %.2f us (1 launch); 1000-entry payload %.2f us (4 launches)\n", lat, p64us, p1000us)
		fmt.Printf("%-12s %-30s %7s %8s %7s %7s %8s %8s %5s\n", "shape", "step", "gpu-ms", "GB", "GB/s", "ofcopy", "host-us", "graph-us", "nodes")
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
			fmt.Printf("%-12s %-30s %7.3f %8.3f %7.0f %6.0f%% %8.2f %8.2f %5d\n", sh, s.name, ms, float64(s.bytes)/1e9, bw, 100*bw/copyBW, hu, gu, s.nodes)
			return nil
		}
		dt := kernels.BF16
		for _, sh := range []shape{{8192, 8192}, {16384, 16384}} {
			n := sh.n()
			rows, cols := sh.rows, sh.cols
			in := makeInput(dt, n, false, 42)
			x := b.upload(in.raw)
			n64, in2 := int64(n), int64(n)*2
			row, col := b.alloc(n, 0), b.alloc(n, 0)
			_, bsc := kernels.BlockScaleShape(rows, cols, false, false)
			bs1, bs2 := b.alloc(4*ceilDivT(cols, 128)*bsc, 0), b.alloc(4*ceilDivT(rows, 128)*roundUpT(cols, 4), 0)
			ts1, ts2 := b.alloc(4*4096, 0), b.alloc(4*4096, 0)
			rsr, rsc := kernels.NVFP4ScaleShape(rows, cols, false)
			csr, csc := kernels.NVFP4ScaleShape(rows, cols, true)
			fr, fc := b.alloc(n/2, 0), b.alloc(n/2, 0)
			frs, fcs := b.alloc(rsr*rsc, 0), b.alloc(csr*csc, 0)
			frz, fcz := b.alloc(rsr*rsc, 0), b.alloc(csr*csc, 0)
			am, amc := b.alloc(4, 0), b.alloc(4, 0)
			bo := kernels.BlockOpts{Format: kernels.E4M3, Pow2: true}
			gradOpts := kernels.NVFP4Opts{RHT: true, Signs: hadamard.TESignMask, Stochastic: true, Seed: 1}
			sb1 := int64(4 * ceilDivT(cols, 128) * bsc)
			q16 := n64 / 16
			steps := []step{
				{"block 1x128 rowwise", 1, in2 + n64 + sb1, func() error { return set.BlockRow(c, stream, dt, x, rows, cols, row, bs1, bo) }},
				{"block 128x1 columnwise", 1, in2 + n64 + sb1, func() error { return set.BlockCol(c, stream, dt, x, rows, cols, col, bs2, bo) }},
				{"block 1x128 row+col", 2, 2*in2 + 2*n64 + 2*sb1, func() error {
					if err := set.BlockRow(c, stream, dt, x, rows, cols, row, bs1, bo); err != nil {
						return err
					}
					return set.BlockCol(c, stream, dt, x, rows, cols, col, bs2, bo)
				}},
				{"block 128x128 row+col", 1, in2 + 2*n64, func() error { return set.Block2D(c, stream, dt, x, rows, cols, row, ts1, col, ts2, bo) }},
				{"nvfp4 row kernel alone", 1, in2 + n64/2 + 2*q16, func() error { return set.NVFP4Row(c, stream, dt, x, rows, cols, am, fr, frs, frz, kernels.NVFP4Opts{}) }},
				{"nvfp4 row step (amax+q+swz)", 3, 2*in2 + n64/2 + 2*q16, func() error {
					if err := set.NVFP4Amax(c, stream, dt, x, rows, cols, am, false, 0); err != nil {
						return err
					}
					return set.NVFP4Row(c, stream, dt, x, rows, cols, am, fr, frs, frz, kernels.NVFP4Opts{})
				}},
				{"nvfp4 col RHT+SR kernel alone", 1, in2 + n64/2 + 2*q16, func() error { return set.NVFP4Col(c, stream, dt, x, rows, cols, amc, fc, fcs, fcz, gradOpts) }},
				{"nvfp4 grad step row+col RHT SR", 6, 4*in2 + n64 + 4*q16, func() error {
					if err := set.NVFP4Amax(c, stream, dt, x, rows, cols, am, false, 0); err != nil {
						return err
					}
					if err := set.NVFP4Row(c, stream, dt, x, rows, cols, am, fr, frs, frz, gradOpts); err != nil {
						return err
					}
					if err := set.NVFP4Amax(c, stream, dt, x, rows, cols, amc, true, gradOpts.Signs); err != nil {
						return err
					}
					return set.NVFP4Col(c, stream, dt, x, rows, cols, amc, fc, fcs, fcz, gradOpts)
				}},
				{"nvfp4 2D weights row+col", 4, 2*in2 + n64 + 2*q16, func() error {
					if err := set.NVFP4Amax(c, stream, dt, x, rows, cols, am, false, 0); err != nil {
						return err
					}
					return set.NVFP4TwoD(c, stream, dt, x, rows, cols, am, fr, frs, cuda.Buffer{}, fc, fcs, cuda.Buffer{})
				}},
			}
			for _, s := range steps {
				if err := report(sh, s); err != nil {
					return err
				}
			}
			b.free()
			b.all = nil
		}
		// Grouped: 64 groups over [16384, 4096] BF16, NVFP4 row (3 kernels)
		// + block row (2 kernels).
		{
			const rows, cols, groups = 16384, 4096, 64
			sh := shape{rows, cols}
			in := makeInput(dt, rows*cols, false, 5)
			x := b.upload(in.raw)
			splits := b.alloc(4*groups, 0)
			if err := cuda.Upload(c, splits, groupedSplits(rows)[1]); err != nil {
				return err
			}
			ws := kernels.GroupWorkspace{Offsets: b.alloc(4*(groups+1), 0), Flag: b.alloc(4, 0), Amax: b.alloc(4*groups, 0)}
			ws2 := kernels.GroupWorkspace{Offsets: b.alloc(4*(groups+1), 0), Flag: b.alloc(4, 0)}
			sc := roundUpT(cols/16, 4)
			nd, ns, nz := b.alloc(rows*cols/2, 0), b.alloc(rows*sc, 0), b.alloc(rows*sc, 0)
			bd, bsv := b.alloc(rows*cols, 0), b.alloc(4*rows*(cols/128), 0)
			n64, in2 := int64(rows*cols), int64(rows*cols)*2
			nv := func() error {
				return set.GroupedNVFP4Row(c, stream, dt, x, rows, cols, splits, groups, ws, nd, ns, nz, kernels.NVFP4Opts{Stochastic: true, Seed: 3})
			}
			bl := func() error {
				return set.GroupedBlockRow(c, stream, dt, x, rows, cols, splits, groups, ws2, bd, bsv, kernels.BlockOpts{Format: kernels.E4M3, Pow2: true})
			}
			for _, s := range []step{
				{"grouped64 nvfp4 row", 3, 2*in2 + n64/2 + 2*n64/16, nv},
				{"grouped64 block row", 2, in2 + n64 + 4*n64/128, bl},
				{"grouped64 nvfp4+block", 5, 3*in2 + 3*n64/2 + 2*n64/16 + 4*n64/128, func() error {
					if err := nv(); err != nil {
						return err
					}
					return bl()
				}},
			} {
				if err := report(sh, s); err != nil {
					return err
				}
			}
			if err := kernels.GroupError(c, ws.Flag, nil, 128); err != nil {
				return err
			}
			b.free()
			b.all = nil
		}
		// QuantizedLinear 8192^3 on the GPU: NVFP4 and block FP8 dequantized
		// operands, float32 GEMM, SNR against the GPU's float32 GEMM of the
		// unquantized operands.
		{
			const m, nn, k = 8192, 8192, 8192
			xin := makeInput(kernels.F32, m*k, false, 101)
			win := makeInput(kernels.F32, nn*k, false, 102)
			for _, in := range []input{xin, win} {
				parallel(len(in.vals), func(lo, hi int) {
					for i := lo; i < hi; i++ {
						v := float32(math.Mod(float64(in.vals[i]), 8))
						in.setBits(i, math.Float32bits(v))
					}
				})
			}
			xb, wb := b.upload(xin.raw), b.upload(win.raw)
			exact, y := b.alloc(4*m*nn, 0), b.alloc(4*m*nn, 0)
			gms, err := timeGPU(func() error { return set.GEMM(c, stream, xb, wb, exact, m, nn, k) })
			if err != nil {
				return err
			}
			fmt.Printf("float32 GEMM %dx%dx%d: %.1f ms, %.1f TFLOP/s\n", m, nn, k, gms, 2*float64(m)*nn*k/(gms*1e-3)/1e12)
			ex := download(c, exact, 4*m*nn)
			exT := quant.NewTensor(m, nn)
			for i := range exT.Data {
				exT.Data[i] = f32At(ex, 4*i)
			}
			xq, wq := b.alloc(4*m*k, 0), b.alloc(4*nn*k, 0)
			am := b.alloc(4, 0)
			for _, scheme := range []string{"NVFP4", "block FP8"} {
				for _, op := range []struct {
					in   cuda.Buffer
					rows int
					out  cuda.Buffer
					w    bool
				}{{xb, m, xq, false}, {wb, nn, wq, true}} {
					if scheme == "NVFP4" {
						sr, sc := kernels.NVFP4ScaleShape(op.rows, k, false)
						q, s := b.alloc(op.rows*k/2, 0), b.alloc(sr*sc, 0)
						if err := set.NVFP4Amax(c, stream, kernels.F32, op.in, op.rows, k, am, false, 0); err != nil {
							return err
						}
						if op.w {
							err = set.NVFP4TwoD(c, stream, kernels.F32, op.in, op.rows, k, am, q, s, cuda.Buffer{}, cuda.Buffer{}, cuda.Buffer{}, cuda.Buffer{})
						} else {
							err = set.NVFP4Row(c, stream, kernels.F32, op.in, op.rows, k, am, q, s, cuda.Buffer{}, kernels.NVFP4Opts{})
						}
						if err != nil {
							return err
						}
						if err := set.NVFP4Dequantize(c, stream, q, op.rows, k, s, sc, am, op.out); err != nil {
							return err
						}
						continue
					}
					sr, sc := kernels.BlockScaleShape(op.rows, k, op.w, false)
					q, s := b.alloc(op.rows*k, 0), b.alloc(4*sr*sc, 0)
					o := kernels.BlockOpts{Format: kernels.E4M3, Pow2: true}
					if op.w {
						err = set.Block2D(c, stream, kernels.F32, op.in, op.rows, k, q, s, cuda.Buffer{}, cuda.Buffer{}, o)
					} else {
						err = set.BlockRow(c, stream, kernels.F32, op.in, op.rows, k, q, s, o)
					}
					if err != nil {
						return err
					}
					if err := set.BlockDequantize(c, stream, q, op.rows, k, s, sc, op.w, kernels.E4M3, op.out); err != nil {
						return err
					}
				}
				if err := set.GEMM(c, stream, xq, wq, y, m, nn, k); err != nil {
					return err
				}
				yb := download(c, y, 4*m*nn)
				yT := quant.NewTensor(m, nn)
				for i := range yT.Data {
					yT.Data[i] = f32At(yb, 4*i)
				}
				met, err := accuracy.Compare(exT, yT)
				if err != nil {
					return err
				}
				fmt.Printf("QuantizedLinear %s %dx%dx%d on the GPU: output SNR %.2f dB\n", scheme, m, nn, k, met.SNRdB)
			}
		}
		return nil
	})
}

func ceilDivT(a, m int) int { return (a + m - 1) / m }
func roundUpT(a, m int) int { return ceilDivT(a, m) * m }
