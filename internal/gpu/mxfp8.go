// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/scaling"
	"github.com/kquant/kquant/kernels"
)

// mxfp8 is the MXFP8BlockScaling family: 1x32 blocks with E8M0 scales (one
// kernel per operand, or one for both operands of a 16-bit input) and 32x32
// weight tiles (one kernel for the operands wanted), the kernels writing
// the scales' GEMM layout too; grouped, kernels.GroupedMXFP8 and
// GroupedMXFP82D.
type mxfp8 struct{ referenceEmpty }

// alloc allocates the MXFP8 operands: codes, E8M0 scales and their GEMM
// layout, which the quantize kernels write as well (kernels.MXFP8Swizzled,
// MXFP8BothSwizzled, MXFP82D) so that a step's outputs are all a GEMM needs
// without a Swizzle launch per operand. 32x32 weight tiles take one kernel
// whatever the usage (one read of the input).
func (mxfp8) alloc(s *Step, c *cuda.Ctx, p *part) error {
	row, col, ops := p.operands()
	rows, cols := p.cfg.Rows, p.cfg.Cols
	n, ds := int64(p.n), int64(p.cfg.Input.Size())
	scales, err := s.allocFP8Ops(c, p, kernels.MXFP8ScaleShape, 1, true)
	if err != nil {
		return err
	}
	// Quantize, a kernel per operand: input read, codes, scales and
	// swizzled scales written.
	s.kernels += int(ops)
	s.bytes += ops*(n*ds+n) + 2*scales
	if p.plan.BlockRows == 32 {
		// One kernel reading the input once for the operands wanted.
		p.mx2D = true
		s.kernels -= int(ops) - 1
		s.bytes -= (ops - 1) * n * ds
		return nil
	}
	if row && col && kernels.MXFP8BothFits(p.cfg.Input, rows, cols, p.x, p.row, p.rowSc, p.col, p.colSc) {
		// One kernel reading the input once: one launch and one input read
		// fewer than counted above.
		p.mxBoth = true
		s.kernels--
		s.bytes -= n * ds
	}
	return nil
}

// enqueue queues p's MXFP8 kernels. They also write the GEMM layout of the
// scales (the columnwise matrix swizzled as its transpose, the contract's
// layout rule): no Swizzle launch.
func (mxfp8) enqueue(c *cuda.Ctx, set *kernels.Set, st cuda.Stream, p *part) error {
	dt, rows, cols := p.cfg.Input, p.cfg.Rows, p.cfg.Cols
	ocp := p.plan.Rounding == scaling.RoundingOCP
	if p.mx2D {
		return set.MXFP82D(c, st, dt, p.x, rows, cols, p.row, p.rowSc, p.rowSwz, p.col, p.colSc, p.colSwz, p.f, ocp, p.st)
	}
	if p.mxBoth {
		return set.MXFP8BothSwizzled(c, st, dt, p.x, rows, cols, p.row, p.rowSc, p.rowSwz, p.col, p.colSc, p.colSwz, p.f, ocp, p.st)
	}
	if p.row.Ptr() != 0 {
		if err := set.MXFP8Swizzled(c, st, dt, p.x, rows, cols, p.row, p.rowSc, p.rowSwz, false, p.f, ocp, p.st); err != nil {
			return err
		}
	}
	if p.col.Ptr() != 0 {
		return set.MXFP8Swizzled(c, st, dt, p.x, rows, cols, p.col, p.colSc, p.colSwz, true, p.f, ocp, p.st)
	}
	return nil
}

// readOperand reads the operand's E8M0 scales and their swizzled layout.
func (mxfp8) readOperand(c *cuda.Ctx, _ *part, o *quant.Operand, _ bool, sc, swz cuda.Buffer, _ []byte) error {
	return readScaleCodes(c, o, sc, swz)
}

// readScaleCodes reads an operand's one-byte scales (E8M0 or E4M3) and
// their swizzled layout.
func readScaleCodes(c *cuda.Ctx, o *quant.Operand, sc, swz cuda.Buffer) error {
	nsc := o.ScaleRows * o.ScaleCols
	var err error
	if o.ScaleCodes, err = download(c, sc, nsc); err != nil {
		return fmt.Errorf("reading scales: %w", err)
	}
	if o.Swizzled, err = download(c, swz, nsc); err != nil {
		return fmt.Errorf("reading swizzled scales: %w", err)
	}
	return nil
}

// allocGrouped allocates kernels.GroupedMXFP8's outputs: per-group
// amax, the padded-prefix scratch, and per covered operand its codes and
// the groups' padded scale matrices with their swizzled layouts, sized for
// the most padding any split vector can need, and zeroed so that what no
// split vector writes stays the same from run to run.
func (mxfp8) allocGrouped(s *Step, c *cuda.Ctx, g *grouped, covered quant.Usage, out func(int) (cuda.Buffer, error)) error {
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
	ops := g.wanted(covered)
	// Bytes per scale layout, and of them what every run writes.
	scaleBytes := byOp(maxRows*roundUp(ceilDiv(cols, 32), 4), maxRows/32*roundUp(cols, 128))
	least := byOp(roundUp(rows, 128)*roundUp(ceilDiv(cols, 32), 4), roundUp(rows/32, 4)*roundUp(cols, 128))
	if _, err := allocOps(ops, out, byOp(rows*cols, rows*cols), scaleBytes, true); err != nil {
		return err
	}
	for _, o := range ops {
		for _, b := range []*cuda.Buffer{o.sc, o.swz} {
			if err := c.Memset(*b, 0); err != nil {
				return err
			}
		}
	}
	s.bytes += int64(len(ops))*n + 2*sumOps(ops, least)
	// The padded prefix sum and one pass over the input for both operands.
	s.kernels += 2
	s.bytes += n*int64(g.cfg.Input.Size()) + 4*int64(g.groups)
	return nil
}

// enqueueGrouped queues kernels.GroupedMXFP8 or, for 32x32 tiles,
// GroupedMXFP82D: both share the buffers and their layout.
func (mxfp8) enqueueGrouped(c *cuda.Ctx, set *kernels.Set, st cuda.Stream, g *grouped) error {
	f, err := format(g.plan.Element)
	if err != nil {
		return err
	}
	launch := set.GroupedMXFP8
	if g.kernel == groupedMXFP82D {
		launch = set.GroupedMXFP82D
	}
	row := kernels.GroupedMXFP8Out{Data: g.out, Scales: g.scales, Swizzled: g.swz}
	col := kernels.GroupedMXFP8Out{Data: g.colOut, Scales: g.colScales, Swizzled: g.colSwz}
	return launch(c, st, g.cfg.Input, g.x, g.cfg.Rows, g.cfg.Cols, g.splits, g.groups, g.ws, g.tiles, row, col, f, g.plan.Rounding == scaling.RoundingOCP)
}

// readGroup fills res with group i's operands: both keep the input's
// layout; the scale matrices are the groups' padded ones, concatenated.
func (mxfp8) readGroup(s *Step, _ *cuda.Ctx, r *groupOutputs, res *quant.Result, i, off, n int) error {
	res.Amax = f32(r.amax, 4*i)
	s.grp.eachOperand(r, res, off, n, false, func(o *quant.Operand, _ bool, sc, sw []byte, at *int) {
		k := o.ScaleRows * o.ScaleCols
		o.ScaleCodes, o.Swizzled = sc[*at:*at+k], sw[*at:*at+k]
		*at += k
	})
	return nil
}
