// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package executor

import (
	"context"

	"github.com/kquant/kquant/api/v1alpha1"
)

// Runner executes one run on one GPU and returns what it measured. It must
// be idempotent (the agent re-runs a run after a crash) and return promptly
// with ctx's error when ctx is cancelled. A returned error fails the run
// with the error's text as message; a run that executed but violated its
// tolerances is not an error: it succeeds with verdict Fail.
type Runner interface {
	Run(ctx context.Context, run *v1alpha1.QuantRun, gpu v1alpha1.GPU) (*v1alpha1.RunResults, error)
}

// RunnerFunc adapts a function to Runner.
type RunnerFunc func(ctx context.Context, run *v1alpha1.QuantRun, gpu v1alpha1.GPU) (*v1alpha1.RunResults, error)

// Run calls f.
func (f RunnerFunc) Run(ctx context.Context, run *v1alpha1.QuantRun, gpu v1alpha1.GPU) (*v1alpha1.RunResults, error) {
	return f(ctx, run, gpu)
}
