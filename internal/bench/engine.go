package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/accuracy"
	"github.com/kquant/kquant/internal/quant/linear"
	"github.com/kquant/kquant/internal/quant/reference"
	"github.com/kquant/kquant/internal/quant/workload"
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
	if err := e.checkLimits(spec.Workload); err != nil {
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

// checkLimits refuses shapes beyond the limits before anything is
// allocated: a 2^20 x 2^20 shape is valid in the API, and must end in a
// clear error rather than an out-of-memory kill.
func (e *Engine) checkLimits(w v1alpha1.Workload) error {
	maxE, maxMACs := e.MaxElements, e.MaxLinearMACs
	if maxE <= 0 {
		maxE = DefaultMaxElements
	}
	if maxMACs <= 0 {
		maxMACs = DefaultMaxLinearMACs
	}
	for _, s := range w.Shapes {
		n := s.Rows * s.Cols // both ≤ 2^20 after validation: no overflow
		if n > maxE {
			return fmt.Errorf("%w: shape %dx%d has %d elements, more than this run's limit of %d (about %d GiB of host memory)",
				ErrTooLarge, s.Rows, s.Cols, n, maxE, maxE*16>>30)
		}
		if w.Operation != v1alpha1.OperationQuantizedLinear {
			continue
		}
		nOut := outFeatures(s)
		if wn, yn := nOut*s.Cols, s.Rows*nOut; wn > maxE || yn > maxE {
			return fmt.Errorf("%w: shape %dx%d with outFeatures %d needs a weight of %d and an output of %d elements, more than this run's limit of %d",
				ErrTooLarge, s.Rows, s.Cols, nOut, wn, yn, maxE)
		}
		// Rows*nOut ≤ 2^40 and Cols ≤ 2^20: the product fits in int64.
		if macs := s.Rows * nOut * s.Cols; macs > maxMACs/2 {
			return fmt.Errorf("%w: shape %dx%d with outFeatures %d needs 2 x %d multiply-adds on the host, more than this run's limit of %d",
				ErrTooLarge, s.Rows, s.Cols, nOut, macs, maxMACs)
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
	var msg string
	res.Verdict, res.Reason, msg = Judge(checks)
	return &Report{Results: res, Message: msg}
}

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
	arts = nil // the tensors may be large; let them go before timing
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

func (r *shapeRunner) quantize(ctx context.Context, i int, stage func(Stage), out *shapeOutcome) (measure.Step, *ShapeArtifacts, error) {
	s := r.spec.Workload.Shapes[i]
	stage(StageInput)
	x, err := r.generate(uint32(i), s.Rows, s.Cols)
	if err != nil {
		return nil, nil, err
	}
	stage(StageQuantize)
	req := r.request(roleFromAPI(r.spec.Workload.TensorRole), usageFromAPI(r.spec.Workload.Usage))
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

// Splits returns a grouped workload's split sizes for a shape of rows
// rows under scheme s: Uniform and Random aligned to the scheme's group
// alignment (the rows that do not fill an aligned chunk go to the last
// group, which then reports the violation), Explicit as written.
func Splits(g *v1alpha1.Groups, rows int64, s quant.Scheme) ([]int, error) {
	align := s.GroupAlignment()
	switch g.Splits {
	case v1alpha1.SplitExplicit:
		out := make([]int, len(g.Sizes))
		for k, n := range g.Sizes {
			out[k] = int(n)
		}
		return out, nil
	case v1alpha1.SplitRandom:
		return workload.RandomSplits(int(rows), int(g.Count), align, g.Seed)
	default:
		return workload.UniformSplits(int(rows), int(g.Count), align)
	}
}

// alignmentViolation describes the first group whose row count breaks the
// scheme's alignment; empty when every group is aligned.
func alignmentViolation(splits []int, s quant.Scheme) string {
	align := s.GroupAlignment()
	for g, n := range splits {
		if n%align != 0 {
			return fmt.Sprintf("group %d has %d rows, not a multiple of %d as %s requires", g, n, align, s)
		}
	}
	return ""
}

func (r *shapeRunner) grouped(ctx context.Context, i int, stage func(Stage), out *shapeOutcome) (measure.Step, *ShapeArtifacts, error) {
	s := r.spec.Workload.Shapes[i]
	splits, err := Splits(r.spec.Workload.Groups, s.Rows, r.recipe.Scheme)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	// Checked here, before any backend sees the splits, so that every
	// backend reports a misaligned group the same way: as a Fail verdict
	// naming the group, not as an error.
	if out.alignment = alignmentViolation(splits, r.recipe.Scheme); out.alignment != "" {
		return nil, nil, nil
	}
	stage(StageInput)
	x, err := r.generate(uint32(i), s.Rows, s.Cols)
	if err != nil {
		return nil, nil, err
	}
	stage(StageQuantize)
	req := r.request(roleFromAPI(r.spec.Workload.TensorRole), usageFromAPI(r.spec.Workload.Usage))
	var states []*quant.State
	if r.delayed() {
		states = make([]*quant.State, len(splits))
		for g := range states {
			states[g] = quant.NewState(r.recipe)
		}
		if _, err := r.e.Backend.QuantizeGrouped(ctx, req, x, splits, states); err != nil {
			return nil, nil, fmt.Errorf("calibrating: %w", err)
		}
		for g, st := range states {
			if err := st.Update(r.recipe, req.Role); err != nil {
				return nil, nil, fmt.Errorf("calibrating group %d: %w", g, err)
			}
		}
	}
	results, err := r.e.Backend.QuantizeGrouped(ctx, req, x, splits, cloneStates(states))
	if err != nil {
		return nil, nil, err
	}
	if !r.e.isReference() {
		ref, err := r.e.reference().QuantizeGrouped(ctx, req, x, splits, cloneStates(states))
		if err != nil {
			return nil, nil, fmt.Errorf("reference: %w", err)
		}
		same := len(ref) == len(results)
		for g := range ref {
			same = same && quant.SameBytes(results[g], ref[g])
		}
		out.bitExact = &same
	}
	stage(StageCompare)
	arts := r.artifacts(i)
	arts.Splits = splits
	// Each group's measured operand and its source values, concatenated
	// (the SNR is a sum over elements, whatever their order).
	var exact, approx []float32
	var counts accuracy.Counts
	off := 0
	for g, n := range splits {
		xg := x.RowSlice(off, off+n)
		_, measured := accuracy.Measured(results[g])
		deq, err := r.e.Backend.Dequantize(ctx, results[g], measured)
		if err != nil {
			return nil, nil, fmt.Errorf("group %d: %w", g, err)
		}
		src, err := accuracy.Source(xg, results[g])
		if err != nil {
			return nil, nil, fmt.Errorf("group %d: %w", g, err)
		}
		c, err := accuracy.Count(xg, results[g])
		if err != nil {
			return nil, nil, fmt.Errorf("group %d: %w", g, err)
		}
		counts.Saturated += c.Saturated
		counts.FlushedToZero += c.FlushedToZero
		exact, approx = append(exact, src.Data...), append(approx, deq.Data...)
		arts.Tensors = append(arts.Tensors, TensorArtifacts{
			Name: fmt.Sprintf("group-%d", g), Input: xg, Result: results[g], Dequantized: deq, RowOffset: off,
		})
		off += n
	}
	// SNR over the whole tensor, not an average of the groups' dB.
	all := func(d []float32) quant.Tensor { return quant.Tensor{Rows: 1, Cols: len(d), Data: d} }
	if out.metrics, err = accuracy.Compare(all(exact), all(approx)); err != nil {
		return nil, nil, err
	}
	out.metrics.Saturated, out.metrics.FlushedToZero = counts.Saturated, counts.FlushedToZero
	out.measured = true
	return measure.GroupedQuantize{Request: req, X: x, Splits: splits, States: states}, arts, nil
}

func cloneStates(s []*quant.State) []*quant.State {
	if s == nil {
		return nil
	}
	out := make([]*quant.State, len(s))
	for g := range s {
		out[g] = s[g].Clone()
	}
	return out
}

func (r *shapeRunner) linear(ctx context.Context, i int, stage func(Stage), out *shapeOutcome) (measure.Step, *ShapeArtifacts, error) {
	s := r.spec.Workload.Shapes[i]
	n := outFeatures(s)
	stage(StageInput)
	// Two streams per shape, so that input and weight are independent.
	x, err := r.generate(uint32(2*i), s.Rows, s.Cols)
	if err != nil {
		return nil, nil, err
	}
	w, err := r.generate(uint32(2*i+1), n, s.Cols)
	if err != nil {
		return nil, nil, err
	}
	stage(StageQuantize)
	seed := uint64(r.spec.Workload.Seed)
	res, err := linear.Run(ctx, r.e.Backend, linear.Request{Recipe: r.recipe, X: x, W: w, Seed: seed})
	if err != nil {
		return nil, nil, err
	}
	stage(StageCompare)
	// linear.Run calibrates delayed scaling on each operand; doing the same
	// here reproduces its states for the comparison and the timed step.
	req := r.request(quant.Input, quant.UsageRowwise)
	var states []*quant.State
	for k, t := range []quant.Tensor{x, w} {
		req.Role = []quant.TensorRole{quant.Input, quant.Weight}[k]
		st, err := r.calibrated(ctx, r.e.Backend, req, t)
		if err != nil {
			return nil, nil, err
		}
		if st != nil {
			states = append(states, st)
		}
		if r.e.isReference() {
			continue
		}
		req.State = cloneState(st)
		ref, err := r.e.reference().Quantize(ctx, req, t)
		if err != nil {
			return nil, nil, fmt.Errorf("reference: %w", err)
		}
		req.State = nil
		same := quant.SameBytes([]*quant.Result{res.X, res.W}[k], ref) && (out.bitExact == nil || *out.bitExact)
		out.bitExact = &same
	}
	xd, err := r.e.Backend.Dequantize(ctx, res.X, quant.UsageRowwise)
	if err != nil {
		return nil, nil, err
	}
	wd, err := r.e.Backend.Dequantize(ctx, res.W, quant.UsageRowwise)
	if err != nil {
		return nil, nil, err
	}
	// The output's SNR and error; the operands' clamped and flushed counts,
	// since the output is not quantized itself.
	out.metrics = res.Output
	out.metrics.Saturated = res.XMetrics.Saturated + res.WMetrics.Saturated
	out.metrics.FlushedToZero = res.XMetrics.FlushedToZero + res.WMetrics.FlushedToZero
	out.measured = true
	arts := r.artifacts(i)
	arts.Tensors = []TensorArtifacts{
		{Name: "x", Input: x, Result: res.X, Dequantized: xd},
		{Name: "w", Input: w, Result: res.W, Dequantized: wd},
	}
	arts.Y, arts.Exact = &res.Y, &res.Exact
	// The product reads the rowwise operands (compared above); the timed
	// step produces the operands of the workload's usage: Both is a
	// training forward, which keeps the columnwise ones for the backward
	// GEMMs, Rowwise inference.
	req.Role, req.Usage = quant.Input, usageFromAPI(r.spec.Workload.Usage)
	return measure.QuantizedLinear{Request: req, X: x, W: w, States: states}, arts, nil
}
