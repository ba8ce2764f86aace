// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantrecipe

import (
	"testing"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		recipe       *kquantv1alpha1.QuantRecipe
		wantProblems int
	}{
		"defaults are valid":              {recipe: builders.MakeQuantRecipe("r", "ns").Obj()},
		"small epsilon is valid":          {recipe: builders.MakeQuantRecipe("r", "ns").AmaxEpsilon("1e-12").Obj()},
		"infinite epsilon is not":         {recipe: builders.MakeQuantRecipe("r", "ns").AmaxEpsilon("1e999").Obj(), wantProblems: 1},
		"NVFP4 with its format is valid":  {recipe: builders.MakeQuantRecipe("r", "ns").NVFP4().Obj()},
		"MXFP8 with E2M1 is not":          {recipe: builders.MakeQuantRecipe("r", "ns").MXFP8(kquantv1alpha1.ScaleRoundingOCP).Format(kquantv1alpha1.FormatE2M1).Obj(), wantProblems: 1},
		"E5M2 is refused here too":        {recipe: builders.MakeQuantRecipe("r", "ns").Format(kquantv1alpha1.FormatE5M2).Obj(), wantProblems: 1},
		"block scaling without p2 passes": {recipe: builders.MakeQuantRecipe("r", "ns").Scheme(kquantv1alpha1.SchemeFloat8BlockScaling).Power2Scales(false).Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Validate(&tc.recipe.Spec); len(got) != tc.wantProblems {
				t.Errorf("Validate() = %q, want %d problems", got, tc.wantProblems)
			}
		})
	}
}
