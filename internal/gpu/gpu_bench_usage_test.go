//go:build gpu

package gpu

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/kernels"
)

// TestBenchmarkUsage measures every recipe and role by usage (both
// operands, rowwise only, columnwise only) through Measure, the path
// kquantctl and the agent take, at 8192^2 and 16384^2 with BF16 input:
// the step's bytes (only those of the operands it produces) and their
// fraction of the device-to-device copy bandwidth of the same run.
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
	fmt.Printf("%-12s %-22s %-10s %4s %9s %7s %6s %7s %s\n", "shape", "recipe", "usage", "krn", "gpu-us", "GB", "copyGB", "ofcopy", "replay")
	for _, sh := range []shape{{8192, 8192}, {16384, 16384}} {
		x := makeInput(sh, kernels.BF16, false, 42)
		for _, c := range cases {
			r := quant.DefaultRecipe(c.s)
			if c.s == quant.MXFP8BlockScaling && c.role == quant.Weight {
				r.MXFP8.TwoDimensionalWeights = true
			}
			for _, u := range usages {
				req := quant.Request{Recipe: r, Role: c.role, Usage: u.u, Seed: 9}
				step := measure.Quantize{Request: req, X: x}
				if c.s == quant.DelayedScaling {
					st := quant.NewState(r)
					req.State = st
					if _, err := gb.Quantize(ctx, req, x); err != nil {
						t.Fatal(err)
					}
					if err := st.Update(r, c.role); err != nil {
						t.Fatal(err)
					}
					step.State = st
				}
				m, err := gb.Measure(ctx, step, measure.Options{Mode: v1alpha1.JobModeBenchmark, Graphs: v1alpha1.GraphModeBoth, Warmup: 5, Iterations: 30})
				if err != nil {
					t.Fatalf("%v %s %s: %v", sh, c.name, u.name, err)
				}
				bw := float64(m.BytesMoved) / m.GPUMicros / 1e3
				fmt.Printf("%-12v %-22s %-10s %4d %9.1f %7.3f %6.0f %6.1f%% %v/%v\n", sh, c.name, u.name, m.KernelsPerStep, m.GPUMicros,
					float64(m.BytesMoved)/1e9, m.CopyBandwidthGBps, 100*bw/m.CopyBandwidthGBps, m.Graph.Capturable, m.Graph.ReplayMatchesEager)
			}
		}
	}
}
