// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantrecipe

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/validation"
)

// Validate returns what is wrong with spec, one message per problem, each
// naming its field: the rules of validation.ValidateQuantRecipeSpec, which
// the engine and kquantctl apply too, so that a recipe the controller calls
// Ready is one every run can take. Admission refuses most of these already;
// what it cannot see (an amaxEpsilon that is not finite in float32) makes
// the recipe Invalid here.
func Validate(spec *kquantv1alpha1.QuantRecipeSpec) []string {
	errs := validation.ValidateQuantRecipeSpec(spec, field.NewPath("spec"))
	problems := make([]string, 0, len(errs))
	for _, err := range errs {
		problems = append(problems, err.Error())
	}
	return problems
}
