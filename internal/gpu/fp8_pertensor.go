// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"context"
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/kernels"
)

// perTensorFP8 is the per-tensor FP8 family: Float8CurrentScaling (amax and
// scale, then the cast: 2 kernels) and DelayedScaling (the cast with the
// amax fused into the history's entry 0, and with EndStep the update run
// by the cast's last block: 1 kernel), both with one scale for the whole tensor; grouped, each group
// gets its own (kernels.GroupedCurrent, kernels.GroupedDelayed).
type perTensorFP8 struct{}

// alloc allocates the codes of p's operands and the decode scale, and for
// delayed scaling the amax history.
func (perTensorFP8) alloc(s *Step, c *cuda.Ctx, p *part) error {
	var err error
	_, _, ops := p.operands()
	n, ds := int64(p.n), int64(p.cfg.Input.Size())
	var bufs []outBuf
	for _, o := range p.wanted() {
		bufs = append(bufs, outBuf{o.data, p.n})
	}
	if err := allocOuts(s.partOut(c, p), append(bufs, outBuf{&p.sinv, 4})...); err != nil {
		return err
	}
	if p.plan.Scheme == quant.Float8CurrentScaling {
		// amax+scale reads the input; the cast reads it again and writes
		// the codes of each operand and the decode scale.
		s.kernels += 2
		s.bytes += n*ds + n*ds + ops*n + 4
		return nil
	}
	hl := p.plan.Delayed.AmaxHistoryLen
	if p.hist, err = s.out(c, p, 4*hl); err != nil {
		return err
	}
	if err := c.Memset(p.hist, 0); err != nil {
		return err
	}
	s.kernels++
	s.bytes += n*ds + ops*n + 4 + 4
	if p.cfg.EndStep {
		// The update, run by the cast's last block, reads and rewrites
		// the history.
		s.bytes += 2 * 4 * int64(hl)
	}
	return nil
}

// enqueue queues current scaling's amax and cast, or delayed scaling's cast,
// which with EndStep ends in the update (one launch: the cast's last block
// runs it, kernels.Update).
func (perTensorFP8) enqueue(c *cuda.Ctx, set *kernels.Set, st cuda.Stream, p *part) error {
	if p.plan.Scheme == quant.Float8CurrentScaling {
		if err := set.Amax(c, st, p.cfg.Input, p.x, p.n, p.st, p.f, p.plan.Epsilon, p.plan.Power2Scales); err != nil {
			return err
		}
		return p.cast(c, set, st, cuda.Buffer{}, kernels.Update{})
	}
	var u kernels.Update
	if p.cfg.EndStep {
		d := p.plan.Delayed
		u = kernels.Update{HistoryLen: d.AmaxHistoryLen, Margin: d.Margin, MostRecent: d.AmaxComputeAlgo == quant.AmaxComputeMostRecent}
	}
	return p.cast(c, set, st, p.hist, u)
}

// cast is the per-tensor cast: rowwise alone, or the fused cast+transpose
// when the columnwise operand is wanted (with or without the rowwise);
// with a history (delayed scaling) it ends in the update u.
func (p *part) cast(c *cuda.Ctx, set *kernels.Set, st cuda.Stream, hist cuda.Buffer, u kernels.Update) error {
	if p.usage == quant.UsageRowwise {
		return set.CastUpdate(c, st, p.cfg.Input, p.x, p.n, p.st, p.row, p.sinv, hist, p.f, u)
	}
	return set.CastTransposeUpdate(c, st, p.cfg.Input, p.x, p.cfg.Rows, p.cfg.Cols, p.st, p.row, p.col, p.sinv, hist, p.f, u)
}

// readOperand reads the tensor's scale (from the state) and decode scale.
func (perTensorFP8) readOperand(c *cuda.Ctx, p *part, o *quant.Operand, _ bool, _, _ cuda.Buffer, state []byte) error {
	sinv, err := download(c, p.sinv, 4)
	if err != nil {
		return fmt.Errorf("reading scale_inv: %w", err)
	}
	o.Scale = f32(state, kernels.StateScaleOffset)
	o.ScaleInv = []float32{f32(sinv, 0)}
	return nil
}

// allocGrouped allocates kernels.GroupedDelayed's buffers (addGroupedDelayed)
// or kernels.GroupedCurrent's outputs: per-group
// amax, scale and scale_inv, and the codes of the covered operands.
func (perTensorFP8) allocGrouped(s *Step, c *cuda.Ctx, g *grouped, covered quant.Usage, out func(int) (cuda.Buffer, error)) error {
	if g.kernel == groupedDelayed {
		return s.addGroupedDelayed(c, g, covered, out)
	}
	if err := g.allocScales(out); err != nil {
		return err
	}
	ops, err := g.allocCodes(covered, out)
	if err != nil {
		return err
	}
	n := int64(g.cfg.Rows) * int64(g.cfg.Cols)
	s.bytes += ops * n
	// The amax pass and the cast (or cast+transpose) each read the input.
	s.kernels += 2
	s.bytes += 2*n*int64(g.cfg.Input.Size()) + 12*int64(g.groups)
	return nil
}

// enqueueGrouped queues kernels.GroupedCurrent or kernels.GroupedDelayed.
func (perTensorFP8) enqueueGrouped(c *cuda.Ctx, set *kernels.Set, st cuda.Stream, g *grouped) error {
	if g.kernel == groupedDelayed {
		return g.enqueueDelayed(c, set, st)
	}
	f, err := format(g.plan.Element)
	if err != nil {
		return err
	}
	o := kernels.CurrentOpts{Format: f, Eps: g.plan.Epsilon, Pow2: g.plan.Power2Scales}
	return set.GroupedCurrent(c, st, g.cfg.Input, g.x, g.cfg.Rows, g.cfg.Cols, g.splits, g.groups, g.ws, g.out, g.colOut, g.scale, g.scaleInv, o)
}

// readGroup fills res with group i's operands: its codes at cols*off (the
// columnwise ones transposed), its amax, scale and decode scale. Delayed
// scaling's scale is the group's state scale the cast used (the step has
// no EndStep here).
func (perTensorFP8) readGroup(s *Step, _ *cuda.Ctx, r *groupOutputs, res *quant.Result, i, off, n int) error {
	res.Amax = f32(r.amax, 4*i)
	// Group g's [n, cols] (or [cols, n]) codes at cols*offset.
	s.grp.eachOperand(r, res, off, n, true, func(o *quant.Operand, _ bool, _, _ []byte, _ *int) {
		o.Scale = f32(r.scale, 4*i)
		o.ScaleInv = []float32{f32(r.scaleInv, 4*i)}
	})
	return nil
}

// allocScales allocates the per-group amax, scale and scale_inv of per-tensor
// scaling.
func (g *grouped) allocScales(out func(int) (cuda.Buffer, error)) error {
	return allocOuts(out, outBuf{&g.ws.Amax, 4 * g.groups}, outBuf{&g.scale, 4 * g.groups}, outBuf{&g.scaleInv, 4 * g.groups})
}

// allocCodes allocates the codes of g's operands in covered and returns
// how many operands that is.
func (g *grouped) allocCodes(covered quant.Usage, out func(int) (cuda.Buffer, error)) (int64, error) {
	ops := int64(0)
	for _, o := range g.wanted(covered) {
		if err := allocOuts(out, outBuf{o.data, g.cfg.Rows * g.cfg.Cols}); err != nil {
			return 0, err
		}
		ops++
	}
	return ops, nil
}

// emptyGroup is the reference's result of an empty group; for delayed
// scaling with the group's state scale and decode factor.
func (perTensorFP8) emptyGroup(ctx context.Context, g *grouped, r *groupOutputs, i int) (*quant.Result, error) {
	if g.kernel == groupedDelayed {
		return g.emptyDelayed(ctx, i, r.scale, r.scaleInv)
	}
	return emptyResult(ctx, g, nil)
}

// The grouped DelayedScaling step (kernels.GroupedDelayed): the groups'
// states live on the device side by side, scale[G] (float32, grouped.scale)
// and the amax histories [G][L] (grouped.hist), the layout of the
// ungrouped step's state (part.st's scale, part.hist) repeated per group.
// A step is the offsets, one fused cast(+transpose)+amax pass, and the
// per-group history update (with EndStep also each group's delayed update),
// three launches whatever the group count, read from the device split
// sizes: one captured graph replays any split vector of the same group
// count.

// addGroupedDelayed allocates kernels.GroupedDelayed's buffers: per-group
// amax, scale, scale_inv and amax history (the states start as
// quant.NewState's: scale 1, history zero), and the codes of the covered
// operands.
func (s *Step) addGroupedDelayed(c *cuda.Ctx, g *grouped, covered quant.Usage, out func(int) (cuda.Buffer, error)) error {
	g.histLen = g.plan.Delayed.AmaxHistoryLen
	if g.histLen < 1 {
		return fmt.Errorf("delayed scaling with an amax history of %d entries", g.histLen)
	}
	if err := g.allocScales(out); err != nil {
		return err
	}
	if err := allocOuts(out, outBuf{&g.hist, 4 * g.groups * g.histLen}); err != nil {
		return err
	}
	if err := g.setStates(c, nil); err != nil {
		return err
	}
	n := int64(g.cfg.Rows) * int64(g.cfg.Cols)
	ops, err := g.allocCodes(covered, out)
	if err != nil {
		return err
	}
	// One pass reads the input and writes the codes, the amaxes and
	// decode factors; the history launch reads the scales and amaxes and
	// raises entry 0 (with EndStep it reads and rewrites each history).
	s.kernels += 2
	s.bytes += n*int64(g.cfg.Input.Size()) + ops*n + 4*int64(g.groups) + 4*int64(g.groups) + 4*int64(g.groups)
	if g.cfg.EndStep {
		s.bytes += 2 * 4 * int64(g.groups) * int64(g.histLen)
	} else {
		s.bytes += 2 * 4 * int64(g.groups)
	}
	return nil
}

// enqueueDelayed queues kernels.GroupedDelayed.
func (g *grouped) enqueueDelayed(c *cuda.Ctx, set *kernels.Set, st cuda.Stream) error {
	f, err := format(g.plan.Element)
	if err != nil {
		return err
	}
	d := g.plan.Delayed
	o := kernels.DelayedOpts{Format: f, HistoryLen: g.histLen, Margin: d.Margin, MostRecent: d.AmaxComputeAlgo == quant.AmaxComputeMostRecent, Update: g.cfg.EndStep}
	return set.GroupedDelayed(c, st, g.cfg.Input, g.x, g.cfg.Rows, g.cfg.Cols, g.splits, g.groups, g.ws, g.out, g.colOut, g.scale, g.scaleInv, g.hist, o)
}

// setStates uploads every group's state (a nil slice or entry: the
// initial state, scale 1 and a zero history).
func (g *grouped) setStates(c *cuda.Ctx, states []*quant.State) error {
	scale := make([]float32, g.groups)
	hist := make([]float32, g.groups*g.histLen)
	for i := range scale {
		scale[i] = 1
		if i < len(states) && states[i] != nil {
			if len(states[i].AmaxHistory) != g.histLen {
				return fmt.Errorf("group %d: state has an amax history of %d entries, the recipe wants %d", i, len(states[i].AmaxHistory), g.histLen)
			}
			scale[i] = states[i].Scale
			copy(hist[i*g.histLen:], states[i].AmaxHistory)
		}
	}
	if err := cuda.Upload(c, g.scale, scale); err != nil {
		return fmt.Errorf("setting the group scales: %w", err)
	}
	if err := cuda.Upload(c, g.hist, hist); err != nil {
		return fmt.Errorf("setting the amax histories: %w", err)
	}
	return nil
}

// setState uploads group i's state.
func (g *grouped) setState(c *cuda.Ctx, i int, st *quant.State) error {
	if i < 0 || i >= g.groups {
		return fmt.Errorf("grouped step has %d groups, no group %d", g.groups, i)
	}
	if len(st.AmaxHistory) != g.histLen {
		return fmt.Errorf("state has an amax history of %d entries, the recipe wants %d", len(st.AmaxHistory), g.histLen)
	}
	if err := cuda.Upload(c, g.scale.Slice(4*i, 4), []float32{st.Scale}); err != nil {
		return fmt.Errorf("setting the scale: %w", err)
	}
	if err := cuda.Upload(c, g.hist.Slice(4*i*g.histLen, 4*g.histLen), st.AmaxHistory); err != nil {
		return fmt.Errorf("setting the amax history: %w", err)
	}
	return nil
}

// states downloads every group's state into states (entries nil are
// skipped).
func (g *grouped) states(c *cuda.Ctx, states []*quant.State) error {
	scale := make([]float32, g.groups)
	hist := make([]float32, g.groups*g.histLen)
	if err := cuda.Download(c, scale, g.scale); err != nil {
		return fmt.Errorf("reading the group scales: %w", err)
	}
	if err := cuda.Download(c, hist, g.hist); err != nil {
		return fmt.Errorf("reading the amax histories: %w", err)
	}
	for i, st := range states {
		if st == nil || i >= g.groups {
			continue
		}
		if len(st.AmaxHistory) != g.histLen {
			return fmt.Errorf("group %d: state has an amax history of %d entries, the recipe wants %d", i, len(st.AmaxHistory), g.histLen)
		}
		st.Scale = scale[i]
		copy(st.AmaxHistory, hist[i*g.histLen:(i+1)*g.histLen])
	}
	return nil
}

// delayedKernel reports whether g runs kernels.GroupedDelayed.
func (g *grouped) delayedKernel() bool { return g != nil && g.kernel == groupedDelayed }

// emptyDelayed is the result of an empty group i of the grouped delayed
// kernel (nothing to cast): the reference's quantize of a [0, cols] tensor
// with the group's scale, its decode factor the kernel's scaleInv[i].
func (g *grouped) emptyDelayed(ctx context.Context, i int, scale, scaleInv []byte) (*quant.Result, error) {
	st := quant.NewState(g.cfg.Request.Recipe)
	st.Scale = f32(scale, 4*i)
	r, err := emptyResult(ctx, g, st)
	if err != nil {
		return nil, err
	}
	for _, o := range []*quant.Operand{r.Rowwise, r.Columnwise} {
		if o != nil && len(o.ScaleInv) == 1 && scaleInv != nil {
			o.ScaleInv[0] = f32(scaleInv, 4*i)
		}
	}
	return r, nil
}

// quantizeGroupedDelayed is QuantizeGrouped's delayed-scaling path with
// the grouped kernel on step s: the states in, one step, the results and
// the recorded amaxes (history entry 0) out.
func (b *Backend) quantizeGroupedDelayed(ctx context.Context, c *cuda.Ctx, s *Step, req quant.Request, states []*quant.State) ([]*quant.Result, error) {
	for i, st := range states {
		if err := st.Check(req.Recipe); err != nil {
			return nil, fmt.Errorf("group %d: %w", i, err)
		}
	}
	g := s.grp
	if err := g.setStates(c, states); err != nil {
		return nil, err
	}
	if err := s.enqueue(c); err != nil {
		return nil, err
	}
	out, err := s.groupResults(ctx, c)
	if err != nil {
		return nil, err
	}
	return out, g.states(c, states)
}
