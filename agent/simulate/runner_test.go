// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package simulate

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/capability"
)

func gpuOf(product string, cc capability.Version) v1alpha1.GPU {
	return v1alpha1.GPU{
		UUID: "GPU-1", Product: product, ComputeCapability: cc.String(),
		Architecture: capability.Architecture(cc), Recipes: capability.ForGPU(cc, capability.V(13, 0)),
	}
}

func runOf(scheme v1alpha1.Scheme, shapes ...v1alpha1.Shape) *v1alpha1.QuantRun {
	return &v1alpha1.QuantRun{Spec: v1alpha1.QuantRunSpec{
		Recipe:    v1alpha1.RecipeSnapshot{Name: "r", Spec: v1alpha1.QuantRecipeSpec{Scheme: scheme, Format: v1alpha1.FormatE4M3}},
		Workload:  v1alpha1.Workload{Operation: v1alpha1.OperationQuantize, Shapes: shapes, InputDType: v1alpha1.DTypeBF16},
		Execution: v1alpha1.Execution{Graphs: v1alpha1.GraphModeBoth},
	}}
}

func TestResults(t *testing.T) {
	h100 := gpuOf("NVIDIA H100 80GB HBM3", capability.V(9, 0))
	b200 := gpuOf("NVIDIA B200", capability.V(10, 0))
	volta := gpuOf("Tesla V100", capability.V(7, 0))
	cases := []struct {
		name        string
		run         *v1alpha1.QuantRun
		gpu         v1alpha1.GPU
		wantVerdict v1alpha1.Verdict
		wantReason  string
		wantNative  bool
		wantEmul    bool
	}{
		{name: "MXFP8 on Hopper is emulated and passes", run: runOf(v1alpha1.SchemeMXFP8BlockScaling, v1alpha1.Shape{Rows: 4096, Cols: 4096}),
			gpu: h100, wantVerdict: v1alpha1.VerdictPass, wantReason: v1alpha1.VerdictReasonPass, wantEmul: true},
		{name: "MXFP8 on B200 is native", run: runOf(v1alpha1.SchemeMXFP8BlockScaling, v1alpha1.Shape{Rows: 4096, Cols: 4096}),
			gpu: b200, wantVerdict: v1alpha1.VerdictPass, wantReason: v1alpha1.VerdictReasonPass, wantNative: true},
		{name: "anything on Volta is skipped", run: runOf(v1alpha1.SchemeDelayedScaling, v1alpha1.Shape{Rows: 128, Cols: 128}),
			gpu: volta, wantVerdict: v1alpha1.VerdictSkip, wantReason: v1alpha1.VerdictReasonRecipeUnsupported},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Results(tc.run, tc.gpu)
			if got.Verdict != tc.wantVerdict || got.Reason != tc.wantReason {
				t.Errorf("verdict %s %s, want %s %s", got.Verdict, got.Reason, tc.wantVerdict, tc.wantReason)
			}
			if got.Capability.Native != tc.wantNative || got.Capability.Emulated != tc.wantEmul {
				t.Errorf("capability %+v", got.Capability)
			}
			if diff := cmp.Diff(got, Results(tc.run, tc.gpu)); diff != "" {
				t.Errorf("not deterministic:\n%s", diff)
			}
		})
	}
}

func TestResultsHeadlineIsLargestShapeAndWorstAccuracy(t *testing.T) {
	run := runOf(v1alpha1.SchemeNVFP4BlockScaling,
		v1alpha1.Shape{Rows: 8192, Cols: 8192}, v1alpha1.Shape{Rows: 128, Cols: 256})
	run.Spec.Tolerances.MinSNRdB = "25"
	got := Results(run, gpuOf("NVIDIA B200", capability.V(10, 0)))
	if len(got.Shapes) != 2 {
		t.Fatalf("%d shapes, want 2", len(got.Shapes))
	}
	if got.Performance != got.Shapes[0].Performance {
		t.Errorf("headline performance is not the largest shape's")
	}
	if got.Verdict != v1alpha1.VerdictFail || got.Reason != v1alpha1.VerdictReasonSNRBelowTolerance {
		t.Errorf("NVFP4 at 25 dB: verdict %s %s, want Fail SNRBelowTolerance", got.Verdict, got.Reason)
	}
	if got.Graph == nil || !got.Graph.ReplayMatchesEager || got.Overhead.HostGraphMicros == "" {
		t.Errorf("graph results missing: %+v %+v", got.Graph, got.Overhead)
	}
	// The large shape reaches most of the B200's copy bandwidth; the small one
	// is dominated by launch floors.
	if got.Shapes[0].Performance.FractionOfCopyBandwidth < "0.8" || got.Shapes[1].Performance.FractionOfCopyBandwidth > "0.5" {
		t.Errorf("fractions %s, %s", got.Shapes[0].Performance.FractionOfCopyBandwidth, got.Shapes[1].Performance.FractionOfCopyBandwidth)
	}
}

func TestRunnerHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Runner{Delay: time.Hour}.Run(ctx, runOf(v1alpha1.SchemeDelayedScaling, v1alpha1.Shape{Rows: 1, Cols: 1}), v1alpha1.GPU{})
	if err == nil {
		t.Fatal("a cancelled run returned results")
	}
}
