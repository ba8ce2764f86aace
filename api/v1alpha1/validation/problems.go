// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kquant/kquant/api/v1alpha1"
)

// QuantRecipeSpecProblems is what is wrong with a recipe's spec, one message
// per problem, each naming its field: the rules of ValidateQuantRecipeSpec,
// as the recipe controller's Ready condition and the job controller's
// failure of a job on an invalid recipe both word them, so that a recipe the
// controller calls Ready is one every run can take. Admission refuses most
// of these already; what it cannot see (an amaxEpsilon that is not finite in
// float32) is found here.
func QuantRecipeSpecProblems(spec *v1alpha1.QuantRecipeSpec) []string {
	errs := ValidateQuantRecipeSpec(spec, field.NewPath("spec"))
	problems := make([]string, 0, len(errs))
	for _, err := range errs {
		problems = append(problems, err.Error())
	}
	return problems
}
