// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant/reference"
)

func TestRunEverySchemeAndOperation(t *testing.T) {
	ops := []v1alpha1.Operation{v1alpha1.OperationQuantize, v1alpha1.OperationGroupedQuantize, v1alpha1.OperationQuantizedLinear}
	for _, scheme := range v1alpha1.Schemes {
		for _, op := range ops {
			t.Run(string(scheme)+"/"+string(op), func(t *testing.T) {
				shapes := []v1alpha1.Shape{shape(33, 17), shape(512, 64)}
				if op == v1alpha1.OperationGroupedQuantize {
					shapes = []v1alpha1.Shape{shape(512, 64)}
				}
				spec := testSpec(scheme, op, shapes...)
				spec.Tolerances.MinSNRdB = "5"
				rep, err := (&Engine{Backend: reference.New()}).Run(context.Background(), spec)
				if err != nil {
					t.Fatal(err)
				}
				res := rep.Results
				if res.Backend != "reference" || len(res.Shapes) != len(shapes) {
					t.Fatalf("backend %q, %d shapes", res.Backend, len(res.Shapes))
				}
				if res.Accuracy == nil || res.Accuracy.SNRdB == "" || res.Accuracy.BitExactVsReference != nil {
					t.Errorf("accuracy = %+v", res.Accuracy)
				}
				if res.Verdict != v1alpha1.VerdictPass && res.Verdict != v1alpha1.VerdictWarn {
					t.Errorf("verdict %s (%s): %s", res.Verdict, res.Reason, rep.Message)
				}
				// Validation mode on a backend that cannot time itself: no timing.
				if res.Overhead != nil || res.Performance != nil || res.Graph != nil {
					t.Errorf("timing in validation mode: %+v %+v %+v", res.Overhead, res.Performance, res.Graph)
				}
			})
		}
	}
}

func TestRunIsDeterministicForASeed(t *testing.T) {
	for _, scheme := range v1alpha1.Schemes {
		t.Run(string(scheme), func(t *testing.T) {
			spec := testSpec(scheme, v1alpha1.OperationQuantize, shape(64, 96), shape(7, 300))
			spec.Workload.TensorRole = v1alpha1.TensorRoleGradient // stochastic rounding under NVFP4
			e := &Engine{Backend: reference.New()}
			a, err := e.Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			b, err := e.Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(a, b); diff != "" {
				t.Errorf("same seed, different results (-a +b):\n%s", diff)
			}
			spec.Workload.Seed = 2
			c, err := e.Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if a.Results.Accuracy.SNRdB == c.Results.Accuracy.SNRdB && a.Results.Accuracy.MaxAbsError == c.Results.Accuracy.MaxAbsError {
				t.Errorf("seeds 1 and 2 give the same accuracy %+v", a.Results.Accuracy)
			}
		})
	}
}

func TestBenchmarkModeTimesTheCPU(t *testing.T) {
	spec := testSpec(v1alpha1.SchemeMXFP8BlockScaling, v1alpha1.OperationQuantize, shape(32, 64), shape(128, 128))
	spec.Mode = v1alpha1.JobModeBenchmark
	clock := &stepClock{t: time.Unix(0, 0), d: 250 * time.Microsecond}
	var timing []Progress
	e := &Engine{Backend: reference.New(), Now: clock.Now, Progress: func(p Progress) {
		if p.Stage == StageTiming && p.Steps > 0 {
			timing = append(timing, p)
		}
	}}
	rep, err := e.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	// Every step reads the clock twice: 250 µs per step.
	want := &v1alpha1.Overhead{HostEagerMicros: "250.000"}
	if diff := cmp.Diff(want, rep.Results.Overhead); diff != "" {
		t.Errorf("overhead (-want +got):\n%s", diff)
	}
	if rep.Results.Performance != nil {
		t.Errorf("reference backend reports GPU performance %+v", rep.Results.Performance)
	}
	// Warmup 1 + iterations 2, for each of two shapes.
	if len(timing) != 6 || timing[5].Step != 3 || timing[5].Steps != 3 || timing[5].Shape != 1 {
		t.Errorf("timing progress = %+v", timing)
	}
}

func TestMeasurerFillsGPUFields(t *testing.T) {
	fb := &fakeBackend{measure: &measure.Measurement{
		HostEagerMicros: 12.5, HostGraphMicros: 3.25, KernelsPerStep: 4,
		GPUMicros: 100, BytesMoved: 300_000_000, CopyBandwidthGBps: 4000, PeakBandwidthGBps: 4800,
		Graph: &measure.GraphOutcome{Capturable: true, ReplayMatchesEager: true},
	}}
	mb := measuringBackend{fb}
	spec := testSpec(v1alpha1.SchemeMXFP8BlockScaling, v1alpha1.OperationQuantize, shape(64, 64), shape(256, 128))
	spec.Mode = v1alpha1.JobModeBenchmark
	spec.Tolerances.RequireBitExact = true
	rep, err := (&Engine{Backend: mb}).Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Results
	wantOverhead := &v1alpha1.Overhead{HostEagerMicros: "12.500", HostGraphMicros: "3.250", KernelsPerStep: 4}
	wantPerf := &v1alpha1.Performance{GPUMicros: "100.000", BandwidthGBps: "3000.0", FractionOfCopyBandwidth: "0.750", FractionOfPeakBandwidth: "0.625"}
	if diff := cmp.Diff(wantOverhead, res.Overhead); diff != "" {
		t.Errorf("overhead (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantPerf, res.Performance); diff != "" {
		t.Errorf("performance (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&v1alpha1.GraphResult{Capturable: true, ReplayMatchesEager: true}, res.Graph); diff != "" {
		t.Errorf("graph (-want +got):\n%s", diff)
	}
	if res.Accuracy.BitExactVsReference == nil || !*res.Accuracy.BitExactVsReference {
		t.Errorf("bitExactVsReference = %v, want true", res.Accuracy.BitExactVsReference)
	}
	if res.Verdict != v1alpha1.VerdictPass {
		t.Errorf("verdict %s %s", res.Verdict, res.Reason)
	}
	if len(fb.measured) != 2 || fb.measured[1].Tensors()[0].X.Rows != 256 {
		t.Errorf("Measure got %d steps", len(fb.measured))
	}
}

func TestNotBitExact(t *testing.T) {
	for _, require := range []bool{false, true} {
		spec := testSpec(v1alpha1.SchemeFloat8CurrentScaling, v1alpha1.OperationQuantize, shape(16, 16))
		spec.Tolerances.RequireBitExact = require
		rep, err := (&Engine{Backend: &fakeBackend{corrupt: true}}).Run(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		want := v1alpha1.VerdictWarn
		if require {
			want = v1alpha1.VerdictFail
		}
		if got := rep.Results; got.Verdict != want || got.Reason != v1alpha1.VerdictReasonNotBitExact || *got.Accuracy.BitExactVsReference {
			t.Errorf("requireBitExact %v: verdict %s %s, bitExact %v", require, got.Verdict, got.Reason, *got.Accuracy.BitExactVsReference)
		}
	}
}

type observerFunc func(context.Context, *ShapeArtifacts) error

func (f observerFunc) ObserveShape(ctx context.Context, a *ShapeArtifacts) error { return f(ctx, a) }

func TestSNRBelowTolerance(t *testing.T) {
	spec := testSpec(v1alpha1.SchemeNVFP4BlockScaling, v1alpha1.OperationQuantize, shape(64, 64))
	spec.Tolerances.MinSNRdB = "60"
	rep, err := (&Engine{Backend: reference.New()}).Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Results.Verdict != v1alpha1.VerdictFail || rep.Results.Reason != v1alpha1.VerdictReasonSNRBelowTolerance {
		t.Errorf("verdict %s %s", rep.Results.Verdict, rep.Results.Reason)
	}
	if !strings.Contains(rep.Message, "below the tolerance of 60 dB") {
		t.Errorf("message %q", rep.Message)
	}
}

func TestTooLargeShapesAreRefusedBeforeAllocating(t *testing.T) {
	cases := map[string]Spec{
		"quantize": testSpec(v1alpha1.SchemeMXFP8BlockScaling, v1alpha1.OperationQuantize, shape(1, 1), shape(1<<20, 1<<20)),
		"linear weight": func() Spec {
			s := testSpec(v1alpha1.SchemeMXFP8BlockScaling, v1alpha1.OperationQuantizedLinear, shape(16, 1<<20))
			s.Workload.Shapes[0].OutFeatures = ptr[int64](1 << 20)
			return s
		}(),
		"linear macs": testSpec(v1alpha1.SchemeMXFP8BlockScaling, v1alpha1.OperationQuantizedLinear, shape(1<<14, 1<<14)),
	}
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			observed := false
			obs := observerFunc(func(context.Context, *ShapeArtifacts) error { observed = true; return nil })
			_, err := (&Engine{Backend: reference.New(), Observer: obs}).Run(context.Background(), spec)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			if observed {
				t.Error("a shape ran before the limits were checked")
			}
		})
	}
}

func TestCancelledContextStopsTheRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	spec := testSpec(v1alpha1.SchemeMXFP8BlockScaling, v1alpha1.OperationQuantize, shape(32, 32), shape(64, 64))
	spec.Mode = v1alpha1.JobModeBenchmark
	e := &Engine{Backend: reference.New(), Progress: func(p Progress) {
		if p.Stage == StageTiming && p.Step == 1 {
			cancel()
		}
	}}
	_, err := e.Run(ctx, spec)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestInvalidSpecsNameTheField(t *testing.T) {
	cases := []struct {
		name      string
		mutate    func(*Spec)
		wantField string
	}{
		{"bad scheme", func(s *Spec) { s.Recipe.Scheme = "FP8" }, "spec.scheme"},
		{"E5M2", func(s *Spec) { s.Recipe.Format = v1alpha1.FormatE5M2 }, "spec.format"},
		{"options of another scheme", func(s *Spec) { s.Recipe.NVFP4 = &v1alpha1.NVFP4Options{} }, "spec.nvfp4"},
		{"no shapes", func(s *Spec) { s.Workload.Shapes = nil }, "spec.workload.shapes"},
		{"zero rows", func(s *Spec) { s.Workload.Shapes[0].Rows = 0 }, "spec.workload.shapes[0].rows"},
		{"groups without grouped", func(s *Spec) { s.Workload.Groups = &v1alpha1.Groups{Count: 1} }, "spec.workload.groups"},
		{"outFeatures on quantize", func(s *Spec) { s.Workload.Shapes[0].OutFeatures = ptr[int64](3) }, "spec.workload.shapes[0].outFeatures"},
		{"bad dtype", func(s *Spec) { s.Workload.InputDType = "FP8" }, "spec.workload.inputDType"},
		{"bad tolerance", func(s *Spec) { s.Tolerances.MinSNRdB = "-3" }, "spec.tolerances.minSNRdB"},
		{"tolerance too high", func(s *Spec) { s.Tolerances.MinSNRdB = "250" }, "spec.tolerances.minSNRdB"},
		{"zero iterations", func(s *Spec) { s.Execution.Iterations = ptr[int32](0) }, "spec.execution.iterations"},
		{"history too long", func(s *Spec) {
			s.Recipe = v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeDelayedScaling, DelayedScaling: &v1alpha1.DelayedScalingOptions{AmaxHistoryLen: ptr[int32](70000)}}
		}, "spec.delayedScaling.amaxHistoryLen"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := testSpec(v1alpha1.SchemeMXFP8BlockScaling, v1alpha1.OperationQuantize, shape(4, 4))
			tc.mutate(&spec)
			_, err := (&Engine{Backend: reference.New()}).Run(context.Background(), spec)
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("err = %v, want ErrInvalidSpec", err)
			}
			if !strings.Contains(err.Error(), tc.wantField+":") {
				t.Errorf("error %q does not name %s", err, tc.wantField)
			}
		})
	}
}

func TestExplicitSizesMustAddUpToRows(t *testing.T) {
	spec := testSpec(v1alpha1.SchemeMXFP8BlockScaling, v1alpha1.OperationGroupedQuantize, shape(128, 64))
	spec.Workload.Groups = &v1alpha1.Groups{Count: 2, Splits: v1alpha1.SplitExplicit, Sizes: []int64{64, 32}}
	_, err := (&Engine{Backend: reference.New()}).Run(context.Background(), spec)
	if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "spec.workload.groups.sizes") {
		t.Errorf("err = %v", err)
	}
}

func TestSaturatedCountsFollowTheContract(t *testing.T) {
	// The contract's rule (v2): an element is saturated when |x × scale| is
	// so far above the format's max that the conversion clamps it. TE
	// rounding never gets there; OCP rounding does for blocks whose amax
	// significand exceeds 1.8125 (464/256); NVFP4's block maxima land in
	// (6, 7) when their E4M3 block scale rounded down, which rounds to 6
	// without clamping: not counted.
	cases := []struct {
		name          string
		recipe        v1alpha1.QuantRecipeSpec
		wantSaturated bool
	}{
		{"mxfp8 TE", v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeMXFP8BlockScaling}, false},
		{"mxfp8 OCP", v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeMXFP8BlockScaling, MXFP8: &v1alpha1.MXFP8Options{ScaleRounding: v1alpha1.ScaleRoundingOCP}}, true},
		{"nvfp4", v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeNVFP4BlockScaling}, false},
		{"current scaling", v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeFloat8CurrentScaling}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, op := range []v1alpha1.Operation{v1alpha1.OperationQuantize, v1alpha1.OperationGroupedQuantize} {
				spec := testSpec(tc.recipe.Scheme, op, shape(512, 256))
				spec.Recipe = tc.recipe
				rep, err := (&Engine{Backend: reference.New()}).Run(context.Background(), spec)
				if err != nil {
					t.Fatal(err)
				}
				got := rep.Results.Accuracy.Saturated > 0
				if got != tc.wantSaturated {
					t.Errorf("%s: saturated = %d, verdict %s", op, rep.Results.Accuracy.Saturated, rep.Results.Verdict)
				}
				if got && (rep.Results.Verdict != v1alpha1.VerdictWarn || rep.Results.Reason != v1alpha1.VerdictReasonSaturated) {
					t.Errorf("%s: verdict %s %s, want Warn Saturated", op, rep.Results.Verdict, rep.Results.Reason)
				}
			}
		})
	}
}

func TestUsageSelectsTheOperands(t *testing.T) {
	ops := []v1alpha1.Operation{v1alpha1.OperationQuantize, v1alpha1.OperationGroupedQuantize}
	for _, scheme := range v1alpha1.Schemes {
		for _, op := range ops {
			for _, usage := range []v1alpha1.Usage{v1alpha1.UsageRowwise, v1alpha1.UsageColumnwise} {
				t.Run(string(scheme)+"/"+string(op)+"/"+string(usage), func(t *testing.T) {
					spec := testSpec(scheme, op, shape(512, 64))
					spec.Workload.Usage = usage
					spec.Tolerances.MinSNRdB = "5"
					var arts *ShapeArtifacts
					obs := observerFunc(func(_ context.Context, a *ShapeArtifacts) error { arts = a; return nil })
					rep, err := (&Engine{Backend: reference.New(), Observer: obs}).Run(context.Background(), spec)
					if err != nil {
						t.Fatal(err)
					}
					if v := rep.Results.Verdict; v != v1alpha1.VerdictPass && v != v1alpha1.VerdictWarn {
						t.Errorf("verdict %s (%s): %s", v, rep.Results.Reason, rep.Message)
					}
					wantRow := usage == v1alpha1.UsageRowwise
					for _, ta := range arts.Tensors {
						if gotRow, gotCol := ta.Result.Rowwise != nil, ta.Result.Columnwise != nil; gotRow != wantRow || gotCol == wantRow {
							t.Errorf("%s: rowwise %v, columnwise %v; want only the %s operand", ta.Name, gotRow, gotCol, usage)
						}
					}
				})
			}
		}
	}
}
