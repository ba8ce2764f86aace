// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"context"
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/reference"
	"github.com/kquant/kquant/kernels"
)

// GroupedConfig describes a grouped (MoE) quantize step: one [Rows, Cols]
// input split along its rows into len(Splits) groups, each quantized as a
// tensor of its own.
type GroupedConfig struct {
	// Request gives the recipe, role, usage and (for NVFP4's stochastic
	// rounding) the seed; its State is not read.
	Request quant.Request
	Rows    int
	Cols    int
	Input   kernels.DType
	// Splits are the group row counts the step is built with. The step
	// reads the split sizes from device memory (SetSplits), so that one
	// captured graph replays any split vector of the same group count.
	Splits []int
	// EndStep appends each group's delayed-scaling update (see Config).
	EndStep bool
}

// groupedKernel is the grouped launcher family of a plan, if any.
type groupedKernel int

const (
	groupedNone groupedKernel = iota
	// groupedNVFP4: kernels.GroupedNVFP4, either or both operands of 1D
	// NVFP4 (per-group amax, tensor scale and stochastic-rounding streams,
	// the columnwise RHT); groupedNVFP4TwoD: kernels.GroupedNVFP4TwoD,
	// 16x16 weights (grouped_nvfp4.go).
	groupedNVFP4
	groupedNVFP4TwoD
	// groupedBlock: kernels.GroupedBlockRow, GroupedBlockCol and
	// GroupedBlockRowCol, either or both operands of 1x128 block scaling.
	groupedBlock
	// groupedBlock2D: kernels.GroupedBlock2D, either or both operands of
	// block scaling's 128x128 weight tiles.
	groupedBlock2D
	// groupedCurrent: kernels.GroupedCurrent, either or both operands of
	// Float8CurrentScaling (per-group amax, scale and scale_inv).
	groupedCurrent
	// groupedMXFP8: kernels.GroupedMXFP8, either or both operands of 1D
	// MXFP8 (per-group padded and swizzled scales, amax); groupedMXFP82D:
	// kernels.GroupedMXFP82D, 32x32 weight tiles, the same outputs.
	groupedMXFP8
	groupedMXFP82D
	// groupedDelayed: kernels.GroupedDelayed, either or both operands of
	// DelayedScaling (per-group state on the device: grouped_delayed.go).
	groupedDelayed
)

// groupedKernelFor picks the grouped kernels of plan and the operands they
// cover. The kernels package has grouped launchers for block scaling (1x128
// and 128x128 weight tiles), current scaling, delayed scaling, MXFP8 (1D
// and 32x32 weights) and NVFP4 (1D and 16x16 weights), both operands; a
// plan without one has no grouped step (ErrNotImplemented).
func groupedKernelFor(p quant.Plan) (groupedKernel, quant.Usage) {
	switch {
	case p.Scheme == quant.NVFP4BlockScaling && p.BlockRows == 1:
		return groupedNVFP4, quant.UsageBoth
	case p.Scheme == quant.NVFP4BlockScaling && p.BlockRows == 16:
		return groupedNVFP4TwoD, quant.UsageBoth
	case p.Scheme == quant.Float8BlockScaling && p.BlockRows == 1:
		return groupedBlock, quant.UsageBoth
	case p.Scheme == quant.Float8BlockScaling && p.BlockRows == 128:
		return groupedBlock2D, quant.UsageBoth
	case p.Scheme == quant.Float8CurrentScaling:
		return groupedCurrent, quant.UsageBoth
	case p.Scheme == quant.DelayedScaling:
		return groupedDelayed, quant.UsageBoth
	case p.Scheme == quant.MXFP8BlockScaling && p.BlockRows == 1:
		return groupedMXFP8, quant.UsageBoth
	case p.Scheme == quant.MXFP8BlockScaling && p.BlockRows == 32:
		return groupedMXFP82D, quant.UsageBoth
	}
	return groupedNone, 0
}

// grouped is the grouped-kernel state of a Step.
type grouped struct {
	cfg  GroupedConfig
	plan quant.Plan
	// fam allocates, launches and reads the step's scheme.
	fam    family
	kernel groupedKernel
	groups int
	seed   uint64
	// x is the whole input; splits the device split sizes (int32); ws the
	// offsets, error flag and per-group amaxes.
	x, splits cuda.Buffer
	ws        kernels.GroupWorkspace
	// out, scales and swz are the groups' rowwise codes, scales and
	// swizzled scales, concatenated; colOut, colScales and colSwz the
	// columnwise ones; scale and scaleInv current scaling's per-group
	// float32 scales (delayed scaling's per-group state scales); tiles
	// GroupedMXFP8's scratch; hist delayed scaling's amax histories,
	// histLen entries per group (grouped kernels only).
	out, scales, swz          cuda.Buffer
	colOut, colScales, colSwz cuda.Buffer
	scale, scaleInv, tiles    cuda.Buffer
	hist                      cuda.Buffer
	histLen                   int
	// amScratch receives one group's input amax when a result is read
	// (block scaling has no amax of its own).
	amScratch cuda.Buffer
	outs      []cuda.Buffer
	// host is the split vector last set.
	host []int32
}

// NewGroupedStep allocates a grouped step. Close it when done.
func (b *Backend) NewGroupedStep(ctx context.Context, cfg GroupedConfig) (*Step, error) {
	return onDevice(ctx, b, func(c *cuda.Ctx) (*Step, error) { return b.newGroupedStep(c, cfg) })
}

func (b *Backend) newGroupedStep(c *cuda.Ctx, cfg GroupedConfig) (*Step, error) {
	plan, err := cfg.Request.Recipe.Plan(cfg.Request.Role)
	if err != nil {
		return nil, fmt.Errorf("grouped cuda step: %w", err)
	}
	if err := checkPlan(plan); err != nil {
		return nil, fmt.Errorf("grouped cuda step: %w", err)
	}
	if cfg.Request.NoOp != nil || cfg.Request.Output != nil {
		return nil, fmt.Errorf("grouped cuda step: %w", quant.ErrNoOpGrouped)
	}
	var states []*quant.State
	if plan.Scheme == quant.DelayedScaling {
		states = make([]*quant.State, len(cfg.Splits))
	}
	if err := quant.CheckSplits(plan.Scheme, cfg.Rows, cfg.Splits, states); err != nil {
		return nil, fmt.Errorf("grouped cuda step: %w", err)
	}
	if len(cfg.Splits) > kernels.MaxGroups {
		return nil, fmt.Errorf("grouped cuda step: %d groups, at most %d", len(cfg.Splits), kernels.MaxGroups)
	}
	if cfg.Rows <= 0 || cfg.Cols <= 0 {
		return nil, fmt.Errorf("grouped cuda step: empty tensor [%d, %d]", cfg.Rows, cfg.Cols)
	}
	s := &Step{b: b}
	if err := s.addGrouped(c, cfg, plan); err != nil {
		_ = s.free(c)
		return nil, fmt.Errorf("grouped cuda step [%d, %d], %d groups: %w", cfg.Rows, cfg.Cols, len(cfg.Splits), err)
	}
	return s, nil
}

func (s *Step) addGrouped(c *cuda.Ctx, cfg GroupedConfig, plan quant.Plan) error {
	kernel, covered := groupedKernelFor(plan)
	if kernel == groupedNone {
		return fmt.Errorf("scheme %s: no grouped kernel: %w", plan.Scheme, ErrNotImplemented)
	}
	fam, err := familyOf(plan.Scheme)
	if err != nil {
		return err
	}
	g := &grouped{cfg: cfg, plan: plan, fam: fam, kernel: kernel, groups: len(cfg.Splits), seed: cfg.Request.Seed}
	s.grp = g
	rows, cols, ds := cfg.Rows, cfg.Cols, cfg.Input.Size()
	if g.x, err = s.alloc(c, rows*cols*ds); err != nil {
		return err
	}
	g.host = make([]int32, g.groups)
	for i, n := range cfg.Splits {
		g.host[i] = int32(n)
	}
	covered &= cfg.Request.EffectiveUsage()
	if covered != 0 {
		out := func(size int) (cuda.Buffer, error) {
			buf, err := s.alloc(c, size)
			if err == nil {
				g.outs = append(g.outs, buf)
			}
			return buf, err
		}
		if g.splits, err = s.alloc(c, 4*g.groups); err != nil {
			return err
		}
		if err := cuda.Upload(c, g.splits, g.host); err != nil {
			return err
		}
		if g.ws.Offsets, err = out(4 * (g.groups + 1)); err != nil {
			return err
		}
		if g.ws.Flag, err = s.alloc(c, 4); err != nil {
			return err
		}
		// Every step rewrites the flag; zero it so that GroupError before
		// the first run reports nothing.
		if err := c.Memset(g.ws.Flag, 0); err != nil {
			return err
		}
		if g.amScratch, err = s.alloc(c, 4); err != nil {
			return err
		}
		// The offsets kernel reads the split sizes and writes the offsets.
		s.kernels++
		s.bytes += 4*int64(g.groups) + 4*int64(g.groups+1)
		if err := g.fam.allocGrouped(s, c, g, covered, out); err != nil {
			return err
		}
	}
	return nil
}

func roundUp(a, m int) int { return ceilDiv(a, m) * m }
func ceilDiv(a, m int) int { return (a + m - 1) / m }

// SetSplits copies a split-size vector (one int32 row count per group, as
// a router would leave it in device memory) into the step's device split
// buffer; the next run, eager or a replay of the captured graph, uses it.
// It checks only the group count: a group that breaks the scheme's
// alignment is found by the step on the device and reported by
// GroupError.
func (s *Step) SetSplits(ctx context.Context, splits []int32) error {
	if err := s.usable(); err != nil {
		return err
	}
	g := s.grp
	if g == nil {
		return fmt.Errorf("not a grouped step")
	}
	if len(splits) != g.groups {
		return fmt.Errorf("%d split sizes for a step of %d groups", len(splits), g.groups)
	}
	return onDevice0(ctx, s.b, func(c *cuda.Ctx) error {
		copy(g.host, splits)
		return cuda.Upload(c, g.splits, splits)
	})
}

// GroupError reads the grouped step's device error flag after a run and
// returns an error naming the first misaligned group (or saying that the
// split sizes do not add up to the rows), or nil. Steps without a grouped
// kernel check their split sizes on the host when built and return nil.
func (s *Step) GroupError(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	if s.grp == nil || s.grp.ws.Flag.Ptr() == 0 {
		return nil
	}
	return onDevice0(ctx, s.b, func(c *cuda.Ctx) error { return s.grp.err(c) })
}

func (g *grouped) err(c *cuda.Ctx) error {
	if g.ws.Flag.Ptr() == 0 {
		return nil
	}
	return kernels.GroupError(c, g.ws.Flag, g.host, g.plan.Scheme.GroupAlignment())
}

// GroupResults reads every group's result of the last run, for the split
// sizes last set.
func (s *Step) GroupResults(ctx context.Context) ([]*quant.Result, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if s.grp == nil {
		return nil, fmt.Errorf("not a grouped step")
	}
	if s.grp.cfg.EndStep && s.grp.plan.Scheme == quant.DelayedScaling {
		return nil, fmt.Errorf("a delayed-scaling step that ends with the update has no result (its scale is already the next step's)")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []*quant.Result
	err := s.b.dev.Do(func(c *cuda.Ctx) error {
		var err error
		out, err = s.groupResults(ctx, c)
		return err
	})
	return out, err
}

func (s *Step) groupResults(ctx context.Context, c *cuda.Ctx) ([]*quant.Result, error) {
	g := s.grp
	if err := c.StreamSynchronize(s.b.stream); err != nil {
		return nil, err
	}
	if err := g.err(c); err != nil {
		return nil, err
	}
	r, err := g.download(c)
	if err != nil {
		return nil, err
	}
	rows, cols := g.cfg.Rows, g.cfg.Cols
	out := make([]*quant.Result, g.groups)
	off := 0
	for i, n32 := range g.host {
		n := int(n32)
		if n < 0 || off+n > rows {
			return nil, fmt.Errorf("group %d: %d rows at row %d of %d", i, n, off, rows)
		}
		if n == 0 {
			// Nothing was launched for an empty group.
			res, err := g.fam.emptyGroup(ctx, g, r, i)
			if err != nil {
				return nil, fmt.Errorf("group %d: %w", i, err)
			}
			out[i] = res
			continue
		}
		res := &quant.Result{Plan: g.plan, Role: g.cfg.Request.Role, Rows: n, Cols: cols}
		if err := g.fam.readGroup(s, c, r, res, i, off, n); err != nil {
			return nil, err
		}
		out[i] = res
		off += n
	}
	return out, nil
}

// groupOutputs are a grouped step's outputs, downloaded whole (nil for a
// buffer the step does not have), and the cursors of the families whose
// per-group scale matrices are concatenated (MXFP8, block 128x128).
type groupOutputs struct {
	data, scales, swz, amax, colData, colScales, colSwz, scale, scaleInv []byte
	// rsOff and csOff walk the concatenated per-group rowwise and
	// columnwise scale matrices (each group's padded matrix, empty groups
	// none).
	rsOff, csOff int
}

// download reads every output of g.
func (g *grouped) download(c *cuda.Ctx) (*groupOutputs, error) {
	r := &groupOutputs{}
	for _, b := range []struct {
		buf cuda.Buffer
		dst *[]byte
	}{
		{g.out, &r.data}, {g.scales, &r.scales}, {g.swz, &r.swz}, {g.ws.Amax, &r.amax}, {g.colOut, &r.colData},
		{g.colScales, &r.colScales}, {g.colSwz, &r.colSwz}, {g.scale, &r.scale}, {g.scaleInv, &r.scaleInv},
	} {
		if b.buf.Ptr() == 0 {
			continue
		}
		var err error
		if *b.dst, err = download(c, b.buf, b.buf.Size()); err != nil {
			return nil, fmt.Errorf("reading grouped outputs: %w", err)
		}
	}
	return r, nil
}

// emptyResult is the result of an empty group (no codes, amax 0): the
// reference's, with state st where it is not nil (delayed scaling's group
// state).
func emptyResult(ctx context.Context, g *grouped, st *quant.State) (*quant.Result, error) {
	req := g.cfg.Request
	if st != nil {
		req.State = st
	}
	return reference.New().Quantize(ctx, req, quant.NewTensor(0, g.cfg.Cols))
}

// referenceEmpty gives a family whose empty group is the reference's
// result (emptyResult) its emptyGroup; the families embed it.
type referenceEmpty struct{}

// emptyGroup is the reference's result of an empty group.
func (referenceEmpty) emptyGroup(ctx context.Context, g *grouped, _ *groupOutputs, _ int) (*quant.Result, error) {
	return emptyResult(ctx, g, nil)
}

// wanted is the buffers of g's operands in covered.
func (g *grouped) wanted(covered quant.Usage) []opBufs {
	return wantedOps(covered, opBufs{false, &g.out, &g.scales, &g.swz}, opBufs{true, &g.colOut, &g.colScales, &g.colSwz})
}

// eachOperand fills res's operands of group i (rows [off, off+n)) from
// the step's downloaded outputs r: for each one downloaded a new operand
// with the plan's element and scales, its shape (the columnwise one
// [cols, n] where transposed), scale shape, res.Amax and its codes at
// cols*off, which fill completes from the operand's scales sc, swizzled
// scales sw and at, its offset in the groups' concatenated scale
// matrices.
func (g *grouped) eachOperand(r *groupOutputs, res *quant.Result, off, n int, transposed bool, fill func(o *quant.Operand, colwise bool, sc, sw []byte, at *int)) {
	cols := g.cfg.Cols
	for _, colwise := range []bool{false, true} {
		src, sc, sw, at := r.data, r.scales, r.swz, &r.rsOff
		if colwise {
			src, sc, sw, at = r.colData, r.colScales, r.colSwz, &r.csOff
		}
		if src == nil {
			continue
		}
		o := &quant.Operand{Element: g.plan.Element, Rows: n, Cols: cols, Scales: g.plan.Scales, Amax: res.Amax}
		if colwise && transposed {
			o.Rows, o.Cols, o.Transposed = cols, n, true
		}
		o.ScaleRows, o.ScaleCols = g.plan.ScaleShape(n, cols, colwise)
		o.Data = src[off*cols : (off+n)*cols]
		fill(o, colwise, sc, sw, at)
		if colwise {
			res.Columnwise = o
		} else {
			res.Rowwise = o
		}
	}
}

// inputAmax is the amax of group i's input (rows [off, off+n)) for a step
// that computes none (block scaling; NVFP4 with the RHT columnwise operand
// alone): one launch now, outside the step, into g.amScratch.
func (s *Step) inputAmax(c *cuda.Ctx, i, off, n int) (float32, error) {
	g := s.grp
	cols, ds := g.cfg.Cols, g.cfg.Input.Size()
	x := g.x.Slice(off*cols*ds, n*cols*ds)
	if err := s.b.set.NVFP4Amax(c, s.b.stream, g.cfg.Input, x, n, cols, g.amScratch, false, 0); err != nil {
		return 0, fmt.Errorf("group %d amax: %w", i, err)
	}
	if err := c.StreamSynchronize(s.b.stream); err != nil {
		return 0, err
	}
	raw, err := download(c, g.amScratch, 4)
	if err != nil {
		return 0, err
	}
	return f32(raw, 0), nil
}

// QuantizeGrouped implements quant.Backend with one grouped step: the
// split sizes go to device memory and grouped kernels quantize every group
// in a fixed number of launches (NVFP4 1D and 2D, current and delayed
// scaling, MXFP8 1D and 2D, block scaling 1x128 and 128x128). Delayed
// scaling uploads every group's state and reads back the amax it recorded
// (history entry 0). The device's alignment flag
// is read after the step.
//
// NVFP4's stochastic rounding draws group g's Philox stream (counter word
// 3 = g, elements numbered within the group) in the grouped kernels, as
// the reference does.
func (b *Backend) QuantizeGrouped(ctx context.Context, req quant.Request, x quant.Tensor, splits []int, states []*quant.State) ([]*quant.Result, error) {
	plan, err := quant.CheckGroupedRequest(req, x, splits, states)
	if err != nil {
		return nil, fmt.Errorf("grouped quantize: %w", err)
	}
	if err := checkPlan(plan); err != nil {
		return nil, fmt.Errorf("grouped quantize: %w", err)
	}
	if x.Rows == 0 || x.Cols == 0 {
		return reference.New().QuantizeGrouped(ctx, req, x, splits, states)
	}
	cfg := GroupedConfig{Request: req, Rows: x.Rows, Cols: x.Cols, Input: InputType(x.Data), Splits: splits}
	raw := make([]byte, x.Rows*x.Cols*cfg.Input.Size())
	encodeInput(raw, x.Data, cfg.Input)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []*quant.Result
	err = b.dev.Do(func(c *cuda.Ctx) error {
		s, err := b.newGroupedStep(c, cfg)
		if err != nil {
			return err
		}
		defer s.free(c)
		if err := c.CopyToDevice(s.grp.x, raw); err != nil {
			return fmt.Errorf("copying the input: %w", err)
		}
		if s.grp.delayedKernel() {
			out, err = b.quantizeGroupedDelayed(ctx, c, s, req, states)
			return err
		}
		if err := s.enqueue(c); err != nil {
			return err
		}
		out, err = s.groupResults(ctx, c)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("grouped quantize %s [%d, %d], %d groups on %s: %w", plan.Scheme, x.Rows, x.Cols, len(splits), Name, err)
	}
	return out, nil
}
