// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"os"

	"github.com/go-logr/logr"

	"github.com/kquant/kquant/agent/baseline"
	"github.com/kquant/kquant/agent/nodeagent"
	"github.com/kquant/kquant/agent/runner"
	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/bench"
	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/gpu"
	"github.com/kquant/kquant/internal/logging"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/reference"
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
var _ runner.Runner = (*bench.Runner)(nil)

// execution is how this agent runs its runs and measures its baselines.
type execution struct {
	runner runner.Runner
	prober baseline.Prober
	// bench is the measurement harness behind runner; nil for synthetic
	// results.
	bench *bench.Runner
	// open creates a run's CUDA context before its first kernel, for the
	// guard; nil on the reference backend.
	open runner.Opener
	// close releases the GPUs; never nil.
	close func() error
}

// release releases the GPUs, logging a failure: a deferred last step,
// whose failure changes nothing the run reported.
func (e *execution) release(log logr.Logger) {
	if err := e.close(); err != nil {
		log.Error(err, "Releasing the GPUs failed")
	}
}

// newExecution picks the backend: the CUDA kernels on the node's GPUs when a
// driver is there (--backend auto or cuda), else the pure-Go reference.
// Simulated nodes always use the reference: their GPUs do not exist.
func newExecution(ctx context.Context, results, backend string, simulated bool) (*execution, error) {
	noop := func() error { return nil }
	switch results {
	case resultsSynthetic:
		return &execution{runner: simulate.Runner{}, prober: baseline.Null{}, close: noop}, nil
	case resultsMeasured:
	default:
		return nil, fmt.Errorf("--results %q: want %s or %s", results, resultsMeasured, resultsSynthetic)
	}
	ref := reference.New()
	refRunner := &bench.Runner{BackendFor: func(context.Context, v1alpha1.GPU) (quant.Backend, error) { return ref, nil }}
	onReference := &execution{runner: refRunner, bench: refRunner, prober: baseline.Null{}, close: noop}
	if simulated || backend == nodeagent.BackendReference {
		return onReference, nil
	}
	// NVML numbers GPUs by PCI bus; make CUDA's ordinals agree, so that the GPU
	// a run is bound to is the device its kernels run on.
	if os.Getenv("CUDA_DEVICE_ORDER") == "" {
		if err := os.Setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID"); err != nil {
			return nil, fmt.Errorf("setting CUDA_DEVICE_ORDER: %w", err)
		}
	}
	rt, err := gpu.OpenRuntime()
	switch {
	case err == nil:
		r := &bench.Runner{BackendFor: rt.BackendFor}
		open := func(_ context.Context, gpu v1alpha1.GPU) (bool, error) {
			if _, err := rt.Backend(int(gpu.Index)); err != nil {
				return false, err
			}
			return true, nil
		}
		return &execution{runner: r, bench: r, open: open, prober: cudaProber{rt}, close: rt.Close}, nil
	case backend == nodeagent.BackendAuto && cuda.IsNoDriver(err):
		// hack/images.sh waits for this message from the arm64 agent under qemu.
		logging.FromContext(ctx).Info("No CUDA driver, running on the reference backend", "reason", err.Error())
		return onReference, nil
	default:
		return nil, fmt.Errorf("--backend %s: %w", backend, err)
	}
}

// cudaProber is the baseline.Prober of a node whose GPUs the CUDA runtime
// drives: steps run on the cuda backend, and the baselines are measured on
// the device of the GPU index asked for. It lives here, where the agent and
// the engine meet, so that the engine does not import the agent.
type cudaProber struct{ rt *gpu.Runtime }

var _ baseline.Prober = cudaProber{}

func (cudaProber) Backend() v1alpha1.Backend { return v1alpha1.BackendCUDA }

func (p cudaProber) Measure(ctx context.Context, gpuIndex int) (*baseline.Measurement, error) {
	b, err := p.rt.Backend(gpuIndex)
	if err != nil {
		return nil, fmt.Errorf("baselines of GPU %d: %w", gpuIndex, err)
	}
	m, err := b.Baselines(ctx)
	if err != nil {
		return nil, fmt.Errorf("baselines of GPU %d: %w", gpuIndex, err)
	}
	return &baseline.Measurement{Launch: m.Launch, GraphLaunch: m.GraphLaunch, CopyBandwidthGBps: m.CopyBandwidthGBps, PeakBandwidthGBps: m.PeakBandwidthGBps}, nil
}
