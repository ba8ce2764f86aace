package main

import (
	"context"
	"fmt"

	"github.com/kquant/kquant/agent/bench"
	"github.com/kquant/kquant/agent/executor"
	"github.com/kquant/kquant/agent/quant"
	"github.com/kquant/kquant/agent/quant/reference"
	"github.com/kquant/kquant/api/v1alpha1"
)

// Results choices of --results.
const (
	// resultsMeasured runs every step for real on the node's backend.
	resultsMeasured = "measured"
	// resultsSynthetic makes up plausible, deterministic results without
	// quantizing anything: for scale tests with thousands of simulated GPUs,
	// never for real nodes.
	resultsSynthetic = "synthetic"
)

// The compile-time proof that the measurement harness is what the executor runs.
var _ executor.Runner = (*bench.Runner)(nil)

// newRunner returns what executes this agent's runs.
func newRunner(results string) (executor.Runner, error) {
	switch results {
	case resultsMeasured:
		ref := reference.New()
		return &bench.Runner{
			BackendFor: func(context.Context, v1alpha1.GPU) (quant.Backend, error) { return ref, nil },
		}, nil
	case resultsSynthetic:
		return executor.SyntheticRunner{}, nil
	default:
		return nil, fmt.Errorf("--results %q: want %s or %s", results, resultsMeasured, resultsSynthetic)
	}
}
