// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/kernels"
)

// blockFP8 is the Float8BlockScaling family: 1x128 blocks (rowwise,
// columnwise transposed, or both in one pass) and 128x128 weight tiles,
// float32 decode scales in TE's padded shapes; grouped, kernels.GroupedBlock*
// and GroupedBlock2D. The step has no tensor amax: reading a result
// computes the input's.
type blockFP8 struct{ referenceEmpty }

// alloc allocates the Float8BlockScaling operands: codes (the
// columnwise ones transposed) and float32 decode scales in TE's padded
// shapes. One kernel whatever the usage: 1x128 rowwise, 128x1 columnwise,
// both in one pass, or 128x128 tiles for both.
func (blockFP8) alloc(s *Step, c *cuda.Ctx, p *part) error {
	_, _, ops := p.operands()
	n, ds := int64(p.n), int64(p.cfg.Input.Size())
	shape := func(rows, cols int, colwise bool) (int, int) {
		return kernels.BlockScaleShape(rows, cols, p.plan.BlockRows == 128, colwise)
	}
	scales, err := s.allocFP8Ops(c, p, shape, 4, false)
	if err != nil {
		return err
	}
	// 128x128 tiles, and both 1x128 operands (kernels.BlockRowCol), are
	// one pass over the input; a single 1x128 operand one kernel.
	s.kernels++
	s.bytes += n*ds + ops*n + scales
	// The input's amax is not part of TE's block-scaling step; the result
	// path computes it into amX.
	p.amX, err = s.alloc(c, 4)
	return err
}

// enqueue queues the one block kernel of p's operands.
func (blockFP8) enqueue(c *cuda.Ctx, set *kernels.Set, st cuda.Stream, p *part) error {
	dt, rows, cols := p.cfg.Input, p.cfg.Rows, p.cfg.Cols
	o := kernels.BlockOpts{Format: p.f, Eps: p.plan.Epsilon, Pow2: p.plan.Power2Scales}
	if p.plan.BlockRows == 128 {
		return set.Block2D(c, st, dt, p.x, rows, cols, p.row, p.rowSc, p.col, p.colSc, o)
	}
	switch {
	case p.row.Ptr() != 0 && p.col.Ptr() != 0:
		return set.BlockRowCol(c, st, dt, p.x, rows, cols, p.row, p.rowSc, p.col, p.colSc, o)
	case p.row.Ptr() != 0:
		return set.BlockRow(c, st, dt, p.x, rows, cols, p.row, p.rowSc, o)
	default:
		return set.BlockCol(c, st, dt, p.x, rows, cols, p.col, p.colSc, o)
	}
}

// readOperand reads the operand's float32 decode scales.
func (blockFP8) readOperand(c *cuda.Ctx, _ *part, o *quant.Operand, _ bool, sc, _ cuda.Buffer, _ []byte) error {
	o.ScaleInv = make([]float32, o.ScaleRows*o.ScaleCols)
	if err := cuda.Download(c, o.ScaleInv, sc); err != nil {
		return fmt.Errorf("reading scale_inv: %w", err)
	}
	return nil
}

// allocGrouped allocates the grouped block outputs: one pass over the
// input for either or both operands; for 128x128 tiles the columnwise
// scales sized for the most padding any split vector can need (the kernel
// zeroes what a run leaves).
func (blockFP8) allocGrouped(s *Step, _ *cuda.Ctx, g *grouped, covered quant.Usage, out func(int) (cuda.Buffer, error)) error {
	rows, cols := g.cfg.Rows, g.cfg.Cols
	n := int64(rows) * int64(cols)
	// Floats of scales per operand, and of them what every run writes.
	rowSc, colSc := rows*ceilDiv(cols, 128), ceilDiv(rows, 128)*roundUp(cols, 4)
	rowLeast, colLeast := rowSc, colSc
	if g.kernel == groupedBlock2D {
		sr, sc := kernels.BlockScaleShape(rows, cols, true, false)
		nkb := ceilDiv(cols, 128)
		rowSc, colSc = sr*sc, nkb*kernels.GroupedBlock2DColScaleCols(rows, g.groups)
		rowLeast, colLeast = rowSc, nkb*roundUp(ceilDiv(rows, 128), 4)
	}
	ops := g.wanted(covered)
	if _, err := allocOps(ops, out, byOp(rows*cols, rows*cols), byOp(4*rowSc, 4*colSc), false); err != nil {
		return err
	}
	s.kernels++
	s.bytes += n*int64(g.cfg.Input.Size()) + int64(len(ops))*n + 4*sumOps(ops, byOp(rowLeast, colLeast))
	return nil
}

// enqueueGrouped queues the one grouped block kernel of g's operands.
func (blockFP8) enqueueGrouped(c *cuda.Ctx, set *kernels.Set, st cuda.Stream, g *grouped) error {
	f, err := format(g.plan.Element)
	if err != nil {
		return err
	}
	rows, cols, dt := g.cfg.Rows, g.cfg.Cols, g.cfg.Input
	o := kernels.BlockOpts{Format: f, Eps: g.plan.Epsilon, Pow2: g.plan.Power2Scales}
	switch {
	case g.kernel == groupedBlock2D:
		// Either or both operands (zero Buffers for an absent one).
		return set.GroupedBlock2D(c, st, dt, g.x, rows, cols, g.splits, g.groups, g.ws, g.out, g.scales, g.colOut, g.colScales, o)
	case g.colOut.Ptr() != 0:
		// Both operands, or the columnwise alone (zero rowwise buffers),
		// in one pass.
		return set.GroupedBlockRowCol(c, st, dt, g.x, rows, cols, g.splits, g.groups, g.ws, g.out, g.scales, g.colOut, g.colScales, o)
	case g.out.Ptr() != 0:
		return set.GroupedBlockRow(c, st, dt, g.x, rows, cols, g.splits, g.groups, g.ws, g.out, g.scales, o)
	}
	return nil
}

// readGroup fills res with group i's operands and, since block scaling's
// step has none, the group's amax (one launch now, outside the step).
func (blockFP8) readGroup(s *Step, c *cuda.Ctx, r *groupOutputs, res *quant.Result, i, off, n int) error {
	g := s.grp
	cols := g.cfg.Cols
	if r.data == nil && r.colData == nil {
		return nil
	}
	var err error
	if res.Amax, err = s.inputAmax(c, i, off, n); err != nil {
		return err
	}
	// Codes at cols*offset (the columnwise ones [cols, n]).
	g.eachOperand(r, res, off, n, true, func(o *quant.Operand, colwise bool, sc, _ []byte, at *int) {
		k := o.ScaleRows * o.ScaleCols
		switch {
		case g.kernel == groupedBlock2D:
			// 128x128: the groups' matrices concatenated (columnwise
			// [ceil(cols/128), roundup(n/128,4)] each).
			o.ScaleInv = floats(sc, *at, k)
			*at += k
		case colwise:
			// [n/128, roundup(cols,4)] at (offset/128)*roundup(cols,4)
			// floats.
			o.ScaleInv = floats(sc, (off/128)*roundUp(cols, 4), k)
		default:
			// 1x128: [ceil(cols/128), n] at ceil(cols/128)*offset floats.
			o.ScaleInv = floats(sc, ceilDiv(cols, 128)*off, k)
		}
	})
	return nil
}
