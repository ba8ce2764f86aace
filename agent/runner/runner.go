// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"context"

	"github.com/kquant/kquant/api/v1alpha1"
)

// Runner executes one run on one GPU and returns what it measured. It must
// be idempotent (a run is run again after a crash) and return promptly
// with ctx's error when ctx is cancelled. A returned error fails the run
// with the error's text as message; a run that executed but violated its
// tolerances is not an error: it succeeds with verdict Fail.
type Runner interface {
	Run(ctx context.Context, run *v1alpha1.QuantRun, gpu v1alpha1.GPU) (*v1alpha1.RunResults, error)
}

// Func adapts a function to Runner.
type Func func(ctx context.Context, run *v1alpha1.QuantRun, gpu v1alpha1.GPU) (*v1alpha1.RunResults, error)

// Run calls f.
func (f Func) Run(ctx context.Context, run *v1alpha1.QuantRun, gpu v1alpha1.GPU) (*v1alpha1.RunResults, error) {
	return f(ctx, run, gpu)
}

// Opener creates the run's CUDA context on gpu before its first kernel, so
// that the GPU guard can learn the process's own host PID; it reports
// whether a context now exists (false on the reference backend, which has
// none). The backend keeps the context for the run: opening here costs
// nothing extra.
type Opener func(ctx context.Context, gpu v1alpha1.GPU) (context bool, err error)
