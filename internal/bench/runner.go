// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"fmt"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/capability"
	"github.com/kquant/kquant/internal/quant"
)

// Runner runs QuantRuns for the node agent: it is the agent executor's
// Runner, Run(ctx, run, gpu) (*v1alpha1.RunResults, error). It lives here,
// not in the executor, so that the executor depends only on its own small
// interface and tests it with fakes, while the engine stays the one
// implementation kquantctl and the agent share.
type Runner struct {
	// BackendFor returns the backend that runs on gpu: the CUDA backend
	// bound to that device, or the reference backend on a node without a
	// driver. Required.
	BackendFor func(ctx context.Context, gpu v1alpha1.GPU) (quant.Backend, error)
	// MaxElements and MaxLinearMACs bound a shape as in Engine.
	MaxElements, MaxLinearMACs int64
	// Progress, when set, receives the engine's progress of each run.
	Progress func(run *v1alpha1.QuantRun, p Progress)
}

// Run runs one QuantRun on gpu. A GPU whose profile says the recipe is
// Unsupported gets a Skip verdict without running. The capability comes
// from the GPU's published recipe support, so that the results say whether
// the numbers are those of a native or an emulated recipe.
//
// An error means the run could not produce results (invalid spec, shape
// too large, backend failure, cancelled context); a run that produced
// results returns them, whatever its verdict.
func (r *Runner) Run(ctx context.Context, run *v1alpha1.QuantRun, gpu v1alpha1.GPU) (*v1alpha1.RunResults, error) {
	if r.BackendFor == nil {
		return nil, fmt.Errorf("bench runner: no BackendFor")
	}
	scheme := run.Spec.Recipe.Spec.Scheme
	var support *v1alpha1.Capability
	if rs, ok := capability.Reported(&gpu, scheme); ok {
		support = capability.Result(rs)
	}
	if support != nil && !support.Native && !support.Emulated {
		reason := support.Reason
		if reason == "" {
			reason = fmt.Sprintf("GPU %s does not support %s", gpu.UUID, scheme)
		}
		if support.Reason == "" {
			// Explain says the capability's reason.
			support.Reason = reason
		}
		v, code := Judge(Checks{Unsupported: reason})
		return &v1alpha1.RunResults{Capability: support, Verdict: v, Reason: code}, nil
	}
	b, err := r.BackendFor(ctx, gpu)
	if err != nil {
		return nil, fmt.Errorf("backend for GPU %s: %w", gpu.UUID, err)
	}
	e := &Engine{Backend: b, MaxElements: r.MaxElements, MaxLinearMACs: r.MaxLinearMACs}
	if r.Progress != nil {
		e.Progress = func(p Progress) { r.Progress(run, p) }
	}
	rep, err := e.Run(ctx, SpecFromRun(run))
	if err != nil {
		return nil, fmt.Errorf("running %s/%s: %w", run.Namespace, run.Name, err)
	}
	rep.Results.Capability = support
	return &rep.Results, nil
}
