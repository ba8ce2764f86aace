// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package capability

import (
	"fmt"

	"github.com/kquant/kquant/api/v1alpha1"
)

// KernelGap names the first option of a recipe that kquant's quantize
// kernels do not implement yet, or "" when they implement the whole recipe.
// A GPU cannot quantize such a recipe, so it supports it neither natively
// nor emulated, whatever its support of the scheme: the recipe's status and
// the scheduler both ask here. (The reference backend still runs it, on the
// CPU.) The CUDA backend's own refusals (internal/gpu, Covers) must name the
// same options; a test there holds the two together.
func KernelGap(spec *v1alpha1.QuantRecipeSpec) string {
	e := spec.Effective()
	if e.NVFP4 == nil {
		return ""
	}
	switch {
	case e.NVFP4.FourOverSix != v1alpha1.NVFP4ScopeNone:
		return "NVFP4 4over6 block scales (spec.nvfp4.fourOverSix)"
	case *e.NVFP4.RowScaledActivation:
		return "NVFP4 row-scaled activations (spec.nvfp4.rowScaledActivation)"
	}
	return ""
}

// ReasonNoKernel is the reason a GPU does not support a recipe with a
// KernelGap.
func ReasonNoKernel(gap string) string {
	return fmt.Sprintf("kquant's quantize kernels do not implement %s yet.", gap)
}

// ForRecipe narrows rs, a GPU's support of the recipe's scheme, by the
// recipe's KernelGap: with a gap the GPU is Unsupported, with ReasonNoKernel.
func ForRecipe(spec *v1alpha1.QuantRecipeSpec, rs v1alpha1.RecipeSupport) v1alpha1.RecipeSupport {
	if gap := KernelGap(spec); gap != "" {
		return v1alpha1.RecipeSupport{Scheme: rs.Scheme, Support: v1alpha1.SupportUnsupported, Reason: ReasonNoKernel(gap)}
	}
	return rs
}
