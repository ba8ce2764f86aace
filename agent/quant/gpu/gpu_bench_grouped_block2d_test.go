//go:build gpu

package gpu

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/kquant/kquant/agent/bench"
	"github.com/kquant/kquant/agent/quant"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/kernels"
)

// TestBenchmarkGroupedBlock2D measures, through Measure, the 64-group block
// FP8 128x128 weight step at 16384x8192 BF16 (uniform splits of 256 rows)
// with both operands: on kernels.GroupedBlock2D, as before it
// (perGroupBlock2D: one launch per group) and the ungrouped step of the
// same tensor. Runs only with KQUANT_BENCH=1.
func TestBenchmarkGroupedBlock2D(t *testing.T) {
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
	opts := bench.MeasureOptions{Mode: v1alpha1.JobModeBenchmark, Graphs: v1alpha1.GraphModeBoth, Warmup: 5, Iterations: 30}
	const rows, cols, groups = 16384, 8192, 64
	x := makeInput(shape{rows, cols}, kernels.BF16, false, 45)
	splits := make([]int, groups)
	for i := range splits {
		splits[i] = rows / groups
	}
	r := quant.DefaultRecipe(quant.Float8BlockScaling)
	fmt.Printf("%-12s %-26s %4s %9s %7s %6s %7s %9s %9s %8s %s\n", "shape", "step", "krn", "gpu-us", "GB", "GB/s", "ofcopy", "eager-us", "graph-us", "eager/kL", "replay")
	for _, tc := range []struct {
		name     string
		op       v1alpha1.Operation
		perGroup bool
	}{
		{"block 128x128 ungrouped", v1alpha1.OperationQuantize, false},
		{"grouped block 128x128", v1alpha1.OperationGroupedQuantize, false},
		{"grouped 128x128 (fallbk)", v1alpha1.OperationGroupedQuantize, true},
	} {
		req := quant.Request{Recipe: r, Role: quant.Weight, Usage: quant.UsageBoth, Seed: 9}
		st := bench.Step{Operation: tc.op, Request: req, X: x}
		if tc.op == v1alpha1.OperationGroupedQuantize {
			st.Splits = splits
		}
		gb.perGroupBlock2D = tc.perGroup
		m, err := gb.Measure(ctx, st, opts)
		gb.perGroupBlock2D = false
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		printRow("16384x8192", tc.name, m, launch)
		if tc.op == v1alpha1.OperationGroupedQuantize {
			path := GroupedPath(mustPlan(t, r, quant.Weight), quant.UsageBoth)
			if tc.perGroup {
				path = "block 128x128 before: one launch per group (perGroupBlock2D)"
			}
			fmt.Printf("    %s; split-size payload %.2f us\n", path, m.PointerLoadMicros)
		}
	}
}
