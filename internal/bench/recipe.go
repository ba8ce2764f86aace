// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"fmt"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/validation"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/workload"
)

// RecipeFromAPI converts an API recipe spec to the quantizers' recipe. It is
// the one place where that conversion happens: defaults come from the API's
// Effective (TransformerEngine's, the same that the controller's key uses),
// so that the agent, kquantctl and the recipe's status.key cannot disagree
// on what an option left out means. Options the API does not expose (NVFP4's
// RHT sign vector, block scaling's epsilon) keep quant.DefaultRecipe's values.
func RecipeFromAPI(spec v1alpha1.QuantRecipeSpec) (quant.Recipe, error) {
	e := spec.Effective()
	s := quant.Scheme(e.Scheme)
	if s.GroupAlignment() == 0 {
		return quant.Recipe{}, fmt.Errorf("unknown scheme %q", string(e.Scheme))
	}
	r := quant.DefaultRecipe(s)
	r.Format = quant.Format(e.Format)
	switch {
	case e.DelayedScaling != nil:
		o := e.DelayedScaling
		r.Delayed = quant.DelayedOptions{
			Margin:          int(*o.Margin),
			AmaxHistoryLen:  int(*o.AmaxHistoryLen),
			AmaxComputeAlgo: quant.AmaxComputeAlgo(o.AmaxComputeAlgo),
		}
	case e.CurrentScaling != nil:
		o := e.CurrentScaling
		eps, err := validation.AmaxEpsilon(o.AmaxEpsilon)
		if err != nil {
			return quant.Recipe{}, err
		}
		r.Current = quant.CurrentOptions{Power2Scales: *o.Power2Scales, AmaxEpsilon: eps}
	case e.BlockScaling != nil:
		r.Block.Power2Scales = *e.BlockScaling.Power2Scales
	case e.MXFP8 != nil:
		r.MXFP8 = quant.MXFP8Options{
			ScaleRounding:         quant.ScaleRounding(e.MXFP8.ScaleRounding),
			TwoDimensionalWeights: *e.MXFP8.TwoDimensionalWeights,
		}
	case e.NVFP4 != nil:
		r.NVFP4.RandomHadamardTransform = *e.NVFP4.RandomHadamardTransform
		r.NVFP4.StochasticRounding = *e.NVFP4.StochasticRounding
		r.NVFP4.TwoDimensionalWeights = *e.NVFP4.TwoDimensionalWeights
		r.NVFP4.FourOverSix = quant.TensorScope(e.NVFP4.FourOverSix)
		r.NVFP4.FourOverSixErrorMode = quant.ErrorMode(e.NVFP4.FourOverSixErrorMode)
		r.NVFP4.FourOverSixE4M3Bound256 = quant.TensorScope(e.NVFP4.FourOverSixE4M3Bound256)
		r.NVFP4.RowScaledActivation = *e.NVFP4.RowScaledActivation
	}
	if err := r.Validate(); err != nil {
		return quant.Recipe{}, err
	}
	return r, nil
}

// roleFromAPI maps the API's tensor role, empty meaning the default Input.
func roleFromAPI(r v1alpha1.TensorRole) quant.TensorRole {
	if r == "" {
		return quant.Input
	}
	return quant.TensorRole(r)
}

// usageFromAPI maps the API's usage, empty meaning the default Both.
func usageFromAPI(u v1alpha1.Usage) quant.Usage {
	switch u {
	case v1alpha1.UsageRowwise:
		return quant.UsageRowwise
	case v1alpha1.UsageColumnwise:
		return quant.UsageColumnwise
	}
	return quant.UsageBoth
}

// inputSpec is the generator spec of tensor stream of a workload.
func inputSpec(w v1alpha1.Workload, stream uint32) workload.Spec {
	return workload.Spec{
		Distribution: workload.Distribution(w.Distribution),
		DType:        workload.DType(w.InputDType),
		Seed:         w.Seed,
		Stream:       stream,
	}
}
