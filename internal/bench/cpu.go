package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant"
)

// runStep runs one step through the plain Backend interface and ends it
// with the delayed-scaling updates, as a training step would.
func runStep(ctx context.Context, b quant.Backend, s measure.Step) error {
	req := s.Request
	switch s.Operation {
	case v1alpha1.OperationGroupedQuantize:
		if _, err := b.QuantizeGrouped(ctx, req, s.X, s.Splits, s.States); err != nil {
			return err
		}
		for g, st := range s.States {
			if err := st.Update(req.Recipe, req.Role); err != nil {
				return fmt.Errorf("group %d: %w", g, err)
			}
		}
	case v1alpha1.OperationQuantizedLinear:
		roles := [2]quant.TensorRole{quant.Input, quant.Weight}
		for k, t := range []quant.Tensor{s.X, s.W} {
			r := req
			r.Role = roles[k]
			if s.States != nil {
				r.State = s.States[k]
			}
			if _, err := b.Quantize(ctx, r, t); err != nil {
				return err
			}
			if r.State != nil {
				if err := r.State.Update(r.Recipe, r.Role); err != nil {
					return err
				}
			}
		}
	default:
		if s.States != nil {
			req.State = s.States[0]
		}
		if _, err := b.Quantize(ctx, req, s.X); err != nil {
			return err
		}
		if req.State != nil {
			if err := req.State.Update(req.Recipe, req.Role); err != nil {
				return err
			}
		}
	}
	return nil
}

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
		if err := runStep(ctx, b, s); err != nil {
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
