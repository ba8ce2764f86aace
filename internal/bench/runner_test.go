// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/reference"
)

func testRun(scheme v1alpha1.Scheme) *v1alpha1.QuantRun {
	spec := testSpec(scheme, v1alpha1.OperationQuantize, shape(64, 64))
	run := &v1alpha1.QuantRun{Spec: v1alpha1.QuantRunSpec{
		Recipe: v1alpha1.RecipeSnapshot{Name: "r", Spec: spec.Recipe},
		Mode:   spec.Mode, Workload: spec.Workload, Execution: spec.Execution,
	}}
	run.Name, run.Namespace = "run-1", "ns"
	return run
}

func TestRunnerRunsWithCapability(t *testing.T) {
	var gotGPU string
	r := &Runner{BackendFor: func(_ context.Context, gpu v1alpha1.GPU) (quant.Backend, error) {
		gotGPU = gpu.UUID
		return reference.New(), nil
	}}
	gpu := v1alpha1.GPU{UUID: "GPU-1", Recipes: []v1alpha1.RecipeSupport{
		{Scheme: v1alpha1.SchemeMXFP8BlockScaling, Support: v1alpha1.SupportEmulated, Reason: "Device compute capability 10.0 or higher required for MXFP8 execution."},
	}}
	res, err := r.Run(context.Background(), testRun(v1alpha1.SchemeMXFP8BlockScaling), gpu)
	if err != nil {
		t.Fatal(err)
	}
	if gotGPU != "GPU-1" {
		t.Errorf("backend asked for %q", gotGPU)
	}
	want := &v1alpha1.Capability{Emulated: true, Reason: "Device compute capability 10.0 or higher required for MXFP8 execution."}
	if diff := cmp.Diff(want, res.Capability); diff != "" {
		t.Errorf("capability (-want +got):\n%s", diff)
	}
	if res.Verdict != v1alpha1.VerdictPass || res.Accuracy == nil {
		t.Errorf("verdict %s, accuracy %+v", res.Verdict, res.Accuracy)
	}
}

func TestRunnerSkipsUnsupportedRecipes(t *testing.T) {
	r := &Runner{BackendFor: func(context.Context, v1alpha1.GPU) (quant.Backend, error) {
		t.Fatal("backend opened for an unsupported recipe")
		return nil, nil
	}}
	gpu := v1alpha1.GPU{UUID: "GPU-2", Recipes: []v1alpha1.RecipeSupport{
		{Scheme: v1alpha1.SchemeNVFP4BlockScaling, Support: v1alpha1.SupportUnsupported, Reason: "Device compute capability 10.0 or higher required for NVFP4 execution."},
	}}
	res, err := r.Run(context.Background(), testRun(v1alpha1.SchemeNVFP4BlockScaling), gpu)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != v1alpha1.VerdictSkip || res.Reason != v1alpha1.VerdictReasonRecipeUnsupported || res.Accuracy != nil {
		t.Errorf("results %+v", res)
	}
}
