// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
)

// Runtime is the CUDA side of a node agent: the driver and one Backend per
// device, opened on first use and shared by every run on that device (one
// owner thread per GPU, as internal/cuda requires).
//
// Devices are addressed by CUDA ordinal, which the agent takes to be the
// NVML index: run the agent with CUDA_DEVICE_ORDER=PCI_BUS_ID so that both
// enumerate GPUs in the same order.
type Runtime struct {
	drv      *cuda.Driver
	mu       sync.Mutex
	backends map[int]*Backend
}

// OpenRuntime loads the CUDA driver. Without one the error says "no CUDA
// driver" (cuda.IsNoDriver reports true) and the agent falls back to the
// reference backend.
func OpenRuntime() (*Runtime, error) {
	drv, err := cuda.Open()
	if err != nil {
		return nil, fmt.Errorf("cuda runtime: %w", err)
	}
	return &Runtime{drv: drv, backends: map[int]*Backend{}}, nil
}

// Backend returns the backend of device ordinal, opening it on first use.
func (r *Runtime) Backend(ordinal int) (*Backend, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.backends[ordinal]; ok {
		return b, nil
	}
	b, err := openOwned(r.drv, ordinal, "cuda runtime")
	if err != nil {
		return nil, err
	}
	r.backends[ordinal] = b
	return b, nil
}

// BackendFor is bench.Runner's BackendFor: the backend of the GPU's index.
func (r *Runtime) BackendFor(_ context.Context, gpu v1alpha1.GPU) (quant.Backend, error) {
	return r.Backend(int(gpu.Index))
}

// Close closes every opened backend and its device.
func (r *Runtime) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for ord, b := range r.backends {
		if err := b.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing device %d: %w", ord, err))
		}
	}
	r.backends = map[int]*Backend{}
	return errors.Join(errs...)
}
