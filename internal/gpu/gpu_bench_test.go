// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package gpu

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"testing"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/kernels"
)

// TestBenchmarkTable measures each recipe's whole step (both operands,
// BF16 input, delayed scaling with its device update) through Measure, the
// path kquantctl and the agent take, at 8192x8192 and 16384x16384, and
// prints the baselines and one table row per step. It runs only with
// KQUANT_BENCH=1.
func TestBenchmarkTable(t *testing.T) {
	if os.Getenv("KQUANT_BENCH") != "1" {
		t.Skip("set KQUANT_BENCH=1 to measure")
	}
	ctx := context.Background()
	bl, err := gb.Baselines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("baselines: launch %.2f us, 1-node graph launch %.2f us, copy bandwidth %.0f GB/s (read+write), memory peak %.0f GB/s\n",
		bl.Launch.Seconds()*1e6, bl.GraphLaunch.Seconds()*1e6, bl.CopyBandwidthGBps, bl.PeakBandwidthGBps)
	fmt.Printf("%-12s %-22s %4s %9s %8s %8s %7s %9s %9s %6s %s\n", "shape", "recipe", "krn", "gpu-us", "GB", "GB/s", "ofcopy", "eager-us", "graph-us", "copyGB", "replay")
	for _, sh := range []shape{{8192, 8192}, {16384, 16384}} {
		x := makeInput(sh, kernels.BF16, false, 42)
		for _, s := range []quant.Scheme{quant.Float8CurrentScaling, quant.DelayedScaling, quant.MXFP8BlockScaling} {
			req := quant.Request{Recipe: quant.DefaultRecipe(s), Role: quant.Input, Usage: quant.UsageBoth}
			m, err := gb.Measure(ctx, benchQuantize(ctx, t, req, x), measure.Options{Mode: v1alpha1.JobModeBenchmark, Graphs: v1alpha1.GraphModeBoth, Warmup: 5, Iterations: 30})
			if err != nil {
				t.Fatalf("%v %s: %v", sh, s, err)
			}
			bw := float64(m.BytesMoved) / m.GPUMicros / 1e3
			fmt.Printf("%-12v %-22s %4d %9.1f %8.3f %8.0f %6.1f%% %9.2f %9.2f %6.0f %v/%v\n", sh, s, m.KernelsPerStep, m.GPUMicros,
				float64(m.BytesMoved)/1e9, bw, 100*bw/m.CopyBandwidthGBps, m.HostEagerMicros, m.HostGraphMicros, m.CopyBandwidthGBps,
				m.Graph.Capturable, m.Graph.ReplayMatchesEager)
		}
	}
}

// benchQuantize is the measured step of quantizing x; under delayed
// scaling it starts from a state calibrated on x (one quantize and one
// update), as after a training step on the same data.
func benchQuantize(ctx context.Context, t *testing.T, req quant.Request, x quant.Tensor) measure.Quantize {
	step := measure.Quantize{Request: req, X: x}
	if req.Recipe.Scheme != quant.DelayedScaling {
		return step
	}
	st := quant.NewState(req.Recipe)
	req.State = st
	if _, err := gb.Quantize(ctx, req, x); err != nil {
		t.Fatal(err)
	}
	if err := st.Update(req.Recipe, req.Role); err != nil {
		t.Fatal(err)
	}
	step.State = st
	return step
}

// TestBenchmarkUsage measures every recipe and role by usage (both
// operands, rowwise only, columnwise only) through Measure, the path
// kquantctl and the agent take, at 8192^2 and 16384^2 with BF16 input:
// the step's bytes (only those of the operands it produces) and their
// fraction of the device-to-device copy bandwidth of the same run and of the
// memory's theoretical peak.
// Delayed scaling includes its device update. Runs only with
// KQUANT_BENCH=1.
func TestBenchmarkUsage(t *testing.T) {
	if os.Getenv("KQUANT_BENCH") != "1" {
		t.Skip("set KQUANT_BENCH=1 to measure")
	}
	ctx := context.Background()
	type rc struct {
		name string
		s    quant.Scheme
		role quant.TensorRole
	}
	cases := []rc{
		{"fp8 current", quant.Float8CurrentScaling, quant.Input},
		{"fp8 delayed", quant.DelayedScaling, quant.Input},
		{"block 1x128 input", quant.Float8BlockScaling, quant.Input},
		{"block 128x128 weight", quant.Float8BlockScaling, quant.Weight},
		{"mxfp8 input", quant.MXFP8BlockScaling, quant.Input},
		{"mxfp8 32x32 weight", quant.MXFP8BlockScaling, quant.Weight},
		{"nvfp4 input (RHT)", quant.NVFP4BlockScaling, quant.Input},
		{"nvfp4 16x16 weight", quant.NVFP4BlockScaling, quant.Weight},
		{"nvfp4 grad (RHT+SR)", quant.NVFP4BlockScaling, quant.Gradient},
	}
	usages := []struct {
		name string
		u    quant.Usage
	}{{"both", quant.UsageBoth}, {"rowwise", quant.UsageRowwise}, {"columnwise", quant.UsageColumnwise}}
	// KQUANT_BENCH_ONLY, a regular expression, keeps the recipes whose name
	// matches (a short device call measuring one kernel family).
	only, err := regexp.Compile(os.Getenv("KQUANT_BENCH_ONLY"))
	if err != nil {
		t.Fatalf("KQUANT_BENCH_ONLY: %v", err)
	}
	fmt.Printf("%-12s %-22s %-10s %4s %9s %7s %6s %7s %6s %7s %s\n", "shape", "recipe", "usage", "krn", "gpu-us", "GB", "copyGB", "ofcopy", "peakGB", "ofpeak", "replay")
	for _, sh := range []shape{{8192, 8192}, {16384, 16384}} {
		x := makeInput(sh, kernels.BF16, false, 42)
		for _, c := range cases {
			if !only.MatchString(c.name) {
				continue
			}
			r := quant.DefaultRecipe(c.s)
			if c.s == quant.MXFP8BlockScaling && c.role == quant.Weight {
				r.MXFP8.TwoDimensionalWeights = true
			}
			for _, u := range usages {
				req := quant.Request{Recipe: r, Role: c.role, Usage: u.u, Seed: 9}
				m, err := gb.Measure(ctx, benchQuantize(ctx, t, req, x), measure.Options{Mode: v1alpha1.JobModeBenchmark, Graphs: v1alpha1.GraphModeBoth, Warmup: 5, Iterations: 30})
				if err != nil {
					t.Fatalf("%v %s %s: %v", sh, c.name, u.name, err)
				}
				bw := float64(m.BytesMoved) / m.GPUMicros / 1e3
				fmt.Printf("%-12v %-22s %-10s %4d %9.1f %7.3f %6.0f %6.1f%% %6.0f %6.1f%% %v/%v\n", sh, c.name, u.name, m.KernelsPerStep, m.GPUMicros,
					float64(m.BytesMoved)/1e9, m.CopyBandwidthGBps, 100*bw/m.CopyBandwidthGBps, m.PeakBandwidthGBps, 100*bw/m.PeakBandwidthGBps,
					m.Graph.Capturable, m.Graph.ReplayMatchesEager)
			}
		}
	}
}

// TestBenchmarkMXFP8 measures the MXFP8 step with both operands (BF16
// input, TE rounding) through Measure, fused (one kernel, one read of the
// input) and through the two one-operand kernels, at 8192^2, 16384x8192 and
// 16384^2, plus the rowwise-only step at 8192^2. "ofcopy" divides the bytes
// the step counts (the two-kernel path counts the input twice); "min-ofcopy"
// divides the least traffic of both operands (input once, both outputs and
// scales once) by the same time, so the two paths compare directly. Runs
// only with KQUANT_BENCH=1.
func TestBenchmarkMXFP8(t *testing.T) {
	if os.Getenv("KQUANT_BENCH") != "1" {
		t.Skip("set KQUANT_BENCH=1 to measure")
	}
	ctx := context.Background()
	fmt.Printf("%-12s %-10s %4s %9s %8s %8s %7s %10s %9s %9s %6s %s\n", "shape", "mxfp8", "krn", "gpu-us", "GB", "GB/s", "ofcopy", "min-ofcopy", "eager-us", "graph-us", "copyGB", "replay")
	r := quant.DefaultRecipe(quant.MXFP8BlockScaling)
	for _, sh := range []shape{{8192, 8192}, {16384, 8192}, {16384, 16384}} {
		x := makeInput(sh, kernels.BF16, false, 42)
		n := int64(sh.rows) * int64(sh.cols)
		rr, rc := kernels.MXFP8ScaleShape(sh.rows, sh.cols, false)
		cr, cc := kernels.MXFP8ScaleShape(sh.rows, sh.cols, true)
		minBoth := 2*n + 2*n + int64(rr*rc+cr*cc)
		type variant struct {
			name  string
			usage quant.Usage
			fuse  bool
		}
		vs := []variant{{"both-fused", quant.UsageBoth, true}, {"both-2krn", quant.UsageBoth, false}}
		if sh.rows == 8192 {
			vs = append(vs, variant{"rowwise", quant.UsageRowwise, true})
		}
		for _, v := range vs {
			req := quant.Request{Recipe: r, Role: quant.Input, Usage: v.usage}
			var step measure.Step = measure.Quantize{Request: req, X: x}
			if !v.fuse {
				// The two one-operand kernels (operandsApart), as before
				// the fused kernel.
				step = operandsApart{measure.Quantize{Request: req, X: x}}
			}
			m, err := gb.Measure(ctx, step,
				measure.Options{Mode: v1alpha1.JobModeBenchmark, Graphs: v1alpha1.GraphModeBoth, Warmup: 10, Iterations: 50})
			if err != nil {
				t.Fatalf("%v %s: %v", sh, v.name, err)
			}
			bw := float64(m.BytesMoved) / m.GPUMicros / 1e3
			minFrac := "-"
			if v.usage == quant.UsageBoth {
				minFrac = fmt.Sprintf("%.1f%%", 100*float64(minBoth)/m.GPUMicros/1e3/m.CopyBandwidthGBps)
			}
			fmt.Printf("%-12v %-10s %4d %9.1f %8.3f %8.0f %6.1f%% %10s %9.2f %9.2f %6.0f %v/%v\n", sh, v.name, m.KernelsPerStep, m.GPUMicros,
				float64(m.BytesMoved)/1e9, bw, 100*bw/m.CopyBandwidthGBps, minFrac, m.HostEagerMicros, m.HostGraphMicros, m.CopyBandwidthGBps,
				m.Graph.Capturable, m.Graph.ReplayMatchesEager)
		}
	}
}
