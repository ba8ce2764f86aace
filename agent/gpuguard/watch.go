// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpuguard

import (
	"context"
	"errors"
	"time"

	"k8s.io/utils/clock"

	"github.com/kquant/kquant/internal/logging"
)

// Watch checks the GPU every interval until ctx ends, and returns a context
// that is cancelled, with the *InUseError as its cause
// (context.Cause), the first time a foreign process shows up. The run
// executes under the returned context. NVML errors while watching are
// logged and the watch goes on: a run already on its GPU is not stopped
// because NVML hiccupped once. Call stop to end the watch.
func (g *Guard) Watch(ctx context.Context, clk clock.WithTicker, gpuUUID string, allowed Allowed, interval time.Duration) (watched context.Context, stop context.CancelFunc) {
	watched, cancel := context.WithCancelCause(ctx)
	ticker := clk.NewTicker(interval)
	go func() {
		defer ticker.Stop()
		log := logging.FromContext(ctx).WithValues("gpu", gpuUUID)
		for {
			select {
			case <-watched.Done():
				return
			case <-ticker.C():
			}
			err := g.Check(gpuUUID, allowed)
			switch {
			case err == nil:
			case errors.Is(err, ErrGPUInUse):
				log.Info("Foreign process on the run's GPU, stopping the run", "error", err.Error())
				cancel(err)
				return
			default:
				log.V(logging.Debug).Info("GPU guard check failed, will retry", "error", err.Error())
			}
		}
	}()
	return watched, func() { cancel(context.Canceled) }
}
