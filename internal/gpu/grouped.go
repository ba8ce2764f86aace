package gpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/reference"
	"github.com/kquant/kquant/internal/quant/scaling"
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
	cfg    GroupedConfig
	plan   quant.Plan
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
	g := &grouped{cfg: cfg, plan: plan, kernel: kernel, groups: len(cfg.Splits), seed: cfg.Request.Seed}
	s.grp = g
	rows, cols, ds := cfg.Rows, cfg.Cols, cfg.Input.Size()
	var err error
	if g.x, err = s.alloc(c, rows*cols*ds); err != nil {
		return err
	}
	g.host = make([]int32, g.groups)
	for i, n := range cfg.Splits {
		g.host[i] = int32(n)
	}
	covered &= cfg.Request.EffectiveUsage()
	n := int64(rows) * int64(cols)
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
		switch g.kernel {
		case groupedNVFP4, groupedNVFP4TwoD:
			if err := s.addGroupedNVFP4(g, covered, out); err != nil {
				return err
			}
		case groupedCurrent:
			if err := s.addGroupedCurrent(c, g, covered, out); err != nil {
				return err
			}
		case groupedMXFP8, groupedMXFP82D:
			if err := s.addGroupedMXFP8(c, g, covered, out); err != nil {
				return err
			}
		case groupedDelayed:
			if err := s.addGroupedDelayed(c, g, covered, out); err != nil {
				return err
			}
		case groupedBlock2D:
			// One pass over the input for either or both operands; the
			// columnwise scales sized for the most padding any split
			// vector can need (the kernel zeroes what a run leaves).
			s.kernels++
			s.bytes += n * int64(ds)
			nkb := ceilDiv(cols, 128)
			if covered&quant.UsageRowwise != 0 {
				sr, sc := kernels.BlockScaleShape(rows, cols, true, false)
				if g.out, err = out(rows * cols); err != nil {
					return err
				}
				if g.scales, err = out(4 * sr * sc); err != nil {
					return err
				}
				s.bytes += n + 4*int64(sr*sc)
			}
			if covered&quant.UsageColumnwise != 0 {
				if g.colOut, err = out(rows * cols); err != nil {
					return err
				}
				if g.colScales, err = out(4 * nkb * kernels.GroupedBlock2DColScaleCols(rows, g.groups)); err != nil {
					return err
				}
				s.bytes += n + 4*int64(nkb*roundUp(ceilDiv(rows, 128), 4))
			}
		case groupedBlock:
			// One pass over the input for either or both operands.
			s.kernels++
			s.bytes += n * int64(ds)
			if covered&quant.UsageRowwise != 0 {
				if g.out, err = out(rows * cols); err != nil {
					return err
				}
				if g.scales, err = out(4 * rows * ceilDiv(cols, 128)); err != nil {
					return err
				}
				s.bytes += n + 4*int64(rows*ceilDiv(cols, 128))
			}
			if covered&quant.UsageColumnwise != 0 {
				if g.colOut, err = out(rows * cols); err != nil {
					return err
				}
				if g.colScales, err = out(4 * ceilDiv(rows, 128) * roundUp(cols, 4)); err != nil {
					return err
				}
				s.bytes += n + 4*int64(ceilDiv(rows, 128)*roundUp(cols, 4))
			}
		}
	}
	return nil
}

func roundUp(a, m int) int { return ceilDiv(a, m) * m }
func ceilDiv(a, m int) int { return (a + m - 1) / m }

// addGroupedCurrent allocates kernels.GroupedCurrent's outputs: per-group
// amax, scale and scale_inv, and the codes of the covered operands.
func (s *Step) addGroupedCurrent(c *cuda.Ctx, g *grouped, covered quant.Usage, out func(int) (cuda.Buffer, error)) error {
	var err error
	rows, cols := g.cfg.Rows, g.cfg.Cols
	for _, b := range []*cuda.Buffer{&g.ws.Amax, &g.scale, &g.scaleInv} {
		if *b, err = out(4 * g.groups); err != nil {
			return err
		}
	}
	n := int64(rows) * int64(cols)
	if covered&quant.UsageRowwise != 0 {
		if g.out, err = out(rows * cols); err != nil {
			return err
		}
		s.bytes += n
	}
	if covered&quant.UsageColumnwise != 0 {
		if g.colOut, err = out(rows * cols); err != nil {
			return err
		}
		s.bytes += n
	}
	// The amax pass and the cast (or cast+transpose) each read the input.
	s.kernels += 2
	s.bytes += 2*n*int64(g.cfg.Input.Size()) + 12*int64(g.groups)
	return nil
}

// addGroupedMXFP8 allocates kernels.GroupedMXFP8's outputs: per-group
// amax, the padded-prefix scratch, and per covered operand its codes and
// the groups' padded scale matrices with their swizzled layouts, sized for
// the most padding any split vector can need, and zeroed so that what no
// split vector writes stays the same from run to run.
func (s *Step) addGroupedMXFP8(c *cuda.Ctx, g *grouped, covered quant.Usage, out func(int) (cuda.Buffer, error)) error {
	var err error
	rows, cols := g.cfg.Rows, g.cfg.Cols
	if g.ws.Amax, err = out(4 * g.groups); err != nil {
		return err
	}
	if g.tiles, err = s.alloc(c, 4*(g.groups+1)); err != nil {
		return err
	}
	maxRows := kernels.GroupedMXFP8ScaleRows(rows, g.groups)
	n := int64(rows) * int64(cols)
	for _, o := range []struct {
		u                 quant.Usage
		data, scales, swz *cuda.Buffer
		scaleBytes, minSc int
	}{
		{quant.UsageRowwise, &g.out, &g.scales, &g.swz, maxRows * roundUp(ceilDiv(cols, 32), 4), roundUp(rows, 128) * roundUp(ceilDiv(cols, 32), 4)},
		{quant.UsageColumnwise, &g.colOut, &g.colScales, &g.colSwz, maxRows / 32 * roundUp(cols, 128), roundUp(rows/32, 4) * roundUp(cols, 128)},
	} {
		if covered&o.u == 0 {
			continue
		}
		if *o.data, err = out(rows * cols); err != nil {
			return err
		}
		for _, b := range []*cuda.Buffer{o.scales, o.swz} {
			if *b, err = out(o.scaleBytes); err != nil {
				return err
			}
			if err := c.Memset(*b, 0); err != nil {
				return err
			}
		}
		s.bytes += n + 2*int64(o.minSc)
	}
	// The padded prefix sum and one pass over the input for both operands.
	s.kernels += 2
	s.bytes += n*int64(g.cfg.Input.Size()) + 4*int64(g.groups)
	return nil
}

// enqueue queues the grouped kernels: a fixed number of launches whatever
// the group count, reading the split sizes from device memory.
func (g *grouped) enqueue(c *cuda.Ctx, set *kernels.Set, st cuda.Stream) error {
	rows, cols, dt := g.cfg.Rows, g.cfg.Cols, g.cfg.Input
	switch g.kernel {
	case groupedNVFP4, groupedNVFP4TwoD:
		return g.enqueueNVFP4(c, set, st)
	case groupedCurrent:
		f, err := format(g.plan.Element)
		if err != nil {
			return err
		}
		o := kernels.CurrentOpts{Format: f, Eps: g.plan.Epsilon, Pow2: g.plan.Power2Scales}
		return set.GroupedCurrent(c, st, dt, g.x, rows, cols, g.splits, g.groups, g.ws, g.out, g.colOut, g.scale, g.scaleInv, o)
	case groupedDelayed:
		return g.enqueueDelayed(c, set, st)
	case groupedMXFP8, groupedMXFP82D:
		f, err := format(g.plan.Element)
		if err != nil {
			return err
		}
		// 1D and 32x32 tiles share the buffers and their layout.
		launch := set.GroupedMXFP8
		if g.kernel == groupedMXFP82D {
			launch = set.GroupedMXFP82D
		}
		row := kernels.GroupedMXFP8Out{Data: g.out, Scales: g.scales, Swizzled: g.swz}
		col := kernels.GroupedMXFP8Out{Data: g.colOut, Scales: g.colScales, Swizzled: g.colSwz}
		return launch(c, st, dt, g.x, rows, cols, g.splits, g.groups, g.ws, g.tiles, row, col, f, g.plan.Rounding == scaling.RoundingOCP)
	case groupedBlock, groupedBlock2D:
		f, err := format(g.plan.Element)
		if err != nil {
			return err
		}
		o := kernels.BlockOpts{Format: f, Eps: g.plan.Epsilon, Pow2: g.plan.Power2Scales}
		switch {
		case g.kernel == groupedBlock2D:
			// Either or both operands (zero Buffers for an absent one).
			return set.GroupedBlock2D(c, st, dt, g.x, rows, cols, g.splits, g.groups, g.ws, g.out, g.scales, g.colOut, g.colScales, o)
		case g.colOut.Ptr() != 0:
			// Both operands, or the columnwise alone (zero rowwise
			// buffers), in one pass.
			return set.GroupedBlockRowCol(c, st, dt, g.x, rows, cols, g.splits, g.groups, g.ws, g.out, g.scales, g.colOut, g.colScales, o)
		case g.out.Ptr() != 0:
			return set.GroupedBlockRow(c, st, dt, g.x, rows, cols, g.splits, g.groups, g.ws, g.out, g.scales, o)
		}
	}
	return nil
}

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
	rows, cols := g.cfg.Rows, g.cfg.Cols
	all := func(b cuda.Buffer) ([]byte, error) {
		if b.Ptr() == 0 {
			return nil, nil
		}
		return download(c, b, b.Size())
	}
	var bufs [9][]byte
	for k, b := range []cuda.Buffer{g.out, g.scales, g.swz, g.ws.Amax, g.colOut, g.colScales, g.colSwz, g.scale, g.scaleInv} {
		var err error
		if bufs[k], err = all(b); err != nil {
			return nil, fmt.Errorf("reading grouped outputs: %w", err)
		}
	}
	data, scales, swz, amax, colData, colScales := bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5]
	colSwz, scale, scaleInv := bufs[6], bufs[7], bufs[8]
	// rsOff and csOff walk the concatenated per-group scale matrices of
	// GroupedMXFP8 and GroupedBlock2D (each group's padded matrix, empty
	// groups none).
	rsOff, csOff := 0, 0
	floats := func(b []byte, off, n int) []float32 {
		out := make([]float32, n)
		for k := range out {
			out[k] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*(off+k):]))
		}
		return out
	}
	out := make([]*quant.Result, g.groups)
	off := 0
	ds := g.cfg.Input.Size()
	for i, n32 := range g.host {
		n := int(n32)
		if n < 0 || off+n > rows {
			return nil, fmt.Errorf("group %d: %d rows at row %d of %d", i, n, off, rows)
		}
		req := g.cfg.Request
		if n == 0 && g.kernel == groupedDelayed {
			// Nothing to cast: the reference's empty result with the
			// group's state scale.
			r, err := g.emptyDelayed(ctx, i, scale, scaleInv)
			if err != nil {
				return nil, fmt.Errorf("group %d: %w", i, err)
			}
			out[i] = r
			continue
		}
		if n == 0 {
			// Nothing was launched for an empty group: its result (no
			// codes, amax 0) is the reference's.
			r, err := reference.New().Quantize(ctx, req, quant.NewTensor(0, cols))
			if err != nil {
				return nil, fmt.Errorf("group %d: %w", i, err)
			}
			out[i] = r
			continue
		}
		res := &quant.Result{Plan: g.plan, Role: req.Role, Rows: n, Cols: cols}
		switch {
		case g.kernel == groupedNVFP4 || g.kernel == groupedNVFP4TwoD:
			if err := s.nvfp4GroupResult(c, res, i, off, n, data, scales, swz, amax, colData, colScales, colSwz); err != nil {
				return nil, err
			}
		case g.kernel == groupedCurrent || g.kernel == groupedDelayed:
			// Delayed scaling: scale is the group's state scale the cast
			// used (the step has no EndStep here).
			res.Amax = f32(amax, 4*i)
			for _, colwise := range []bool{false, true} {
				src := data
				if colwise {
					src = colData
				}
				if src == nil {
					continue
				}
				o := &quant.Operand{Element: g.plan.Element, Rows: n, Cols: cols, Scales: g.plan.Scales, Amax: res.Amax}
				if colwise {
					o.Rows, o.Cols, o.Transposed = cols, n, true
				}
				o.ScaleRows, o.ScaleCols = g.plan.ScaleShape(n, cols, colwise)
				// Group g's [n, cols] (or [cols, n]) codes at cols*offset.
				o.Data = src[off*cols : (off+n)*cols]
				o.Scale = f32(scale, 4*i)
				o.ScaleInv = []float32{f32(scaleInv, 4*i)}
				if colwise {
					res.Columnwise = o
				} else {
					res.Rowwise = o
				}
			}
		case g.kernel == groupedMXFP8 || g.kernel == groupedMXFP82D:
			res.Amax = f32(amax, 4*i)
			for _, colwise := range []bool{false, true} {
				src, sc, sw, at := data, scales, swz, &rsOff
				if colwise {
					src, sc, sw, at = colData, colScales, colSwz, &csOff
				}
				if src == nil {
					continue
				}
				o := &quant.Operand{Element: g.plan.Element, Rows: n, Cols: cols, Scales: g.plan.Scales, Amax: res.Amax}
				o.ScaleRows, o.ScaleCols = g.plan.ScaleShape(n, cols, colwise)
				// Both operands keep the input's layout; the scale
				// matrices are the groups' padded ones, concatenated.
				o.Data = src[off*cols : (off+n)*cols]
				k := o.ScaleRows * o.ScaleCols
				o.ScaleCodes, o.Swizzled = sc[*at:*at+k], sw[*at:*at+k]
				*at += k
				if colwise {
					res.Columnwise = o
				} else {
					res.Rowwise = o
				}
			}
		case (g.kernel == groupedBlock || g.kernel == groupedBlock2D) && (data != nil || colData != nil):
			// The group's amax for the result (block scaling's step has
			// none): one launch now, outside the step.
			x := g.x.Slice(off*cols*ds, n*cols*ds)
			if err := s.b.set.NVFP4Amax(c, s.b.stream, g.cfg.Input, x, n, cols, g.amScratch, false, 0); err != nil {
				return nil, fmt.Errorf("group %d amax: %w", i, err)
			}
			if err := c.StreamSynchronize(s.b.stream); err != nil {
				return nil, err
			}
			raw, err := download(c, g.amScratch, 4)
			if err != nil {
				return nil, err
			}
			res.Amax = f32(raw, 0)
			if data != nil {
				o := &quant.Operand{Element: g.plan.Element, Rows: n, Cols: cols, Scales: g.plan.Scales, Amax: res.Amax}
				o.ScaleRows, o.ScaleCols = g.plan.ScaleShape(n, cols, false)
				o.Data = data[off*cols : (off+n)*cols]
				// 1x128: [ceil(cols/128), n] at ceil(cols/128)*offset
				// floats; 128x128: the groups' matrices concatenated.
				if g.kernel == groupedBlock2D {
					o.ScaleInv = floats(scales, rsOff, o.ScaleRows*o.ScaleCols)
					rsOff += o.ScaleRows * o.ScaleCols
				} else {
					o.ScaleInv = floats(scales, ceilDiv(cols, 128)*off, o.ScaleRows*o.ScaleCols)
				}
				res.Rowwise = o
			}
			if colData != nil {
				o := &quant.Operand{Element: g.plan.Element, Rows: cols, Cols: n, Transposed: true, Scales: g.plan.Scales, Amax: res.Amax}
				o.ScaleRows, o.ScaleCols = g.plan.ScaleShape(n, cols, true)
				// [cols, n] at cols*offset bytes; scales [n/128,
				// roundup(cols,4)] at (offset/128)*roundup(cols,4) floats.
				o.Data = colData[off*cols : (off+n)*cols]
				if g.kernel == groupedBlock2D {
					// [ceil(cols/128), roundup(n/128,4)] per group,
					// concatenated.
					o.ScaleInv = floats(colScales, csOff, o.ScaleRows*o.ScaleCols)
					csOff += o.ScaleRows * o.ScaleCols
				} else {
					o.ScaleInv = floats(colScales, (off/128)*roundUp(cols, 4), o.ScaleRows*o.ScaleCols)
				}
				res.Columnwise = o
			}
		}
		out[i] = res
		off += n
	}
	return out, nil
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
