// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"strings"
	"testing"

	"github.com/kquant/kquant/api/v1alpha1"
)

func TestQuantRecipeSpecProblems(t *testing.T) {
	cases := map[string]struct {
		spec       v1alpha1.QuantRecipeSpec
		wantFields []string
	}{
		"defaults are valid": {spec: v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeDelayedScaling}},
		"infinite epsilon": {spec: v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeFloat8CurrentScaling,
			CurrentScaling: &v1alpha1.CurrentScalingOptions{AmaxEpsilon: "1e999"}}, wantFields: []string{"spec.currentScaling.amaxEpsilon"}},
		"two problems, two messages": {spec: v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeMXFP8BlockScaling, Format: v1alpha1.FormatE2M1,
			NVFP4: &v1alpha1.NVFP4Options{}}, wantFields: []string{"spec.format", "spec.nvfp4"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := QuantRecipeSpecProblems(&tc.spec)
			if len(got) != len(tc.wantFields) {
				t.Fatalf("QuantRecipeSpecProblems() = %q, want one problem for each of %q", got, tc.wantFields)
			}
			for i, f := range tc.wantFields {
				if !strings.HasPrefix(got[i], f) {
					t.Errorf("problem %d = %q, want it to name %s", i, got[i], f)
				}
			}
		})
	}
}
