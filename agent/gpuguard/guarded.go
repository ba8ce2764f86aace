// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpuguard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/utils/clock"

	"github.com/kquant/kquant/agent/runner"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/logging"
)

// learnTries and learnWait bound how long the guard waits for NVML to list
// the context this process just created.
const (
	learnTries = 20
	learnWait  = 100 * time.Millisecond
)

// DefaultInterval is how often a running run's GPU is checked for foreign
// processes.
const DefaultInterval = 2 * time.Second

// RunOptions configure Guarded.
type RunOptions struct {
	// Guard asks NVML for the GPU's processes; nil runs unguarded (no NVML).
	Guard *Guard
	// Self is this process's host PID as learned; shared by every run of
	// the process. Nil takes a fresh one.
	Self *Self
	// Open creates the run's context before its first kernel; nil opens
	// nothing (the runner opens its backend itself).
	Open runner.Opener
	// Interval is how often a running run's GPU is checked; zero takes
	// DefaultInterval.
	Interval time.Duration
	Clock    clock.WithTicker
}

// Guarded wraps r with the GPU guard, the same for the in-agent executor and
// for a run pod: before the run's first kernel NVML must show no process on
// its GPU but this process's own; the run's context is then opened and this
// process's host PID learned (Self); while the run executes the GPU
// is checked every Interval, and a foreign process cancels the run. A run
// stopped by the guard returns an error matching ErrGPUInUse. The
// guard checks gpu.UUID, a MIG device's own UUID for a slice.
func Guarded(r runner.Runner, opts RunOptions) runner.Runner {
	if opts.Guard == nil {
		return r
	}
	if opts.Self == nil {
		opts.Self = &Self{}
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return runner.Func(func(ctx context.Context, run *v1alpha1.QuantRun, gpu v1alpha1.GPU) (*v1alpha1.RunResults, error) {
		return guardedRun(ctx, r, opts, run, gpu)
	})
}

func guardedRun(ctx context.Context, r runner.Runner, opts RunOptions, run *v1alpha1.QuantRun, gpu v1alpha1.GPU) (*v1alpha1.RunResults, error) {
	log := logging.FromContext(ctx)
	if err := opts.Guard.Check(gpu.UUID, opts.Self.Allowed()); err != nil {
		return nil, fmt.Errorf("before the first kernel: %w", err)
	}
	if opts.Open != nil {
		opened, err := opts.Open(ctx, gpu)
		if err != nil {
			return nil, fmt.Errorf("opening GPU %s: %w", gpu.UUID, err)
		}
		if opened {
			if err := learn(ctx, opts, gpu.UUID); err != nil {
				return nil, err
			}
		}
	}
	log.V(logging.Debug).Info("GPU guard passed, running", "gpu", gpu.UUID, "ownPID", opts.Self.PID())
	watched, stop := opts.Guard.Watch(ctx, opts.Clock, gpu.UUID, opts.Self.Allowed(), opts.Interval)
	defer stop()
	results, err := r.Run(watched, run, gpu)
	if cause := context.Cause(watched); errors.Is(cause, ErrGPUInUse) {
		// The guard stopped the run: whatever the runner returned, the run
		// did not measure alone.
		return nil, fmt.Errorf("while running: %w", cause)
	}
	return results, err
}

// learn has the guard learn this process's host PID from the context it just
// opened on the GPU. NVML lists a new context at once on the drivers tried;
// learn still gives it a few polls. Should it never appear, the run goes on
// with nothing allowed, and the watch would then fail it as GPUInUse, retried
// later: never a run beside an unknown process.
func learn(ctx context.Context, opts RunOptions, uuid string) error {
	for try := 0; ; try++ {
		if err := opts.Guard.Learn(uuid, opts.Self); err != nil {
			return fmt.Errorf("after opening the GPU: %w", err)
		}
		if opts.Self.PID() != 0 || try == learnTries {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-opts.Clock.After(learnWait):
		}
	}
}
