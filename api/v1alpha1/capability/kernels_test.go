// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package capability

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/kquant/kquant/api/v1alpha1"
)

func TestForRecipeNarrowsByKernelGap(t *testing.T) {
	native := ForScheme(v1alpha1.SchemeNVFP4BlockScaling, V(10, 0), V(12, 9))
	cases := []struct {
		name string
		spec v1alpha1.QuantRecipeSpec
		want v1alpha1.Support
	}{
		{"plain NVFP4", v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeNVFP4BlockScaling}, v1alpha1.SupportNative},
		{"4over6 weights", v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeNVFP4BlockScaling,
			NVFP4: &v1alpha1.NVFP4Options{FourOverSix: v1alpha1.NVFP4ScopeWeights}}, v1alpha1.SupportUnsupported},
		{"row-scaled", v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeNVFP4BlockScaling,
			NVFP4: &v1alpha1.NVFP4Options{RandomHadamardTransform: ptr.To(false), RowScaledActivation: ptr.To(true)}}, v1alpha1.SupportUnsupported},
		{"4over6 none spelled out", v1alpha1.QuantRecipeSpec{Scheme: v1alpha1.SchemeNVFP4BlockScaling,
			NVFP4: &v1alpha1.NVFP4Options{FourOverSix: v1alpha1.NVFP4ScopeNone}}, v1alpha1.SupportNative},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ForRecipe(&tc.spec, native)
			if got.Support != tc.want {
				t.Errorf("support %s (%s), want %s", got.Support, got.Reason, tc.want)
			}
			if (got.Reason != "") != (tc.want == v1alpha1.SupportUnsupported) {
				t.Errorf("reason %q", got.Reason)
			}
		})
	}
}
