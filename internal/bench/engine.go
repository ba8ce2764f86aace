// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"errors"
	"fmt"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"math"
	"strconv"
	"time"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/reference"
)

// DefaultMaxElements bounds the elements of one tensor (and of a
// QuantizedLinear's output) when Engine.MaxElements is zero: 2^28 elements
// take about 4 GiB of host memory with the input, codes, dequantized copy
// and the reference's copy, which a node agent and a laptop can afford.
const DefaultMaxElements int64 = 1 << 28

// DefaultMaxLinearMACs bounds the multiply-adds of a QuantizedLinear's two
// host GEMMs (about a minute of one CPU core at 2^36).
const DefaultMaxLinearMACs int64 = 1 << 36

// ErrTooLarge is wrapped by the error of a shape beyond the engine's limits.
var ErrTooLarge = errors.New("shape too large")

// Engine runs specs on a backend and measures them. Set Backend; every
// other field is optional. An Engine holds no state between runs and may
// run several specs at once if its Backend allows it.
type Engine struct {
	// Backend runs the steps.
	Backend quant.Backend
	// Reference is what Backend's bytes are compared with when Backend is
	// not itself the reference backend (by Name); nil means reference.New().
	Reference quant.Backend
	// MaxElements and MaxLinearMACs bound a shape; zero means the defaults.
	MaxElements   int64
	MaxLinearMACs int64
	// Progress, when set, is told what the engine is doing.
	Progress func(Progress)
	// Observer, when set, receives each shape's tensors (kquantctl's dumps).
	Observer Observer
	// Now is the clock of the CPU timing; nil means time.Now.
	Now func() time.Time
}

// Stage is what the engine is doing with a shape.
type Stage string

// The stages, in order.
const (
	StageInput    Stage = "input"
	StageQuantize Stage = "quantize"
	StageCompare  Stage = "compare"
	StageTiming   Stage = "timing"
	StageDone     Stage = "done"
)

// Progress is a report of the engine's progress through a run.
type Progress struct {
	// Shape is the index of the current shape, Shapes their number.
	Shape, Shapes int
	Rows, Cols    int64
	Stage         Stage
	// Step and Steps count the timing steps (warmup included) of StageTiming.
	Step, Steps int
}

// Observer receives the tensors of each shape once its accuracy step is
// done. The tensors belong to the engine and are valid only during the call.
type Observer interface {
	ObserveShape(ctx context.Context, a *ShapeArtifacts) error
}

// ShapeArtifacts are the tensors of one shape.
type ShapeArtifacts struct {
	// Index is the shape's index in the workload.
	Index     int
	Shape     v1alpha1.Shape
	Spec      *Spec
	Recipe    quant.Recipe
	Operation v1alpha1.Operation
	// Splits are GroupedQuantize's group row counts.
	Splits []int
	// Tensors are the quantized tensors: one for Quantize, one per group
	// for GroupedQuantize (named "group-<g>"), "x" and "w" for
	// QuantizedLinear.
	Tensors []TensorArtifacts
	// Y and Exact are QuantizedLinear's output from the dequantized and from
	// the unquantized operands.
	Y, Exact *quant.Tensor
}

// TensorArtifacts are one quantized tensor and where it came from.
type TensorArtifacts struct {
	Name   string
	Input  quant.Tensor
	Result *quant.Result
	// Dequantized is the measured operand (accuracy.Measured) decoded, in
	// its stored orientation.
	Dequantized quant.Tensor
	// RowOffset is a group's first row in the grouped input.
	RowOffset int
}

// Report is a run's results and a sentence about its verdict.
type Report struct {
	Results v1alpha1.RunResults
	// Message explains the verdict to a person.
	Message string
}

// Run validates the spec, checks every shape against the limits, then runs
// the shapes in order: generate the input, quantize it (the accuracy step),
// compare with the input and with the reference backend, hand the tensors
// to the Observer, and time the step (measure.Measurer, or the CPU in Benchmark
// mode). The context is checked between steps.
func (e *Engine) Run(ctx context.Context, spec Spec) (*Report, error) {
	if e.Backend == nil {
		return nil, fmt.Errorf("bench: engine has no backend")
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	recipe, err := RecipeFromAPI(spec.Recipe)
	if err != nil {
		return nil, fmt.Errorf("%w: recipe: %w", ErrInvalidSpec, err)
	}
	if spec.RecipeKey == "" {
		spec.RecipeKey = spec.Recipe.Key()
	}
	if err := e.CheckLimits(spec.Workload); err != nil {
		return nil, err
	}
	// A recipe the backend does not cover runs on the reference instead; the
	// copy keeps e itself unchanged for concurrent runs.
	run := *e
	backend, fallback := e.backendFor(&spec, recipe)
	run.Backend = backend
	r := &shapeRunner{e: &run, spec: &spec, recipe: recipe}
	outs := make([]shapeOutcome, len(spec.Workload.Shapes))
	for i, s := range spec.Workload.Shapes {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("shape %dx%d: %w", s.Rows, s.Cols, err)
		}
		if outs[i], err = r.run(ctx, i); err != nil {
			return nil, fmt.Errorf("shape %dx%d: %w", s.Rows, s.Cols, err)
		}
		e.progress(Progress{Shape: i, Shapes: len(outs), Rows: s.Rows, Cols: s.Cols, Stage: StageDone})
	}
	rep := run.report(spec, outs)
	if fallback != "" {
		rep.Message = fallback + "; " + rep.Message
	}
	return rep, nil
}

func (e *Engine) progress(p Progress) {
	if e.Progress != nil {
		e.Progress(p)
	}
}

// CheckLimits refuses shapes beyond the limits before anything is
// allocated: a 2^20 x 2^20 shape is valid in the API, and must end in a
// clear error rather than an out-of-memory kill. The error wraps
// ErrTooLarge and names the shape's field (spec.workload.shapes[i]); Run
// calls it first, and a caller may call it alone to refuse a spec early.
func (e *Engine) CheckLimits(w v1alpha1.Workload) error {
	maxE, maxMACs := e.MaxElements, e.MaxLinearMACs
	if maxE <= 0 {
		maxE = DefaultMaxElements
	}
	if maxMACs <= 0 {
		maxMACs = DefaultMaxLinearMACs
	}
	shapes := field.NewPath("spec", "workload", "shapes")
	for i, s := range w.Shapes {
		p := shapes.Index(i)
		n := s.Rows * s.Cols // both ≤ 2^20 after validation: no overflow
		if n > maxE {
			return fmt.Errorf("%w: %s: %dx%d has %d elements, more than this run's limit of %d (about %d GiB of host memory)",
				ErrTooLarge, p, s.Rows, s.Cols, n, maxE, maxE*16>>30)
		}
		if w.Operation != v1alpha1.OperationQuantizedLinear {
			continue
		}
		nOut := outFeatures(s)
		if wn, yn := nOut*s.Cols, s.Rows*nOut; wn > maxE || yn > maxE {
			return fmt.Errorf("%w: %s: %dx%d with outFeatures %d needs a weight of %d and an output of %d elements, more than this run's limit of %d",
				ErrTooLarge, p, s.Rows, s.Cols, nOut, wn, yn, maxE)
		}
		// Rows*nOut ≤ 2^40 and Cols ≤ 2^20: the product fits in int64.
		if macs := s.Rows * nOut * s.Cols; macs > maxMACs/2 {
			return fmt.Errorf("%w: %s: %dx%d with outFeatures %d needs 2 x %d multiply-adds on the host, more than this run's limit of %d",
				ErrTooLarge, p, s.Rows, s.Cols, nOut, macs, maxMACs)
		}
	}
	return nil
}

func outFeatures(s v1alpha1.Shape) int64 {
	if s.OutFeatures != nil {
		return *s.OutFeatures
	}
	return s.Cols
}

func (e *Engine) reference() quant.Backend {
	if e.Reference != nil {
		return e.Reference
	}
	return reference.New()
}

// isReference reports whether the backend is the reference itself, whose
// bytes need no comparison.
func (e *Engine) isReference() bool { return e.Backend.Name() == reference.New().Name() }

func (e *Engine) report(spec Spec, outs []shapeOutcome) *Report {
	res := v1alpha1.RunResults{Backend: e.Backend.Name(), Usage: spec.Workload.Usage}
	if res.Usage == "" {
		res.Usage = v1alpha1.UsageBoth
	}
	for i := range outs {
		res.Shapes = append(res.Shapes, outs[i].result())
	}
	checks := Checks{SNRdB: math.NaN(), MinSNRdB: math.NaN(), RequireBitExact: spec.Tolerances.RequireBitExact}
	if h := headline(outs); h >= 0 {
		res.Overhead = res.Shapes[h].Overhead
		res.Performance = res.Shapes[h].Performance
	}
	if m, bitExact, ok := worst(outs); ok {
		res.Accuracy = accuracyResult(m, bitExact)
		checks.SNRdB, checks.BitExact, checks.Saturated = m.SNRdB, bitExact, int64(m.Saturated)
	}
	if g := graphOutcome(outs); g != nil {
		res.Graph = &v1alpha1.GraphResult{Capturable: g.Capturable, ReplayMatchesEager: g.ReplayMatchesEager}
		checks.Graph = g
	}
	for i := range outs {
		if outs[i].alignment != "" {
			checks.Alignment = fmt.Sprintf("shape %dx%d: %s", outs[i].shape.Rows, outs[i].shape.Cols, outs[i].alignment)
			break
		}
	}
	if spec.Tolerances.MinSNRdB != "" {
		// Validated as a plain decimal already.
		checks.MinSNRdB, _ = strconv.ParseFloat(spec.Tolerances.MinSNRdB, 64)
	}
	res.Verdict, res.Reason = Judge(checks)
	msg := res.Explain(spec.Tolerances)
	if checks.Alignment != "" {
		// Only the engine knows which group broke the alignment.
		msg = checks.Alignment
	}
	return &Report{Results: res, Message: msg}
}
