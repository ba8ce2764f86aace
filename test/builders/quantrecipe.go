// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package builders

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// QuantRecipeWrapper builds a QuantRecipe.
type QuantRecipeWrapper struct{ kquantv1alpha1.QuantRecipe }

// MakeQuantRecipe starts a recipe with scheme Float8CurrentScaling and every
// option left to its default.
func MakeQuantRecipe(name, ns string) *QuantRecipeWrapper {
	return &QuantRecipeWrapper{kquantv1alpha1.QuantRecipe{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       kquantv1alpha1.QuantRecipeSpec{Scheme: kquantv1alpha1.SchemeFloat8CurrentScaling},
	}}
}

// Scheme sets the scheme and drops options blocks of other schemes.
func (w *QuantRecipeWrapper) Scheme(s kquantv1alpha1.Scheme) *QuantRecipeWrapper {
	w.Spec = kquantv1alpha1.QuantRecipeSpec{Scheme: s, Format: w.Spec.Format}
	return w
}

// MXFP8 makes it an MXFP8BlockScaling recipe with the given scale rounding.
func (w *QuantRecipeWrapper) MXFP8(rounding kquantv1alpha1.ScaleRounding) *QuantRecipeWrapper {
	w.Spec = kquantv1alpha1.QuantRecipeSpec{Scheme: kquantv1alpha1.SchemeMXFP8BlockScaling,
		MXFP8: &kquantv1alpha1.MXFP8Options{ScaleRounding: rounding}}
	return w
}

// NVFP4 makes it an NVFP4BlockScaling recipe with TransformerEngine's defaults.
func (w *QuantRecipeWrapper) NVFP4() *QuantRecipeWrapper {
	w.Spec = kquantv1alpha1.QuantRecipeSpec{Scheme: kquantv1alpha1.SchemeNVFP4BlockScaling}
	return w
}

// Format sets the element format.
func (w *QuantRecipeWrapper) Format(f kquantv1alpha1.Format) *QuantRecipeWrapper {
	w.Spec.Format = f
	return w
}

// AmaxEpsilon sets currentScaling.amaxEpsilon.
func (w *QuantRecipeWrapper) AmaxEpsilon(eps string) *QuantRecipeWrapper {
	if w.Spec.CurrentScaling == nil {
		w.Spec.CurrentScaling = &kquantv1alpha1.CurrentScalingOptions{}
	}
	w.Spec.CurrentScaling.AmaxEpsilon = eps
	return w
}

// Power2Scales sets power2Scales of current or block scaling.
func (w *QuantRecipeWrapper) Power2Scales(on bool) *QuantRecipeWrapper {
	switch w.Spec.Scheme {
	case kquantv1alpha1.SchemeFloat8BlockScaling:
		w.Spec.BlockScaling = &kquantv1alpha1.BlockScalingOptions{Power2Scales: &on}
	default:
		if w.Spec.CurrentScaling == nil {
			w.Spec.CurrentScaling = &kquantv1alpha1.CurrentScalingOptions{}
		}
		w.Spec.CurrentScaling.Power2Scales = &on
	}
	return w
}

// Obj returns the recipe.
func (w *QuantRecipeWrapper) Obj() *kquantv1alpha1.QuantRecipe { return &w.QuantRecipe }

// ClusterObj returns the recipe as a ClusterQuantRecipe of the same name and spec.
func (w *QuantRecipeWrapper) ClusterObj() *kquantv1alpha1.ClusterQuantRecipe {
	return &kquantv1alpha1.ClusterQuantRecipe{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Labels: w.Labels},
		Spec:       *w.Spec.DeepCopy(),
	}
}
