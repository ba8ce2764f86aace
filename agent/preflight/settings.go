// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package preflight

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/bench"
)

// defaultJob is what a preflight measures unless the recipe file holds a
// QuantJob: a Validation at the Quick level of one gradient-shaped tensor
// (the tensor role that takes every step a recipe has: stochastic rounding
// and the Hadamard transform where the recipe enables them, as in
// TransformerEngine 3281's all-zero NVFP4 gradients), small enough for
// seconds on a GPU and on the reference backend, and bytes compared with
// the reference backend: kquant's kernels are bit-exact against it, so any
// other byte is a Fail. Decoded like a file's QuantJob, so that the CRD's
// defaults fill in the rest.
const defaultJob = `apiVersion: kquant.dev/v1alpha1
kind: QuantJob
metadata: {name: preflight}
spec:
  recipeRef: {name: preflight}
  mode: Validation
  level: Quick
  workload:
    operation: Quantize
    shapes: [{rows: 1024, cols: 2048}]
    tensorRole: Gradient
  tolerances:
    requireBitExact: true
`

// Settings are what each recipe is measured with on each GPU.
type Settings struct {
	Mode       v1alpha1.JobMode
	Level      v1alpha1.Level
	Workload   v1alpha1.Workload
	Execution  v1alpha1.Execution
	Tolerances v1alpha1.Tolerances
}

// SettingsFor returns the settings of job (the file's QuantJob, or nil for
// the defaults), at level when it is set. The result is validated as a run
// of every recipe would be.
func SettingsFor(job *v1alpha1.QuantJob, level v1alpha1.Level) (Settings, error) {
	if job == nil {
		f, err := ReadFile("the default settings", strings.NewReader(defaultJob))
		if err != nil {
			return Settings{}, err
		}
		job = f.Job
	}
	if level == "" {
		level = job.Spec.Level
	}
	switch level {
	case v1alpha1.LevelQuick, v1alpha1.LevelStandard, v1alpha1.LevelExtended:
	default:
		levels := []string{string(v1alpha1.LevelQuick), string(v1alpha1.LevelStandard), string(v1alpha1.LevelExtended)}
		return Settings{}, fmt.Errorf("%w: %w", ErrConfig, field.NotSupported(field.NewPath("level"), string(level), levels))
	}
	s := Settings{
		Mode: job.Spec.Mode, Level: level, Workload: *job.Spec.Workload.DeepCopy(),
		Execution: v1alpha1.ExecutionForLevel(level, job.Spec.Execution), Tolerances: job.Spec.Tolerances,
	}
	return s, nil
}

// spec is the engine's spec of recipe r under s.
func (s Settings) spec(r Recipe) bench.Spec {
	return bench.Spec{
		RecipeName: r.Name, RecipeKey: r.Spec.Key(), Recipe: *r.Spec.DeepCopy(),
		Mode: s.Mode, Workload: *s.Workload.DeepCopy(), Execution: *s.Execution.DeepCopy(), Tolerances: s.Tolerances,
	}
}

// Validate checks s with every recipe as a run of it would be checked, so
// that a bad file fails as a configuration error before any GPU is touched.
func (s Settings) Validate(recipes []Recipe) error {
	for _, r := range recipes {
		spec := s.spec(r)
		if err := spec.Validate(); err != nil {
			return fmt.Errorf("%w: recipe %s: %w", ErrConfig, r.Name, err)
		}
	}
	return nil
}
