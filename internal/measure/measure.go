package measure

import (
	"context"

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

// Options say how often to run a step.
type Options struct {
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
	Measure(ctx context.Context, step Step, opts Options) (Measurement, error)
}

// Coverage is implemented by a backend that may run only some recipes: the
// CUDA backend, whose kernels now cover every recipe and option quant.Recipe
// expresses (MXFP8's 32x32 weight tiles were the last to fall back), keeps
// it for kernels yet to come. A run whose recipe the backend does not cover
// runs on the reference backend instead — emulated on the CPU, with
// results.backend saying so — rather than failing.
type Coverage interface {
	// Covers returns nil when the backend runs recipe for role, else an error
	// that says what it lacks.
	Covers(recipe quant.Recipe, role quant.TensorRole) error
}
