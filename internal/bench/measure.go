package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/quant"
)

// Step is one step of a run's operation on one shape, as the engine times
// it: the inputs are generated and, for DelayedScaling, the states are
// calibrated (one quantize and one update on the same input) before the
// step is handed out.
type Step struct {
	Operation v1alpha1.Operation
	// Request carries the recipe, role, usage and seed; its State is nil:
	// the states are in States.
	Request quant.Request
	// X is the tensor to quantize (QuantizedLinear: the input [M, K]).
	X quant.Tensor
	// W is QuantizedLinear's weight [N, K].
	W quant.Tensor
	// Splits are GroupedQuantize's group row counts.
	Splits []int
	// States are the DelayedScaling states, owned by the step and updated by
	// it: one for Quantize, one per group for GroupedQuantize, X's and W's
	// for QuantizedLinear; nil for other schemes.
	States []*quant.State
}

// MeasureOptions say how often to run a step.
type MeasureOptions struct {
	Mode       v1alpha1.JobMode
	Graphs     v1alpha1.GraphMode
	Warmup     int
	Iterations int
	// Progress, when set, is called after each step with the number of
	// steps done and the total (warmup included).
	Progress func(done, total int)
}

// Measurement is what a backend measured of a step. Zero fields were not
// measured and stay out of the results: a backend fills what it can.
type Measurement struct {
	// HostEagerMicros is the host time of one eager step (for the
	// reference backend, the whole CPU step: it has no device).
	HostEagerMicros float64
	// HostGraphMicros is the host time of one graph replay of the step.
	HostGraphMicros float64
	// PointerLoadMicros is the host time to load the step's pointer
	// payload through kernel parameters (grouped steps).
	PointerLoadMicros float64
	// KernelsPerStep is the number of kernel launches of one step.
	KernelsPerStep int
	// GPUMicros is the GPU time of one step (CUDA events).
	GPUMicros float64
	// BytesMoved is the bytes one step reads and writes in device memory;
	// with GPUMicros it gives the bandwidth.
	BytesMoved int64
	// CopyBandwidthGBps is the device-to-device copy bandwidth measured in
	// the same process, which the step's bandwidth is compared with.
	CopyBandwidthGBps float64
	// Graph is the outcome of capturing and replaying the step; nil when
	// not attempted.
	Graph *GraphOutcome
}

// GraphOutcome says whether a step survived CUDA-graph capture and replay.
type GraphOutcome struct {
	Capturable         bool
	ReplayMatchesEager bool
}

// Measurer is implemented by a backend that times its own steps: the CUDA
// backend, which can run a step eagerly and as a graph, time it with
// events on its stream and measure the device's copy bandwidth. The engine
// calls Measure once per shape (after its accuracy step, in both modes, so
// that a Validation run can still check graph replay) and turns the
// measurement into the run's overhead, performance and graph results. A
// backend without Measure is timed by the engine on the CPU, in Benchmark
// mode only.
type Measurer interface {
	Measure(ctx context.Context, step Step, opts MeasureOptions) (Measurement, error)
}

// runStep runs one step through the plain Backend interface and ends it
// with the delayed-scaling updates, as a training step would.
func runStep(ctx context.Context, b quant.Backend, s Step) error {
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
func cpuMeasure(ctx context.Context, b quant.Backend, now func() time.Time, s Step, o MeasureOptions) (Measurement, error) {
	total := o.Warmup + o.Iterations
	times := make([]time.Duration, 0, o.Iterations)
	for k := range total {
		if err := ctx.Err(); err != nil {
			return Measurement{}, fmt.Errorf("timing step %d: %w", k, err)
		}
		t0 := now()
		if err := runStep(ctx, b, s); err != nil {
			return Measurement{}, fmt.Errorf("timing step %d: %w", k, err)
		}
		if d := now().Sub(t0); k >= o.Warmup {
			times = append(times, d)
		}
		if o.Progress != nil {
			o.Progress(k+1, total)
		}
	}
	if len(times) == 0 {
		return Measurement{}, nil
	}
	return Measurement{HostEagerMicros: float64(median(times)) / float64(time.Microsecond)}, nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
