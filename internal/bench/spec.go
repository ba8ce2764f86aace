// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/validation"
)

// Spec is one run's work: what a QuantRun's spec says, minus where it runs.
type Spec struct {
	// RecipeName and RecipeKey label the results and dumps; RecipeKey
	// defaults to Recipe.Key().
	RecipeName, RecipeKey string
	Recipe                v1alpha1.QuantRecipeSpec
	Mode                  v1alpha1.JobMode
	Workload              v1alpha1.Workload
	// Execution must have its level's presets filled in (v1alpha1.ExecutionForLevel);
	// a nil Iterations or Warmup means the Standard level's.
	Execution  v1alpha1.Execution
	Tolerances v1alpha1.Tolerances
}

// SpecFromRun returns the spec of a QuantRun.
func SpecFromRun(run *v1alpha1.QuantRun) Spec {
	r := run.Spec.Recipe
	return Spec{
		RecipeName: r.Name, RecipeKey: r.Key, Recipe: r.Spec,
		Mode: run.Spec.Mode, Workload: run.Spec.Workload,
		Execution: run.Spec.Execution, Tolerances: run.Spec.Tolerances,
	}
}

// ErrInvalidSpec is wrapped by every error about a spec that no backend can
// run as written (as opposed to a run that fails its checks).
var ErrInvalidSpec = errors.New("invalid spec")

// Validate checks the spec the way the API server's schema and CEL rules do,
// plus what only a run can check (explicit split sizes adding up to each
// shape's rows). Errors name the manifest fields: spec.scheme for the
// recipe's, spec.workload... for the job's.
func (s *Spec) Validate() error {
	spec := field.NewPath("spec")
	errs := validation.ValidateQuantRecipeSpec(&s.Recipe, spec)
	errs = append(errs, validation.ValidateMode(s.Mode, spec.Child("mode"))...)
	errs = append(errs, validation.ValidateWorkload(&s.Workload, spec.Child("workload"))...)
	errs = append(errs, validation.ValidateRecipeWorkload(&s.Recipe, &s.Workload, spec.Child("workload"))...)
	errs = append(errs, validation.ValidateExecution(&s.Execution, spec.Child("execution"))...)
	errs = append(errs, validation.ValidateTolerances(&s.Tolerances, spec.Child("tolerances"))...)
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidSpec, errs.ToAggregate())
	}
	return nil
}
