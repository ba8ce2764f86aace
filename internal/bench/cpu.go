// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant"
)

// cpuMeasure times a step run through the plain Backend interface with
// the engine's clock. The figure is the median over the timed steps, which
// resists the noise of a shared CPU better than the mean.
func cpuMeasure(ctx context.Context, b quant.Backend, now func() time.Time, s measure.Step, o measure.Options) (measure.Measurement, error) {
	total := o.Warmup + o.Iterations
	times := make([]time.Duration, 0, o.Iterations)
	for k := range total {
		if err := ctx.Err(); err != nil {
			return measure.Measurement{}, fmt.Errorf("timing step %d: %w", k, err)
		}
		t0 := now()
		if err := s.Run(ctx, b); err != nil {
			return measure.Measurement{}, fmt.Errorf("timing step %d: %w", k, err)
		}
		if d := now().Sub(t0); k >= o.Warmup {
			times = append(times, d)
		}
		if o.Progress != nil {
			o.Progress(k+1, total)
		}
	}
	if len(times) == 0 {
		return measure.Measurement{}, nil
	}
	return measure.Measurement{HostEagerMicros: float64(median(times)) / float64(time.Microsecond)}, nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
