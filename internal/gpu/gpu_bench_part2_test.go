// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package gpu

import (
	"context"
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/linear"
	"github.com/kquant/kquant/kernels"
)

// TestBenchmarkPart2 measures, through Measure (the path of kquantctl and
// the agent), the block FP8, NVFP4 and MXFP8 (device swizzle) steps with
// both operands at 8192^2 and 16384^2 BF16; the 64-group grouped step;
// the host cost of launches and kernel-parameter payloads; and
// QuantizedLinear at 8192^3. Runs only with KQUANT_BENCH=1.
func TestBenchmarkPart2(t *testing.T) {
	if os.Getenv("KQUANT_BENCH") != "1" {
		t.Skip("set KQUANT_BENCH=1 to measure")
	}
	ctx := context.Background()
	bl, err := gb.Baselines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	launch := bl.Launch.Seconds() * 1e6
	fmt.Printf("baselines: launch %.2f us, 1-node graph launch %.2f us, copy %.0f GB/s\n", launch, bl.GraphLaunch.Seconds()*1e6, bl.CopyBandwidthGBps)
	hostCosts(t)
	opts := measure.Options{Mode: v1alpha1.JobModeBenchmark, Graphs: v1alpha1.GraphModeBoth, Warmup: 5, Iterations: 30}
	fmt.Printf("%-12s %-26s %4s %9s %7s %6s %7s %9s %9s %8s %s\n", "shape", "step", "krn", "gpu-us", "GB", "GB/s", "ofcopy", "eager-us", "graph-us", "eager/kL", "replay")
	type rc struct {
		name string
		r    quant.Recipe
		role quant.TensorRole
	}
	cases := []rc{
		{"current (ref. row)", quant.DefaultRecipe(quant.Float8CurrentScaling), quant.Input},
		{"block 1x128 input", quant.DefaultRecipe(quant.Float8BlockScaling), quant.Input},
		{"block 128x128 weight", quant.DefaultRecipe(quant.Float8BlockScaling), quant.Weight},
		{"nvfp4 input (RHT)", quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Input},
		{"nvfp4 gradient (RHT,SR)", quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Gradient},
		{"nvfp4 weight 16x16", quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Weight},
		{"mxfp8 input (+swizzle)", quant.DefaultRecipe(quant.MXFP8BlockScaling), quant.Input},
	}
	for _, sh := range []shape{{8192, 8192}, {16384, 16384}} {
		x := makeInput(sh, kernels.BF16, false, 42)
		for _, tc := range cases {
			req := quant.Request{Recipe: tc.r, Role: tc.role, Usage: quant.UsageBoth, Seed: 9}
			m, err := gb.Measure(ctx, measure.Quantize{Request: req, X: x}, opts)
			if err != nil {
				t.Fatalf("%v %s: %v", sh, tc.name, err)
			}
			printRow(sh.String(), tc.name, m, launch)
		}
	}
	// The grouped MoE step: 64 groups over 16384x4096, uniform splits.
	const rows, cols, groups = 16384, 4096, 64
	x := makeInput(shape{rows, cols}, kernels.BF16, false, 43)
	splits := make([]int, groups)
	for i := range splits {
		splits[i] = rows / groups
	}
	for _, tc := range []struct {
		rc
		usage    quant.Usage
		perGroup bool // one launch sequence per group (perGroup), as before the grouped kernels
	}{
		{rc{"grouped nvfp4 grad row", quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Gradient}, quant.UsageRowwise, false},
		{rc{"grouped block row", quant.DefaultRecipe(quant.Float8BlockScaling), quant.Input}, quant.UsageRowwise, false},
		{rc{"grouped block row+col", quant.DefaultRecipe(quant.Float8BlockScaling), quant.Input}, quant.UsageBoth, false},
		{rc{"grouped mxfp8 row (fallbk)", quant.DefaultRecipe(quant.MXFP8BlockScaling), quant.Input}, quant.UsageRowwise, true},
		{rc{"grouped current row (fallbk)", quant.DefaultRecipe(quant.Float8CurrentScaling), quant.Input}, quant.UsageRowwise, true},
		{rc{"grouped mxfp8 row+col (kernel)", quant.DefaultRecipe(quant.MXFP8BlockScaling), quant.Input}, quant.UsageBoth, false},
		{rc{"grouped current row+col (kernel)", quant.DefaultRecipe(quant.Float8CurrentScaling), quant.Input}, quant.UsageBoth, false},
	} {
		req := quant.Request{Recipe: tc.r, Role: tc.role, Usage: tc.usage, Seed: 9}
		g := measure.GroupedQuantize{Request: req, X: x, Splits: splits}
		var step measure.Step = g
		path := string(tc.r.Scheme) + ": grouped kernels, split sizes in device memory, launches independent of the group count"
		if tc.perGroup {
			step = perGroup{g}
			path = string(tc.r.Scheme) + ": one launch sequence per group (perGroup, as before the grouped kernels)"
		}
		m, err := gb.Measure(ctx, step, opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		printRow("16384x4096", tc.name, m, launch)
		fmt.Printf("    %s; split-size payload (64 int32 through kernel parameters) %.2f us\n", path, m.PointerLoadMicros)
	}
	linearBench(t)
}

func printRow(sh, name string, m measure.Measurement, launch float64) {
	bw := float64(m.BytesMoved) / m.GPUMicros / 1e3
	ratio := m.HostEagerMicros / (float64(m.KernelsPerStep) * launch)
	fmt.Printf("%-12s %-26s %4d %9.1f %7.3f %6.0f %6.1f%% %9.2f %9.2f %8.2f %v/%v\n", sh, name, m.KernelsPerStep, m.GPUMicros,
		float64(m.BytesMoved)/1e9, bw, 100*bw/m.CopyBandwidthGBps, m.HostEagerMicros, m.HostGraphMicros, ratio,
		m.Graph.Capturable, m.Graph.ReplayMatchesEager)
}

// hostCosts prints the host cost of one empty cgo call, of a hand-off to
// the device thread (Device.Do, back to back and after the device thread
// went idle), of the cheapest launch, and of the kernel-parameter payload
// for 1, 64, 256 and 1000 8-byte entries through the packed, size-classed
// launch and through the general Args launch. Launch costs are noisy on
// this machine (a VM), so the variants are measured in interleaved rounds
// (batches of 64 calls from an idle stream) and the median, min and max
// over the rounds are printed.
func hostCosts(t *testing.T) {
	const rounds = 9
	stat := func(v []float64) string {
		lo, hi := v[0], v[0]
		for _, x := range v {
			lo, hi = min(lo, x), max(hi, x)
		}
		return fmt.Sprintf("%.2f us (min %.2f, max %.2f)", medianOf(v), lo, hi)
	}
	doUS := func(n int, pause time.Duration) float64 {
		var total time.Duration
		for range n {
			if pause > 0 {
				time.Sleep(pause)
			}
			t0 := time.Now()
			if err := gb.dev.Do(func(*cuda.Ctx) error { return nil }); err != nil {
				t.Fatal(err)
			}
			total += time.Since(t0)
		}
		return float64(total) / float64(time.Microsecond) / float64(n)
	}
	var hot, cold []float64
	for range rounds {
		hot = append(hot, doUS(2000, 0))
		cold = append(cold, doUS(50, time.Millisecond))
	}
	fmt.Printf("host cost: Device.Do hand-off back to back %s; after 1 ms idle %s\n", stat(hot), stat(cold))
	err := gb.dev.Do(func(c *cuda.Ctx) error {
		st := gb.stream
		t0 := time.Now()
		for range 100000 {
			c.Nop()
		}
		fmt.Printf("host cost: empty cgo call %.3f us\n", float64(time.Since(t0))/float64(time.Microsecond)/100000)
		cvt, err := c.Alloc(4)
		if err != nil {
			return err
		}
		defer c.Free(cvt)
		dst, err := c.Alloc(8192)
		if err != nil {
			return err
		}
		defer c.Free(dst)
		type variant struct {
			name string
			fn   func(*cuda.Ctx) error
		}
		vs := []variant{
			{"launch, 80-byte packed params (payload kernel, n=0)", func(c *cuda.Ctx) error { return gb.set.LaunchNop(c, st) }},
			{"launch, 4 params through Args (ConvertF32, n=0)", func(c *cuda.Ctx) error { return gb.set.ConvertF32(c, st, cvt, 0, cvt, kernels.E4M3) }},
		}
		for _, entries := range []int{1, 64, 256, 1000} {
			src := make([]byte, 8*entries)
			launches := (8*entries + kernels.PayloadChunk - 1) / kernels.PayloadChunk
			vs = append(vs,
				variant{fmt.Sprintf("payload %4d entries, packed size-classed (%d launches)", entries, launches), func(c *cuda.Ctx) error { return gb.set.CopyViaParams(c, st, dst, src) }},
				variant{fmt.Sprintf("payload %4d entries, Args 2064-byte (%d launches)", entries, launches), func(c *cuda.Ctx) error { return gb.set.CopyViaParamsArgs(c, st, dst, src) }})
		}
		res := make([][]float64, len(vs))
		for _, v := range vs { // warm-up: first launches of each kernel
			if _, err := hostMicros(c, st, 16, v.fn); err != nil {
				return err
			}
		}
		for range rounds {
			for i, v := range vs {
				us, err := hostMicros(c, st, hostBatch, v.fn)
				if err != nil {
					return err
				}
				res[i] = append(res[i], us)
			}
		}
		for i, v := range vs {
			fmt.Printf("host cost: %-58s %s\n", v.name, stat(res[i]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// linearBench runs QuantizedLinear at 8192^3 for every recipe on the GPU
// (the reference cannot: its GEMM would take hours) and prints the output
// SNR and the GEMM's GPU time.
func linearBench(t *testing.T) {
	ctx := context.Background()
	const m, n, k = 8192, 8192, 8192
	X := moderate(makeInput(shape{m, k}, kernels.BF16, false, 1))
	W := moderate(makeInput(shape{n, k}, kernels.BF16, false, 2))
	for _, s := range quant.Schemes() {
		t0 := time.Now()
		res, err := gb.QuantizedLinear(ctx, linear.Request{Recipe: quant.DefaultRecipe(s), X: X, W: W})
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		el := time.Since(t0)
		worst, err := sampledLinearCheck(ctx, res, m, n, k)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		fmt.Printf("QuantizedLinear 8192^3 %-22s SNR %.4f dB (X %.2f dB, W %.2f dB), whole call %.2f s; 64x64 sampled outputs vs the reference GEMM: worst %.3g of the summation-order bound\n",
			s, res.Output.SNRdB, res.XMetrics.SNRdB, res.WMetrics.SNRdB, el.Seconds(), worst)
	}
	err := gb.dev.Do(func(c *cuda.Ctx) error {
		var bufs []cuda.Buffer
		defer func() {
			for _, b := range bufs {
				c.Free(b)
			}
		}()
		for range 3 {
			b, err := c.Alloc(4 * m * k)
			if err != nil {
				return err
			}
			bufs = append(bufs, b)
			if err := c.Memset(b, 0x3C); err != nil {
				return err
			}
		}
		e0, _ := c.NewEvent()
		e1, _ := c.NewEvent()
		defer c.DestroyEvent(e0)
		defer c.DestroyEvent(e1)
		var best float32
		for i := range 3 {
			c.Record(e0, gb.stream)
			if err := gb.set.GEMM(c, gb.stream, bufs[0], bufs[1], bufs[2], m, n, k); err != nil {
				return err
			}
			c.Record(e1, gb.stream)
			if err := c.EventSynchronize(e1); err != nil {
				return err
			}
			ms, err := c.ElapsedMillis(e0, e1)
			if err != nil {
				return err
			}
			if i == 0 || ms < best {
				best = ms
			}
		}
		fmt.Printf("float32 GEMM 8192^3: %.2f ms, %.1f TFLOP/s\n", best, 2*float64(m)*n*k/float64(best)/1e9)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// sampledLinearCheck recomputes 64x64 outputs of a QuantizedLinear (rows
// and columns spread over the output) with the reference's GEMM
// (linear.GEMM) on the reference backend's dequantize of the GPU's
// quantized operands, and returns the largest |y_gpu - y_ref| as a
// fraction of the summation-order bound 2·K·2^-24·Σ|x̂·ŵ|; an element over
// the bound is an error.
func sampledLinearCheck(ctx context.Context, res *linear.Result, m, n, k int) (float64, error) {
	xd, err := ref.Dequantize(ctx, res.X, quant.UsageRowwise)
	if err != nil {
		return 0, err
	}
	wd, err := ref.Dequantize(ctx, res.W, quant.UsageRowwise)
	if err != nil {
		return 0, err
	}
	const s = 64
	xs, ws := quant.NewTensor(s, k), quant.NewTensor(s, k)
	ri, cj := make([]int, s), make([]int, s)
	for a := range s {
		ri[a], cj[a] = (a*m)/s+a%7, (a*n)/s+(a*3)%11
		copy(xs.Row(a), xd.Row(ri[a]))
		copy(ws.Row(a), wd.Row(cj[a]))
	}
	y, err := linear.GEMM(ctx, xs, ws)
	if err != nil {
		return 0, err
	}
	worst := 0.0
	for a := range s {
		for b := range s {
			var abs float64
			for kk := range k {
				abs += math.Abs(float64(xs.Data[a*k+kk]) * float64(ws.Data[b*k+kk]))
			}
			bound := 2 * float64(k) * 0x1p-24 * abs
			d := math.Abs(float64(res.Y.Data[ri[a]*n+cj[b]]) - float64(y.Data[a*s+b]))
			if d > bound {
				return 0, fmt.Errorf("y[%d,%d] = %g, reference GEMM %g: difference %g over the bound %g", ri[a], cj[b], res.Y.Data[ri[a]*n+cj[b]], y.Data[a*s+b], d, bound)
			}
			if bound > 0 {
				worst = max(worst, d/bound)
			}
		}
	}
	return worst, nil
}
