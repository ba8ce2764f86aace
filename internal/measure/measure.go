// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package measure

import (
	"context"
	"fmt"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/quant"
)

// Step is one step of a run's operation on one shape, as the engine times
// it: the inputs are generated and, for DelayedScaling, the states are
// calibrated (one quantize and one update on the same input) before the
// step is handed out. There is one type per operation (Quantize,
// GroupedQuantize, QuantizedLinear), each knowing how it runs, so that no
// caller switches on the operation.
type Step interface {
	// Run runs the step once through the plain Backend interface and ends
	// it with the delayed-scaling updates, as a training step would.
	Run(ctx context.Context, b quant.Backend) error
	// Tensors are the step's tensors, each with its request (its State
	// nil) and its delayed-scaling state (nil for other schemes): one for
	// Quantize, one per non-empty group for GroupedQuantize, the input and
	// the weight for QuantizedLinear.
	Tensors() []Tensor
}

// Tensor is one tensor of a step.
type Tensor struct {
	Request quant.Request
	X       quant.Tensor
	// State is the tensor's delayed-scaling state, owned by the step and
	// updated by it; nil for other schemes.
	State *quant.State
}

// Quantize quantizes one tensor.
type Quantize struct {
	// Request carries the recipe, role, usage and seed; its State is nil:
	// the state is in State.
	Request quant.Request
	X       quant.Tensor
	// State is the DelayedScaling state; nil for other schemes.
	State *quant.State
}

// Run implements Step.
func (s Quantize) Run(ctx context.Context, b quant.Backend) error {
	return quantizeAndUpdate(ctx, b, s.Request, s.X, s.State)
}

// Tensors implements Step.
func (s Quantize) Tensors() []Tensor {
	return []Tensor{{Request: withoutState(s.Request), X: s.X, State: s.State}}
}

// GroupedQuantize quantizes one tensor split along its rows into groups.
type GroupedQuantize struct {
	Request quant.Request
	X       quant.Tensor
	// Splits are the group row counts.
	Splits []int
	// States are the groups' DelayedScaling states; nil for other schemes.
	States []*quant.State
}

// Run implements Step.
func (s GroupedQuantize) Run(ctx context.Context, b quant.Backend) error {
	if _, err := b.QuantizeGrouped(ctx, s.Request, s.X, s.Splits, s.States); err != nil {
		return err
	}
	for g, st := range s.States {
		if err := st.Update(s.Request.Recipe, s.Request.Role); err != nil {
			return fmt.Errorf("group %d: %w", g, err)
		}
	}
	return nil
}

// Tensors implements Step: the non-empty groups' rows.
func (s GroupedQuantize) Tensors() []Tensor {
	var out []Tensor
	off := 0
	for g, n := range s.Splits {
		if n > 0 {
			out = append(out, Tensor{Request: withoutState(s.Request), X: s.X.RowSlice(off, off+n), State: at(s.States, g)})
		}
		off += n
	}
	return out
}

// QuantizedLinear quantizes a layer's input [M, K] and weight [N, K].
type QuantizedLinear struct {
	// Request's role is ignored: X is the Input, W the Weight.
	Request quant.Request
	X, W    quant.Tensor
	// States are X's and W's DelayedScaling states; nil for other schemes.
	States []*quant.State
}

// Run implements Step.
func (s QuantizedLinear) Run(ctx context.Context, b quant.Backend) error {
	for _, t := range s.Tensors() {
		if err := quantizeAndUpdate(ctx, b, t.Request, t.X, t.State); err != nil {
			return err
		}
	}
	return nil
}

// Tensors implements Step: the input, then the weight.
func (s QuantizedLinear) Tensors() []Tensor {
	out := make([]Tensor, 2)
	for k, role := range []quant.TensorRole{quant.Input, quant.Weight} {
		req := withoutState(s.Request)
		req.Role = role
		out[k] = Tensor{Request: req, X: []quant.Tensor{s.X, s.W}[k], State: at(s.States, k)}
	}
	return out
}

// quantizeAndUpdate quantizes x with st as the request's state, then
// updates st.
func quantizeAndUpdate(ctx context.Context, b quant.Backend, req quant.Request, x quant.Tensor, st *quant.State) error {
	req.State = st
	if _, err := b.Quantize(ctx, req, x); err != nil {
		return err
	}
	if st == nil {
		return nil
	}
	return st.Update(req.Recipe, req.Role)
}

func withoutState(r quant.Request) quant.Request {
	r.State = nil
	return r
}

func at(states []*quant.State, k int) *quant.State {
	if k < len(states) {
		return states[k]
	}
	return nil
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
	// PeakBandwidthGBps is the device memory's theoretical bandwidth
	// (cuda.DeviceInfo.PeakMemoryBandwidthGBps), the step's other yardstick;
	// 0 when unknown.
	PeakBandwidthGBps float64
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
// CUDA backend, whose kernels cover every recipe and option quant.Recipe
// expresses except NVFP4's 4over6 and row-scaled activations. A run whose recipe the backend does not cover
// runs on the reference backend instead — emulated on the CPU, with
// results.backend saying so — rather than failing.
type Coverage interface {
	// Covers returns nil when the backend runs recipe for role, else an error
	// that says what it lacks.
	Covers(recipe quant.Recipe, role quant.TensorRole) error
}
