// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/kernels"
)

// Config describes one tensor of a Step.
type Config struct {
	// Request gives the recipe, role and usage; its State, Seed and Output
	// are not read (states are set with Step.SetState). A Request.NoOp
	// gives the tensor a device-side no-op flag, set to *NoOp when the
	// step is made and with Step.SetNoOp after: every kernel of the
	// tensor's launches reads it when it runs, and a value of exactly 1
	// skips them (quant.Skipped), in a graph replay too.
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
	flag := c.Request.NoOp != nil
	c.Request.State, c.Request.Seed, c.Request.NoOp, c.Request.Output = nil, 0, nil, nil
	return fmt.Sprintf("%+v noOp:%v", c, flag)
}

// Step is a fixed sequence of kernel launches over device buffers bound to
// one or more tensors of fixed shapes. It runs eagerly or as a CUDA graph
// captured on first use; either way nothing is allocated, synchronised or
// read back on the host while it runs. A Step belongs to its Backend and is
// not for concurrent use.
type Step struct {
	b *Backend
	// grp is the grouped (MoE) state of a step built by NewGroupedStep,
	// which has no parts.
	grp     *grouped
	parts   []*part
	kernels int
	bytes   int64
	size    int64 // device bytes held
	// owned are the buffers the step allocated (parts may hold slices of
	// them, which are not freed on their own).
	owned   []cuda.Buffer
	graph   cuda.GraphExec
	graphOK bool
	closed  bool
}

// part is one tensor's buffers and launches.
type part struct {
	cfg  Config
	plan quant.Plan
	// fam allocates, launches and reads the part's scheme.
	fam   family
	f     kernels.Format // the FP8 format (not used by NVFP4)
	usage quant.Usage
	n     int
	// seed seeds NVFP4's stochastic rounding (Request.Seed); a captured
	// graph keeps the seed it was captured with.
	seed uint64
	// x is the input; st the kernels' per-tensor state (amax scratch,
	// amax, scale, scale_inv); hist the delayed-scaling amax history;
	// noop the no-op flag (Config.Request.NoOp), the zero Buffer without.
	x, st, hist, noop cuda.Buffer
	// row and col are the codes; sinv the per-tensor decode scale shared
	// by both; rowSc and colSc the scale matrices (E8M0 for MXFP8, float32
	// for block FP8, E4M3 for NVFP4); rowSwz and colSwz their GEMM
	// (swizzled) layout for MXFP8 and NVFP4.
	row, col, sinv, rowSc, colSc, rowSwz, colSwz cuda.Buffer
	// amR and amC are NVFP4's tensor amaxes (float32 bits) of the rowwise
	// and columnwise operands; amC is amR's buffer unless the columnwise
	// operand takes the RHT. amX receives the input's amax when the
	// result is read and no step kernel computed it (block FP8, NVFP4
	// columnwise with the RHT).
	amR, amC, amX cuda.Buffer
	// mxBoth: an MXFP8 step wanting both operands runs the fused kernel
	// (one read of the input) rather than the two one-operand kernels.
	mxBoth bool
	// mx2D: MXFP8 with 32x32 weight tiles, one kernel for the operands
	// wanted (kernels.MXFP82D).
	mx2D bool
	// outs are the output and state buffers Snapshot reads, in order.
	outs []cuda.Buffer
}

// NewStep allocates a step for the given tensors. Close it when done.
func (b *Backend) NewStep(ctx context.Context, cfgs ...Config) (*Step, error) {
	return onDevice(ctx, b, func(c *cuda.Ctx) (*Step, error) { return b.newStep(c, cfgs) })
}

// onDevice runs fn on the device's thread, unless ctx is already done, and
// returns what fn returned.
func onDevice[T any](ctx context.Context, b *Backend, fn func(c *cuda.Ctx) (T, error)) (T, error) {
	var out T
	if err := ctx.Err(); err != nil {
		return out, err
	}
	err := b.dev.Do(func(c *cuda.Ctx) error {
		var err error
		out, err = fn(c)
		return err
	})
	return out, err
}

// onDevice0 is onDevice for a function without a result: the one way a
// Step method that returns only an error reaches the device thread.
func onDevice0(ctx context.Context, b *Backend, fn func(c *cuda.Ctx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.dev.Do(fn)
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
	fam, err := familyOf(plan.Scheme)
	if err != nil {
		return err
	}
	p := &part{cfg: cfg, plan: plan, fam: fam, usage: cfg.Request.EffectiveUsage(), n: cfg.Rows * cfg.Cols}
	if plan.Element != element.E2M1 {
		p.f, _ = format(plan.Element)
	}
	s.parts = append(s.parts, p)
	if p.x, err = s.alloc(c, p.n*cfg.Input.Size()); err != nil {
		return err
	}
	if p.st, err = s.out(c, p, kernels.StateBytes); err != nil {
		return err
	}
	if err := c.CopyToDevice(p.st, initialState(1)); err != nil {
		return err
	}
	if cfg.Request.NoOp != nil {
		if p.noop, err = s.alloc(c, kernels.NoOpBytes); err != nil {
			return err
		}
		if err := cuda.Upload(c, p.noop, []float32{*cfg.Request.NoOp}); err != nil {
			return fmt.Errorf("setting the no-op flag: %w", err)
		}
	}
	return p.fam.alloc(s, c, p)
}

// operands returns which operands p produces and how many.
func (p *part) operands() (row, col bool, ops int64) {
	row, col = p.usage&quant.UsageRowwise != 0, p.usage&quant.UsageColumnwise != 0
	if row {
		ops++
	}
	if col {
		ops++
	}
	return row, col, ops
}

// initialState is the kernels' state with the given scale (amax scratch,
// amax and scale_inv zero).
func initialState(scale float32) []byte {
	b := make([]byte, kernels.StateBytes)
	binary.LittleEndian.PutUint32(b[kernels.StateScaleOffset:], math.Float32bits(scale))
	return b
}

// free releases the step's graph and buffers.
func (s *Step) free(c *cuda.Ctx) error {
	var first error
	if s.graphOK {
		first = c.DestroyGraphExec(s.graph)
		s.graphOK = false
	}
	for _, b := range s.owned {
		if err := c.Free(b); err != nil && first == nil {
			first = err
		}
	}
	s.owned, s.parts, s.grp = nil, nil, nil
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

// usable reports whether the step can run (it is not closed).
func (s *Step) usable() error {
	if s.closed {
		return fmt.Errorf("cuda step is closed")
	}
	return nil
}

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
	if s.grp != nil && !s.closed {
		return s.setGroupedInput(ctx, i, x)
	}
	p, err := s.part(i)
	if err != nil {
		return err
	}
	raw, err := p.encode(x)
	if err != nil {
		return err
	}
	return onDevice0(ctx, s.b, func(c *cuda.Ctx) error { return c.CopyToDevice(p.x, raw) })
}

func (p *part) encode(x quant.Tensor) ([]byte, error) {
	return encodeFor(x, p.cfg.Rows, p.cfg.Cols, p.cfg.Input)
}

// setGroupedInput copies x, the whole [rows, cols] input, into a grouped
// step's input buffer (i must be 0).
func (s *Step) setGroupedInput(ctx context.Context, i int, x quant.Tensor) error {
	if i != 0 {
		return fmt.Errorf("a grouped step has one input, not input %d", i)
	}
	g := s.grp
	raw, err := encodeFor(x, g.cfg.Rows, g.cfg.Cols, g.cfg.Input)
	if err != nil {
		return err
	}
	return onDevice0(ctx, s.b, func(c *cuda.Ctx) error { return c.CopyToDevice(g.x, raw) })
}

func encodeFor(x quant.Tensor, rows, cols int, dt kernels.DType) ([]byte, error) {
	if err := x.Validate(); err != nil {
		return nil, err
	}
	if x.Rows != rows || x.Cols != cols {
		return nil, fmt.Errorf("input [%d, %d] for a step of [%d, %d]", x.Rows, x.Cols, rows, cols)
	}
	if !fits(x.Data, dt) {
		return nil, fmt.Errorf("input values are not all exactly representable in %v", dt)
	}
	raw := make([]byte, rows*cols*dt.Size())
	encodeInput(raw, x.Data, dt)
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
// tensor i's device state (in a grouped step group i's); other schemes
// keep no state and ignore it.
func (s *Step) SetState(ctx context.Context, i int, st *quant.State) error {
	if s.grp != nil && s.grp.plan.Scheme != quant.DelayedScaling {
		return nil
	}
	if !s.closed && s.grp != nil {
		if err := st.Check(s.grp.cfg.Request.Recipe); err != nil {
			return err
		}
		return onDevice0(ctx, s.b, func(c *cuda.Ctx) error { return s.grp.setState(c, i, st) })
	}
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
	return onDevice0(ctx, s.b, func(c *cuda.Ctx) error { return p.setState(c, st) })
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
	if !s.closed && s.grp != nil {
		if s.grp.plan.Scheme != quant.DelayedScaling {
			return fmt.Errorf("scheme %s keeps no state", s.grp.plan.Scheme)
		}
		if err := st.Check(s.grp.cfg.Request.Recipe); err != nil {
			return err
		}
		if i < 0 || i >= s.grp.groups {
			return fmt.Errorf("grouped step has %d groups, no group %d", s.grp.groups, i)
		}
		return onDevice0(ctx, s.b, func(c *cuda.Ctx) error {
			all := make([]*quant.State, i+1)
			all[i] = st
			return s.grp.states(c, all)
		})
	}
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
	return onDevice0(ctx, s.b, func(c *cuda.Ctx) error {
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
	if err := s.usable(); err != nil {
		return err
	}
	return onDevice0(ctx, s.b, func(c *cuda.Ctx) error {
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

// enqueue queues the step's launches on the backend's stream: each family's
// (family.enqueue, family.enqueueGrouped).
func (s *Step) enqueue(c *cuda.Ctx) error {
	if s.grp != nil {
		if err := s.grp.fam.enqueueGrouped(c, s.b.set, s.b.stream, s.grp); err != nil {
			return fmt.Errorf("grouped launches: %w", err)
		}
	}
	for i, p := range s.parts {
		if err := p.enqueue(c, s.b.set, s.b.stream); err != nil {
			return fmt.Errorf("tensor %d: %w", i, err)
		}
	}
	return nil
}

// enqueue queues p's launches (family.enqueue), each reading p's no-op
// flag when it has one.
func (p *part) enqueue(c *cuda.Ctx, set *kernels.Set, st cuda.Stream) error {
	if p.noop.Ptr() == 0 {
		return p.fam.enqueue(c, set, st, p)
	}
	return set.WithNoOp(p.noop, func() error { return p.fam.enqueue(c, set, st, p) })
}

// SetNoOp sets tensor i's no-op flag (Config.Request.NoOp) to v, for the
// runs and graph replays that follow: 1 skips the tensor's launches, any
// other value runs them.
func (s *Step) SetNoOp(ctx context.Context, i int, v float32) error {
	p, err := s.part(i)
	if err != nil {
		return err
	}
	if p.noop.Ptr() == 0 {
		return fmt.Errorf("tensor %d of the step has no no-op flag (Config.Request.NoOp)", i)
	}
	return onDevice0(ctx, s.b, func(c *cuda.Ctx) error { return cuda.Upload(c, p.noop, []float32{v}) })
}
