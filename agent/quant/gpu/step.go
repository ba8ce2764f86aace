package gpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kquant/kquant/agent/cuda"
	"github.com/kquant/kquant/agent/quant"
	"github.com/kquant/kquant/agent/quant/scaling"
	"github.com/kquant/kquant/agent/quant/swizzle"
	"github.com/kquant/kquant/kernels"
)

// Config describes one tensor of a Step.
type Config struct {
	// Request gives the recipe, role and usage; its State and Seed are not
	// read (states are set with Step.SetState).
	Request quant.Request
	// Rows x Cols is the tensor's shape.
	Rows, Cols int
	// Input is the element type of the device input (see InputType).
	Input kernels.DType
	// EndStep appends the delayed-scaling update to a DelayedScaling step,
	// so that the step is a whole training step whose state never leaves
	// the device (what graph replays and timing need). Without it the
	// caller ends the step (quant.State.Update), as quant.Backend defines.
	EndStep bool
}

// key identifies the buffers and launches of a config: what is not part of
// the step (state, seed) is left out, so that steps are reused across calls.
func (c Config) key() string {
	c.Request.State, c.Request.Seed = nil, 0
	return fmt.Sprintf("%+v", c)
}

// Step is a fixed sequence of kernel launches over device buffers bound to
// one or more tensors of fixed shapes. It runs eagerly or as a CUDA graph
// captured on first use; either way nothing is allocated, synchronised or
// read back on the host while it runs. A Step belongs to its Backend and is
// not for concurrent use.
type Step struct {
	b       *Backend
	parts   []*part
	kernels int
	bytes   int64
	size    int64 // device bytes held
	graph   cuda.GraphExec
	graphOK bool
	closed  bool
}

// part is one tensor's buffers and launches.
type part struct {
	cfg   Config
	plan  quant.Plan
	f     kernels.Format
	usage quant.Usage
	n     int
	// x is the input; st the kernels' per-tensor state (amax scratch,
	// amax, scale, scale_inv); hist the delayed-scaling amax history.
	x, st, hist cuda.Buffer
	// row and col are the codes; sinv the per-tensor decode scale shared
	// by both; rowSc and colSc the MXFP8 E8M0 scale matrices.
	row, col, sinv, rowSc, colSc cuda.Buffer
	// mxBoth: an MXFP8 step wanting both operands runs the fused kernel
	// (one read of the input) rather than the two one-operand kernels.
	mxBoth bool
}

// NewStep allocates a step for the given tensors. Close it when done.
func (b *Backend) NewStep(ctx context.Context, cfgs ...Config) (*Step, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var s *Step
	err := b.dev.Do(func(c *cuda.Ctx) error {
		var err error
		s, err = b.newStep(c, cfgs)
		return err
	})
	return s, err
}

func (b *Backend) newStep(c *cuda.Ctx, cfgs []Config) (*Step, error) {
	if len(cfgs) == 0 {
		return nil, fmt.Errorf("cuda step: no tensors")
	}
	s := &Step{b: b}
	for i, cfg := range cfgs {
		if err := s.addPart(c, cfg); err != nil {
			_ = s.free(c)
			return nil, fmt.Errorf("cuda step, tensor %d [%d, %d]: %w", i, cfg.Rows, cfg.Cols, err)
		}
	}
	return s, nil
}

func (s *Step) alloc(c *cuda.Ctx, n int) (cuda.Buffer, error) {
	buf, err := c.Alloc(max(n, 1))
	if err != nil {
		return cuda.Buffer{}, err
	}
	s.size += int64(buf.Size())
	return buf, nil
}

// addPart allocates one tensor's buffers and appends it to s.parts (also
// on failure, so that free releases what was allocated).
func (s *Step) addPart(c *cuda.Ctx, cfg Config) error {
	plan, err := cfg.Request.Recipe.Plan(cfg.Request.Role)
	if err != nil {
		return err
	}
	if err := checkPlan(plan); err != nil {
		return err
	}
	if cfg.Rows <= 0 || cfg.Cols <= 0 {
		return fmt.Errorf("empty tensor")
	}
	f, _ := format(plan.Element)
	p := &part{cfg: cfg, plan: plan, f: f, usage: cfg.Request.EffectiveUsage(), n: cfg.Rows * cfg.Cols}
	s.parts = append(s.parts, p)
	ds := int64(cfg.Input.Size())
	n := int64(p.n)
	if p.x, err = s.alloc(c, p.n*cfg.Input.Size()); err != nil {
		return err
	}
	if p.st, err = s.alloc(c, kernels.StateBytes); err != nil {
		return err
	}
	if err := c.CopyToDevice(p.st, initialState(1)); err != nil {
		return err
	}
	ops := int64(0)
	for _, u := range []quant.Usage{quant.UsageRowwise, quant.UsageColumnwise} {
		if p.usage&u != 0 {
			ops++
		}
	}
	row, col := p.usage&quant.UsageRowwise != 0, p.usage&quant.UsageColumnwise != 0
	if row {
		if p.row, err = s.alloc(c, p.n); err != nil {
			return err
		}
	}
	if col {
		if p.col, err = s.alloc(c, p.n); err != nil {
			return err
		}
	}
	switch plan.Scheme {
	case quant.Float8CurrentScaling:
		if p.sinv, err = s.alloc(c, 4); err != nil {
			return err
		}
		// amax+scale reads the input; the cast reads it again and writes
		// the codes of each operand and the decode scale.
		s.kernels += 2
		s.bytes += n*ds + n*ds + ops*n + 4
	case quant.DelayedScaling:
		if p.sinv, err = s.alloc(c, 4); err != nil {
			return err
		}
		hl := plan.Delayed.AmaxHistoryLen
		if p.hist, err = s.alloc(c, 4*hl); err != nil {
			return err
		}
		if err := c.Memset(p.hist, 0); err != nil {
			return err
		}
		s.kernels++
		s.bytes += n*ds + ops*n + 4 + 4
		if cfg.EndStep {
			// The update reads and rewrites the history.
			s.kernels++
			s.bytes += 2 * 4 * int64(hl)
		}
	case quant.MXFP8BlockScaling:
		if row {
			r, cc := kernels.MXFP8ScaleShape(cfg.Rows, cfg.Cols, false)
			if p.rowSc, err = s.alloc(c, r*cc); err != nil {
				return err
			}
			s.kernels++
			s.bytes += n*ds + n + int64(r*cc)
		}
		if col {
			r, cc := kernels.MXFP8ScaleShape(cfg.Rows, cfg.Cols, true)
			if p.colSc, err = s.alloc(c, r*cc); err != nil {
				return err
			}
			s.kernels++
			s.bytes += n*ds + n + int64(r*cc)
		}
		if row && col && !s.b.twoKernelMXFP8 && kernels.MXFP8BothFits(cfg.Input, cfg.Rows, cfg.Cols, p.x, p.row, p.rowSc, p.col, p.colSc) {
			// One kernel reading the input once: one launch and one
			// input read fewer than counted above.
			p.mxBoth = true
			s.kernels--
			s.bytes -= n * ds
		}
	}
	return nil
}

// initialState is the kernels' state with the given scale (amax scratch,
// amax and scale_inv zero).
func initialState(scale float32) []byte {
	b := make([]byte, kernels.StateBytes)
	binary.LittleEndian.PutUint32(b[kernels.StateScaleOffset:], math.Float32bits(scale))
	return b
}

func (s *Step) buffers() []cuda.Buffer {
	var out []cuda.Buffer
	for _, p := range s.parts {
		out = append(out, p.x, p.st, p.hist, p.row, p.col, p.sinv, p.rowSc, p.colSc)
	}
	return out
}

// free releases the step's graph and buffers.
func (s *Step) free(c *cuda.Ctx) error {
	var first error
	if s.graphOK {
		first = c.DestroyGraphExec(s.graph)
		s.graphOK = false
	}
	for _, b := range s.buffers() {
		if err := c.Free(b); err != nil && first == nil {
			first = err
		}
	}
	s.parts = nil
	s.closed = true
	return first
}

// Close frees the step's device memory.
func (s *Step) Close() error {
	if s.closed {
		return nil
	}
	return s.b.dev.Do(s.free)
}

// Kernels is the number of kernel launches of one step.
func (s *Step) Kernels() int { return s.kernels }

// BytesMoved is what one step reads and writes in device memory at the
// least: each kernel's input read once and its outputs written once.
func (s *Step) BytesMoved() int64 { return s.bytes }

func (s *Step) part(i int) (*part, error) {
	if s.closed {
		return nil, fmt.Errorf("cuda step is closed")
	}
	if i < 0 || i >= len(s.parts) {
		return nil, fmt.Errorf("cuda step has %d tensors, no tensor %d", len(s.parts), i)
	}
	return s.parts[i], nil
}

// SetInput copies x into tensor i's input buffer. It must have the
// tensor's shape and fit its input type exactly.
func (s *Step) SetInput(ctx context.Context, i int, x quant.Tensor) error {
	p, err := s.part(i)
	if err != nil {
		return err
	}
	raw, err := p.encode(x)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.b.dev.Do(func(c *cuda.Ctx) error { return c.CopyToDevice(p.x, raw) })
}

func (p *part) encode(x quant.Tensor) ([]byte, error) {
	if err := x.Validate(); err != nil {
		return nil, err
	}
	if x.Rows != p.cfg.Rows || x.Cols != p.cfg.Cols {
		return nil, fmt.Errorf("input [%d, %d] for a step of [%d, %d]", x.Rows, x.Cols, p.cfg.Rows, p.cfg.Cols)
	}
	if !fits(x.Data, p.cfg.Input) {
		return nil, fmt.Errorf("input values are not all exactly representable in %v", p.cfg.Input)
	}
	raw := make([]byte, p.n*p.cfg.Input.Size())
	encodeInput(raw, x.Data, p.cfg.Input)
	return raw, nil
}

// fits reports whether every value of x is exactly representable in dt.
func fits(x []float32, dt kernels.DType) bool {
	switch dt {
	case kernels.F32:
		return true
	case kernels.BF16:
		return InputType(x) == kernels.BF16
	default:
		t := InputType(x)
		return t == kernels.BF16 || t == kernels.F16
	}
}

// SetState copies a delayed-scaling state (scale and amax history) into
// tensor i's device state; other schemes keep no state and ignore it.
func (s *Step) SetState(ctx context.Context, i int, st *quant.State) error {
	p, err := s.part(i)
	if err != nil {
		return err
	}
	if p.plan.Scheme != quant.DelayedScaling {
		return nil
	}
	if err := st.Check(p.cfg.Request.Recipe); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.b.dev.Do(func(c *cuda.Ctx) error { return p.setState(c, st) })
}

func (p *part) setState(c *cuda.Ctx, st *quant.State) error {
	if err := c.CopyToDevice(p.st, initialState(st.Scale)); err != nil {
		return fmt.Errorf("setting the state: %w", err)
	}
	if err := cuda.Upload(c, p.hist, st.AmaxHistory); err != nil {
		return fmt.Errorf("setting the amax history: %w", err)
	}
	return nil
}

// State copies tensor i's delayed-scaling state back into st.
func (s *Step) State(ctx context.Context, i int, st *quant.State) error {
	p, err := s.part(i)
	if err != nil {
		return err
	}
	if p.plan.Scheme != quant.DelayedScaling {
		return fmt.Errorf("scheme %s keeps no state", p.plan.Scheme)
	}
	if err := st.Check(p.cfg.Request.Recipe); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.b.dev.Do(func(c *cuda.Ctx) error {
		raw := make([]byte, kernels.StateBytes)
		if err := c.CopyToHost(raw, p.st); err != nil {
			return err
		}
		st.Scale = f32(raw, kernels.StateScaleOffset)
		return cuda.Download(c, st.AmaxHistory, p.hist)
	})
}

// Run runs the step once and waits for it: eagerly, or as a replay of its
// graph (captured on the first graph run).
func (s *Step) Run(ctx context.Context, graph bool) error {
	if _, err := s.part(0); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.b.dev.Do(func(c *cuda.Ctx) error {
		var err error
		if graph {
			err = s.launchGraph(c)
		} else {
			err = s.enqueue(c)
		}
		if err != nil {
			return err
		}
		return c.StreamSynchronize(s.b.stream)
	})
}

// capture captures the step into a graph once.
func (s *Step) capture(c *cuda.Ctx) error {
	if s.graphOK {
		return nil
	}
	g, err := c.Capture(s.b.stream, func() error { return s.enqueue(c) })
	if err != nil {
		return fmt.Errorf("capturing the step: %w", err)
	}
	s.graph, s.graphOK = g, true
	return nil
}

func (s *Step) launchGraph(c *cuda.Ctx) error {
	if err := s.capture(c); err != nil {
		return err
	}
	return c.LaunchGraph(s.graph, s.b.stream)
}

// enqueue queues the step's launches on the backend's stream.
func (s *Step) enqueue(c *cuda.Ctx) error {
	for i, p := range s.parts {
		if err := p.enqueue(c, s.b.set, s.b.stream); err != nil {
			return fmt.Errorf("tensor %d: %w", i, err)
		}
	}
	return nil
}

func (p *part) enqueue(c *cuda.Ctx, set *kernels.Set, st cuda.Stream) error {
	dt, rows, cols := p.cfg.Input, p.cfg.Rows, p.cfg.Cols
	switch p.plan.Scheme {
	case quant.Float8CurrentScaling:
		if err := set.Amax(c, st, dt, p.x, p.n, p.st, p.f, p.plan.Epsilon, p.plan.Power2Scales); err != nil {
			return err
		}
		return p.cast(c, set, st, cuda.Buffer{})
	case quant.DelayedScaling:
		if err := p.cast(c, set, st, p.hist); err != nil {
			return err
		}
		if !p.cfg.EndStep {
			return nil
		}
		d := p.plan.Delayed
		return set.DelayedUpdate(c, st, p.hist, d.AmaxHistoryLen, p.st, p.f, d.Margin, d.AmaxComputeAlgo == quant.AmaxComputeMostRecent)
	case quant.MXFP8BlockScaling:
		ocp := p.plan.Rounding == scaling.RoundingOCP
		if p.mxBoth {
			return set.MXFP8Both(c, st, dt, p.x, rows, cols, p.row, p.rowSc, p.col, p.colSc, p.f, ocp, p.st)
		}
		if p.usage&quant.UsageRowwise != 0 {
			if err := set.MXFP8(c, st, dt, p.x, rows, cols, p.row, p.rowSc, false, p.f, ocp, p.st); err != nil {
				return err
			}
		}
		if p.usage&quant.UsageColumnwise != 0 {
			return set.MXFP8(c, st, dt, p.x, rows, cols, p.col, p.colSc, true, p.f, ocp, p.st)
		}
		return nil
	}
	return fmt.Errorf("scheme %s: %w", p.plan.Scheme, ErrNotImplemented)
}

// cast is the per-tensor cast: rowwise alone, or the fused cast+transpose
// when the columnwise operand is wanted (with or without the rowwise).
func (p *part) cast(c *cuda.Ctx, set *kernels.Set, st cuda.Stream, hist cuda.Buffer) error {
	if p.usage == quant.UsageRowwise {
		return set.Cast(c, st, p.cfg.Input, p.x, p.n, p.st, p.row, p.sinv, hist, p.f)
	}
	return set.CastTranspose(c, st, p.cfg.Input, p.x, p.cfg.Rows, p.cfg.Cols, p.st, p.row, p.col, p.sinv, hist, p.f)
}

// Snapshot returns every output and state byte of the step (codes, scales,
// state, history), to compare runs.
func (s *Step) Snapshot(ctx context.Context) ([]byte, error) {
	if _, err := s.part(0); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []byte
	err := s.b.dev.Do(func(c *cuda.Ctx) error {
		var err error
		out, err = s.snapshot(c)
		return err
	})
	return out, err
}

func (s *Step) snapshot(c *cuda.Ctx) ([]byte, error) {
	var out []byte
	for _, p := range s.parts {
		for _, b := range []cuda.Buffer{p.st, p.hist, p.row, p.col, p.sinv, p.rowSc, p.colSc} {
			if b.Ptr() == 0 {
				continue
			}
			raw := make([]byte, b.Size())
			if err := c.CopyToHost(raw, b); err != nil {
				return nil, fmt.Errorf("reading step outputs: %w", err)
			}
			out = append(out, raw...)
		}
	}
	return out, nil
}

// Result reads tensor i's quantized result. A DelayedScaling step with
// EndStep has already replaced the scale its cast used, so it has no
// Result: compare its Snapshot and State instead.
func (s *Step) Result(ctx context.Context, i int) (*quant.Result, error) {
	p, err := s.part(i)
	if err != nil {
		return nil, err
	}
	if p.plan.Scheme == quant.DelayedScaling && p.cfg.EndStep {
		return nil, fmt.Errorf("a delayed-scaling step that ends with the update has no result (its scale is already the next step's)")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var res *quant.Result
	err = s.b.dev.Do(func(c *cuda.Ctx) error {
		var err error
		res, err = p.result(c)
		return err
	})
	return res, err
}

func f32(b []byte, off int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[off:])) }

func download(c *cuda.Ctx, b cuda.Buffer, n int) ([]byte, error) {
	out := make([]byte, n)
	if err := c.CopyToHost(out, b); err != nil {
		return nil, err
	}
	return out, nil
}

func (p *part) result(c *cuda.Ctx) (*quant.Result, error) {
	rows, cols := p.cfg.Rows, p.cfg.Cols
	st, err := download(c, p.st, kernels.StateBytes)
	if err != nil {
		return nil, fmt.Errorf("reading the state: %w", err)
	}
	amax := f32(st, kernels.StateAmaxOffset)
	res := &quant.Result{Plan: p.plan, Role: p.cfg.Request.Role, Rows: rows, Cols: cols, Amax: amax}
	newOperand := func(columnwise bool, data cuda.Buffer) (*quant.Operand, error) {
		o := &quant.Operand{Element: p.plan.Element, Rows: rows, Cols: cols, Scales: p.plan.Scales, Amax: amax}
		if columnwise && p.plan.ColumnwiseTransposed {
			o.Rows, o.Cols, o.Transposed = cols, rows, true
		}
		o.ScaleRows, o.ScaleCols = p.plan.ScaleShape(rows, cols, columnwise)
		var err error
		if o.Data, err = download(c, data, p.n); err != nil {
			return nil, fmt.Errorf("reading codes: %w", err)
		}
		return o, nil
	}
	switch p.plan.Scheme {
	case quant.Float8CurrentScaling, quant.DelayedScaling:
		sinv, err := download(c, p.sinv, 4)
		if err != nil {
			return nil, fmt.Errorf("reading scale_inv: %w", err)
		}
		for _, u := range []quant.Usage{quant.UsageRowwise, quant.UsageColumnwise} {
			if p.usage&u == 0 {
				continue
			}
			data := p.row
			if u == quant.UsageColumnwise {
				data = p.col
			}
			o, err := newOperand(u == quant.UsageColumnwise, data)
			if err != nil {
				return nil, err
			}
			o.Scale = f32(st, kernels.StateScaleOffset)
			o.ScaleInv = []float32{f32(sinv, 0)}
			if u == quant.UsageRowwise {
				res.Rowwise = o
			} else {
				res.Columnwise = o
			}
		}
	case quant.MXFP8BlockScaling:
		for _, u := range []quant.Usage{quant.UsageRowwise, quant.UsageColumnwise} {
			if p.usage&u == 0 {
				continue
			}
			colwise := u == quant.UsageColumnwise
			data, sc := p.row, p.rowSc
			if colwise {
				data, sc = p.col, p.colSc
			}
			o, err := newOperand(colwise, data)
			if err != nil {
				return nil, err
			}
			if o.ScaleCodes, err = download(c, sc, o.ScaleRows*o.ScaleCols); err != nil {
				return nil, fmt.Errorf("reading scales: %w", err)
			}
			// The GEMM layout; MXFP8's columnwise scales are swizzled as
			// the transposed matrix (package quant's layout rules).
			src, r, cc := o.ScaleCodes, o.ScaleRows, o.ScaleCols
			if colwise {
				src, r, cc = swizzle.Transpose(src, r, cc), cc, r
			}
			if o.Swizzled, err = swizzle.Swizzle(src, r, cc); err != nil {
				return nil, fmt.Errorf("swizzling scales: %w", err)
			}
			if colwise {
				res.Columnwise = o
			} else {
				res.Rowwise = o
			}
		}
	}
	return res, nil
}
