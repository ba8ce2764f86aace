// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kquant/kquant/api/v1alpha1"
)

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
