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

// TestBenchmarkGroupedNVFP4 measures, through Measure, the 64-group NVFP4
// step at 16384x8192 BF16 (uniform splits of 256 rows) with both operands:
// the gradient role (columnwise RHT, stochastic rounding) and 16x16
// weights, on the grouped kernels (kernels.GroupedNVFP4, GroupedNVFP4TwoD)
// and as before them (perGroupNVFP4: the rowwise operand grouped, the
// columnwise operand and 2D weights one group at a time), next to the
// ungrouped step of the same tensor. Runs only with KQUANT_BENCH=1.
func TestBenchmarkGroupedNVFP4(t *testing.T) {
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
	x := makeInput(shape{rows, cols}, kernels.BF16, false, 44)
	splits := make([]int, groups)
	for i := range splits {
		splits[i] = rows / groups
	}
	nv := quant.DefaultRecipe(quant.NVFP4BlockScaling)
	fmt.Printf("%-12s %-26s %4s %9s %7s %6s %7s %9s %9s %8s %s\n", "shape", "step", "krn", "gpu-us", "GB", "GB/s", "ofcopy", "eager-us", "graph-us", "eager/kL", "replay")
	for _, tc := range []struct {
		name     string
		role     quant.TensorRole
		op       v1alpha1.Operation
		perGroup bool
	}{
		{"nvfp4 grad ungrouped", quant.Gradient, v1alpha1.OperationQuantize, false},
		{"grouped nvfp4 grad", quant.Gradient, v1alpha1.OperationGroupedQuantize, false},
		{"grouped nvfp4 grad (fallbk)", quant.Gradient, v1alpha1.OperationGroupedQuantize, true},
		{"nvfp4 weight 2D ungrouped", quant.Weight, v1alpha1.OperationQuantize, false},
		{"grouped nvfp4 2D", quant.Weight, v1alpha1.OperationGroupedQuantize, false},
		{"grouped nvfp4 2D (fallbk)", quant.Weight, v1alpha1.OperationGroupedQuantize, true},
	} {
		req := quant.Request{Recipe: nv, Role: tc.role, Usage: quant.UsageBoth, Seed: 9}
		st := bench.Step{Operation: tc.op, Request: req, X: x}
		if tc.op == v1alpha1.OperationGroupedQuantize {
			st.Splits = splits
		}
		gb.perGroupNVFP4 = tc.perGroup
		m, err := gb.Measure(ctx, st, opts)
		gb.perGroupNVFP4 = false
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		printRow("16384x8192", tc.name, m, launch)
		if tc.op == v1alpha1.OperationGroupedQuantize {
			path := GroupedPath(mustPlan(t, nv, tc.role), quant.UsageBoth)
			if tc.perGroup {
				path = "NVFP4 before: 1D rowwise grouped, columnwise and 2D one launch sequence per group (perGroupNVFP4)"
			}
			fmt.Printf("    %s; split-size payload %.2f us\n", path, m.PointerLoadMicros)
		}
	}
}
