// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kquant/kquant/api/v1alpha1"
)

var yes, no = true, false

func nvfp4(o v1alpha1.NVFP4Options) v1alpha1.QuantRecipeSpec {
	return v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeNVFP4BlockScaling, NVFP4: &o}
}

func TestValidateQuantRecipeSpec(t *testing.T) {
	cases := map[string]struct {
		spec      v1alpha1.QuantRecipeSpec
		wantField string
	}{
		"defaults are valid": {spec: v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeDelayedScaling}},
		"NVFP4 with E2M1":    {spec: v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeNVFP4BlockScaling, Format: v1alpha1.FormatE2M1}},
		"scheme required":    {spec: v1alpha1.QuantRecipeSpec{}, wantField: "spec.scheme"},
		"E5M2 refused":       {spec: v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeFloat8CurrentScaling, Format: v1alpha1.FormatE5M2}, wantField: "spec.format"},
		"E2M1 only with NVFP4": {spec: v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeMXFP8BlockScaling, Format: v1alpha1.FormatE2M1},
			wantField: "spec.format"},
		"options only with their scheme": {spec: v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeMXFP8BlockScaling, NVFP4: &v1alpha1.NVFP4Options{}},
			wantField: "spec.nvfp4"},
		"epsilon finite in float64 but not float32": {spec: v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeFloat8CurrentScaling,
			CurrentScaling: &v1alpha1.CurrentScalingOptions{AmaxEpsilon: "1e39"}}, wantField: "spec.currentScaling.amaxEpsilon"},
		"small epsilon": {spec: v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeFloat8CurrentScaling,
			CurrentScaling: &v1alpha1.CurrentScalingOptions{AmaxEpsilon: "1e-12"}}},
		"4over6 on weights keeps the RHT": {spec: nvfp4(v1alpha1.NVFP4Options{FourOverSix: v1alpha1.NVFP4ScopeWeights})},
		"4over6 on activations with the default RHT": {spec: nvfp4(v1alpha1.NVFP4Options{FourOverSix: v1alpha1.NVFP4ScopeActivations}),
			wantField: "spec.nvfp4.fourOverSix"},
		"4over6 on all without the RHT": {spec: nvfp4(v1alpha1.NVFP4Options{FourOverSix: v1alpha1.NVFP4ScopeAll, RandomHadamardTransform: &no})},
		"unknown 4over6 error mode":     {spec: nvfp4(v1alpha1.NVFP4Options{FourOverSixErrorMode: "RMSE"}), wantField: "spec.nvfp4.fourOverSixErrorMode"},
		"unknown 256 bound scope":       {spec: nvfp4(v1alpha1.NVFP4Options{FourOverSixE4M3Bound256: "gradients"}), wantField: "spec.nvfp4.fourOverSixE4M3Bound256"},
		"row-scaled with the RHT": {spec: nvfp4(v1alpha1.NVFP4Options{RowScaledActivation: &yes}),
			wantField: "spec.nvfp4.rowScaledActivation"},
		"row-scaled without the RHT": {spec: nvfp4(v1alpha1.NVFP4Options{RowScaledActivation: &yes, RandomHadamardTransform: &no})},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := ValidateQuantRecipeSpec(&tc.spec, field.NewPath("spec"))
			switch {
			case tc.wantField == "" && len(errs) > 0:
				t.Errorf("got %v, want no errors", errs)
			case tc.wantField != "" && (len(errs) != 1 || errs[0].Field != tc.wantField):
				t.Errorf("got %v, want one error on %s", errs, tc.wantField)
			}
		})
	}
}

func TestValidateWorkloadUsage(t *testing.T) {
	shapes := []v1alpha1.Shape{{Rows: 32, Cols: 32}}
	cases := map[string]struct {
		w         v1alpha1.Workload
		wantField string
	}{
		"usage left out (Both)":    {w: v1alpha1.Workload{Shapes: shapes}},
		"rowwise quantize":         {w: v1alpha1.Workload{Shapes: shapes, Usage: v1alpha1.UsageRowwise}},
		"columnwise quantize":      {w: v1alpha1.Workload{Shapes: shapes, Usage: v1alpha1.UsageColumnwise}},
		"rowwise quantized linear": {w: v1alpha1.Workload{Operation: v1alpha1.OperationQuantizedLinear, Shapes: shapes, Usage: v1alpha1.UsageRowwise}},
		"unknown usage":            {w: v1alpha1.Workload{Shapes: shapes, Usage: "Diagonal"}, wantField: "spec.workload.usage"},
		"columnwise quantized linear": {w: v1alpha1.Workload{Operation: v1alpha1.OperationQuantizedLinear, Shapes: shapes, Usage: v1alpha1.UsageColumnwise},
			wantField: "spec.workload.usage"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := ValidateWorkload(&tc.w, field.NewPath("spec", "workload"))
			switch {
			case tc.wantField == "" && len(errs) > 0:
				t.Errorf("got %v, want no errors", errs)
			case tc.wantField != "" && (len(errs) != 1 || errs[0].Field != tc.wantField):
				t.Errorf("got %v, want one error on %s", errs, tc.wantField)
			}
		})
	}
}

func TestValidateRecipeWorkload(t *testing.T) {
	rowScaled := nvfp4(v1alpha1.NVFP4Options{RowScaledActivation: &yes, RandomHadamardTransform: &no})
	plain := nvfp4(v1alpha1.NVFP4Options{})
	cases := map[string]struct {
		recipe    v1alpha1.QuantRecipeSpec
		w         v1alpha1.Workload
		wantField string
	}{
		"plain NVFP4, both usages":              {recipe: plain},
		"row-scaled inputs, rowwise":            {recipe: rowScaled, w: v1alpha1.Workload{Usage: v1alpha1.UsageRowwise}},
		"row-scaled weights, both":              {recipe: rowScaled, w: v1alpha1.Workload{TensorRole: v1alpha1.TensorRoleWeight}},
		"row-scaled inputs, both (the default)": {recipe: rowScaled, wantField: "spec.workload.usage"},
		"row-scaled linear, both": {recipe: rowScaled, w: v1alpha1.Workload{Operation: v1alpha1.OperationQuantizedLinear, TensorRole: v1alpha1.TensorRoleWeight},
			wantField: "spec.workload.usage"},
		"4over6 weights, columnwise": {recipe: nvfp4(v1alpha1.NVFP4Options{FourOverSix: v1alpha1.NVFP4ScopeWeights}),
			w: v1alpha1.Workload{TensorRole: v1alpha1.TensorRoleWeight, Usage: v1alpha1.UsageColumnwise}, wantField: "spec.workload.usage"},
		"4over6 weights, both": {recipe: nvfp4(v1alpha1.NVFP4Options{FourOverSix: v1alpha1.NVFP4ScopeWeights}),
			w: v1alpha1.Workload{TensorRole: v1alpha1.TensorRoleWeight}},
		"4over6 1D weights, columnwise": {recipe: nvfp4(v1alpha1.NVFP4Options{FourOverSix: v1alpha1.NVFP4ScopeWeights, TwoDimensionalWeights: &no}),
			w: v1alpha1.Workload{TensorRole: v1alpha1.TensorRoleWeight, Usage: v1alpha1.UsageColumnwise}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := ValidateRecipeWorkload(&tc.recipe, &tc.w, field.NewPath("spec", "workload"))
			switch {
			case tc.wantField == "" && len(errs) > 0:
				t.Errorf("got %v, want no errors", errs)
			case tc.wantField != "" && (len(errs) != 1 || errs[0].Field != tc.wantField):
				t.Errorf("got %v, want one error on %s", errs, tc.wantField)
			}
		})
	}
}
