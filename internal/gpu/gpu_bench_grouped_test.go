// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

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

// groupedBenchCase is one row of a grouped-step benchmark: req measured
// through Measure on the benchmark's tensor, split into its 64 groups or
// (ungrouped) whole, with states (cloned per row), and with perGroup one
// launch sequence per group (the path before the grouped kernels).
type groupedBenchCase struct {
	name     string
	req      quant.Request
	grouped  bool
	states   []*quant.State
	perGroup bool
	// path, for a grouped row, is printed under it: the grouped kernels'
	// sentence when empty, else this (the per-group path's description).
	path string
}

// benchGrouped measures cases on a 16384x8192 BF16 input of seed, split
// into 64 uniform groups of 256 rows, printing the baselines and a
// printRow line per case (with the grouped path and the split-size
// payload's host cost under each grouped row). Runs only with
// KQUANT_BENCH=1.
func benchGrouped(t *testing.T, seed uint64, cases []groupedBenchCase) {
	t.Helper()
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
	opts := measure.Options{Mode: v1alpha1.JobModeBenchmark, Graphs: v1alpha1.GraphModeBoth, Warmup: 5, Iterations: 30}
	const rows, cols, groups = 16384, 8192, 64
	x := makeInput(shape{rows, cols}, kernels.BF16, false, seed)
	splits := make([]int, groups)
	for i := range splits {
		splits[i] = rows / groups
	}
	fmt.Printf("%-12s %-34s %4s %9s %7s %6s %7s %9s %9s %8s %s\n", "shape", "step", "krn", "gpu-us", "GB", "GB/s", "ofcopy", "eager-us", "graph-us", "eager/kL", "replay")
	for _, tc := range cases {
		states := cloneAll(tc.states)
		var st measure.Step = measure.Quantize{Request: tc.req, X: x, State: at(states, 0)}
		if tc.grouped {
			g := measure.GroupedQuantize{Request: tc.req, X: x, Splits: splits, States: states}
			st = g
			if tc.perGroup {
				st = perGroup{g}
			}
		}
		m, err := gb.Measure(ctx, st, opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		printRow("16384x8192", tc.name, m, launch)
		if tc.grouped {
			path := tc.path
			if path == "" {
				path = string(tc.req.Recipe.Scheme) + ": grouped kernels, split sizes in device memory, launches independent of the group count"
			}
			fmt.Printf("    %s; split-size payload %.2f us\n", path, m.PointerLoadMicros)
		}
	}
}

// TestBenchmarkGroupedBlock2D: the 64-group block FP8 128x128 weight step
// with both operands on kernels.GroupedBlock2D, as before it (perGroup:
// one launch per group) and ungrouped.
func TestBenchmarkGroupedBlock2D(t *testing.T) {
	req := quant.Request{Recipe: quant.DefaultRecipe(quant.Float8BlockScaling), Role: quant.Weight, Usage: quant.UsageBoth, Seed: 9}
	benchGrouped(t, 45, []groupedBenchCase{
		{name: "block 128x128 ungrouped", req: req},
		{name: "grouped block 128x128", req: req, grouped: true},
		{name: "grouped 128x128 (fallbk)", req: req, grouped: true, perGroup: true,
			path: "block 128x128 before: one launch per group (perGroup)"},
	})
}

// TestBenchmarkGroupedNVFP4: the 64-group NVFP4 step with both operands,
// the gradient role (columnwise RHT, stochastic rounding) and 16x16
// weights, on the grouped kernels (kernels.GroupedNVFP4,
// GroupedNVFP4TwoD), one launch sequence per group (perGroup; before the
// grouped columnwise and 2D kernels only those ran per group, the 1D
// rowwise operand was already grouped) and ungrouped.
func TestBenchmarkGroupedNVFP4(t *testing.T) {
	const before = "NVFP4 per group: one launch sequence per group, both operands (perGroup)"
	nv := quant.DefaultRecipe(quant.NVFP4BlockScaling)
	grad := quant.Request{Recipe: nv, Role: quant.Gradient, Usage: quant.UsageBoth, Seed: 9}
	weight := quant.Request{Recipe: nv, Role: quant.Weight, Usage: quant.UsageBoth, Seed: 9}
	benchGrouped(t, 44, []groupedBenchCase{
		{name: "nvfp4 grad ungrouped", req: grad},
		{name: "grouped nvfp4 grad", req: grad, grouped: true},
		{name: "grouped nvfp4 grad (fallbk)", req: grad, grouped: true, perGroup: true, path: before},
		{name: "nvfp4 weight 2D ungrouped", req: weight},
		{name: "grouped nvfp4 2D", req: weight, grouped: true},
		{name: "grouped nvfp4 2D (fallbk)", req: weight, grouped: true, perGroup: true, path: before},
	})
}

// TestBenchmarkGroupedDelayed: the 64-group delayed-scaling step (amax
// history 1024, the step ending with every group's update, as Measure
// builds it) on kernels.GroupedDelayed, as before it (perGroup: two
// launches per group) and ungrouped, rowwise and with both operands.
func TestBenchmarkGroupedDelayed(t *testing.T) {
	r := quant.DefaultRecipe(quant.DelayedScaling)
	states := delayedStates(r, 64, 3)
	one := quant.NewState(r)
	one.Scale = 0.5
	var cases []groupedBenchCase
	for _, u := range []struct {
		name  string
		usage quant.Usage
	}{{"row", quant.UsageRowwise}, {"row+col", quant.UsageBoth}} {
		req := quant.Request{Recipe: r, Role: quant.Input, Usage: u.usage}
		cases = append(cases,
			groupedBenchCase{name: "grouped delayed " + u.name + " (kernel)", req: req, grouped: true, states: states},
			groupedBenchCase{name: "grouped delayed " + u.name + " (fallbk)", req: req, grouped: true, states: states,
				perGroup: true, path: "delayed scaling before: one launch sequence per group (perGroup)"},
			groupedBenchCase{name: "ungrouped delayed " + u.name, req: req, states: []*quant.State{one}})
	}
	benchGrouped(t, 44, cases)
}

// TestBenchmarkGroupedMXFP82D: the 64-group MXFP8 32x32 weight step (both
// operands, swizzled scales, group amaxes) on kernels.GroupedMXFP82D, the
// per-group path (perGroup: one MXFP82D launch per group) and ungrouped.
func TestBenchmarkGroupedMXFP82D(t *testing.T) {
	req := quant.Request{Recipe: mxfp82D(quant.ScaleRoundingTE), Role: quant.Weight, Usage: quant.UsageBoth}
	benchGrouped(t, 43, []groupedBenchCase{
		{name: "grouped 2D (kernel)", req: req, grouped: true},
		{name: "grouped 2D (per group)", req: req, grouped: true, perGroup: true,
			path: "MXFP8 32x32 before: one MXFP82D launch per group (perGroup)"},
		{name: "ungrouped 2D", req: req},
	})
}

func at(states []*quant.State, k int) *quant.State {
	if k < len(states) {
		return states[k]
	}
	return nil
}
