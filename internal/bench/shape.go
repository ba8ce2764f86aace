// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/accuracy"
	"github.com/kquant/kquant/internal/quant/workload"
)

// shapeRunner runs the shapes of one spec.
type shapeRunner struct {
	e      *Engine
	spec   *Spec
	recipe quant.Recipe
}

func (r *shapeRunner) run(ctx context.Context, i int) (shapeOutcome, error) {
	s := r.spec.Workload.Shapes[i]
	out := shapeOutcome{shape: s, elements: s.Rows * s.Cols}
	p := Progress{Shape: i, Shapes: len(r.spec.Workload.Shapes), Rows: s.Rows, Cols: s.Cols}
	stage := func(st Stage) { p.Stage = st; r.e.progress(p) }
	var (
		step measure.Step
		arts *ShapeArtifacts
		err  error
	)
	switch r.spec.Workload.Operation {
	case v1alpha1.OperationGroupedQuantize:
		step, arts, err = r.grouped(ctx, i, stage, &out)
	case v1alpha1.OperationQuantizedLinear:
		step, arts, err = r.linear(ctx, i, stage, &out)
	default:
		step, arts, err = r.quantize(ctx, i, stage, &out)
	}
	if err != nil || !out.measured {
		return out, err
	}
	if o := r.e.Observer; o != nil {
		if err := o.ObserveShape(ctx, arts); err != nil {
			return out, fmt.Errorf("observing: %w", err)
		}
	}
	exec := v1alpha1.ExecutionForLevel(v1alpha1.LevelStandard, r.spec.Execution)
	opts := measure.Options{
		Mode: r.spec.Mode, Graphs: r.spec.Execution.Graphs,
		Warmup: int(*exec.Warmup), Iterations: int(*exec.Iterations),
		Progress: func(done, total int) { p.Stage, p.Step, p.Steps = StageTiming, done, total; r.e.progress(p) },
	}
	if m, ok := r.e.Backend.(measure.Measurer); ok {
		stage(StageTiming)
		if out.timing, err = m.Measure(ctx, step, opts); err != nil {
			return out, fmt.Errorf("measuring: %w", err)
		}
	} else if r.spec.Mode == v1alpha1.JobModeBenchmark {
		stage(StageTiming)
		now := r.e.Now
		if now == nil {
			now = time.Now
		}
		if out.timing, err = cpuMeasure(ctx, r.e.Backend, now, step, opts); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (r *shapeRunner) request(role quant.TensorRole, usage quant.Usage) quant.Request {
	return quant.Request{Recipe: r.recipe, Role: role, Usage: usage, Seed: uint64(r.spec.Workload.Seed)}
}

func (r *shapeRunner) delayed() bool { return r.recipe.Scheme == quant.DelayedScaling }

// calibrated returns a delayed-scaling state calibrated on x (one quantize
// and one update, as after a training step on the same data, so that the
// measured step uses a realistic scale rather than the initial 1); nil for
// other schemes. QuantizedLinear does the same (package linear).
func (r *shapeRunner) calibrated(ctx context.Context, b quant.Backend, req quant.Request, x quant.Tensor) (*quant.State, error) {
	if !r.delayed() {
		return nil, nil
	}
	req.State = quant.NewState(r.recipe)
	if _, err := b.Quantize(ctx, req, x); err != nil {
		return nil, fmt.Errorf("calibrating: %w", err)
	}
	if err := req.State.Update(r.recipe, req.Role); err != nil {
		return nil, fmt.Errorf("calibrating: %w", err)
	}
	return req.State, nil
}

// quantizeChecked quantizes x with state st (cloned, so that the caller's
// stays as it was) and, for a backend other than the reference, compares
// the bytes with the reference's.
func (r *shapeRunner) quantizeChecked(ctx context.Context, req quant.Request, x quant.Tensor, st *quant.State) (*quant.Result, *bool, error) {
	req.State = cloneState(st)
	res, err := r.e.Backend.Quantize(ctx, req, x)
	if err != nil {
		return nil, nil, err
	}
	if r.e.isReference() {
		return res, nil, nil
	}
	req.State = cloneState(st)
	ref, err := r.e.reference().Quantize(ctx, req, x)
	if err != nil {
		return nil, nil, fmt.Errorf("reference: %w", err)
	}
	same := quant.SameBytes(res, ref)
	return res, &same, nil
}

func cloneState(s *quant.State) *quant.State {
	if s == nil {
		return nil
	}
	return s.Clone()
}

func (r *shapeRunner) generate(stream uint32, rows, cols int64) (quant.Tensor, error) {
	return workload.Generate(inputSpec(r.spec.Workload, stream), int(rows), int(cols))
}

// input generates shape i's input tensor and returns it with the request
// of the workload's role and usage, reporting the stages it goes through.
func (r *shapeRunner) input(i int, stage func(Stage)) (quant.Tensor, quant.Request, error) {
	s := r.spec.Workload.Shapes[i]
	stage(StageInput)
	x, err := r.generate(uint32(i), s.Rows, s.Cols)
	if err != nil {
		return quant.Tensor{}, quant.Request{}, err
	}
	stage(StageQuantize)
	return x, r.request(roleFromAPI(r.spec.Workload.TensorRole), usageFromAPI(r.spec.Workload.Usage)), nil
}

// quantize is a Quantize shape: one tensor, checked against the reference.
func (r *shapeRunner) quantize(ctx context.Context, i int, stage func(Stage), out *shapeOutcome) (measure.Step, *ShapeArtifacts, error) {
	x, req, err := r.input(i, stage)
	if err != nil {
		return nil, nil, err
	}
	st, err := r.calibrated(ctx, r.e.Backend, req, x)
	if err != nil {
		return nil, nil, err
	}
	res, bitExact, err := r.quantizeChecked(ctx, req, x, st)
	if err != nil {
		return nil, nil, err
	}
	stage(StageCompare)
	_, measured := accuracy.Measured(res)
	deq, err := r.e.Backend.Dequantize(ctx, res, measured)
	if err != nil {
		return nil, nil, err
	}
	if out.metrics, err = accuracy.Measure(x, res, deq); err != nil {
		return nil, nil, err
	}
	out.measured, out.bitExact = true, bitExact
	arts := r.artifacts(i)
	arts.Tensors = []TensorArtifacts{{Input: x, Result: res, Dequantized: deq}}
	return measure.Quantize{Request: req, X: x, State: st}, arts, nil
}

func (r *shapeRunner) artifacts(i int) *ShapeArtifacts {
	return &ShapeArtifacts{
		Index: i, Shape: r.spec.Workload.Shapes[i], Spec: r.spec, Recipe: r.recipe,
		Operation: r.spec.Workload.Operation,
	}
}
