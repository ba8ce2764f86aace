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

// nvfp4 is the NVFP4BlockScaling family: 1x16 blocks with E4M3 scales and a
// tensor scale from each operand's amax (the columnwise operand with the
// random Hadamard transform and stochastic rounding where the plan says),
// and 16x16 weight tiles; grouped, kernels.GroupedNVFP4 and
// GroupedNVFP4TwoD.
type nvfp4 struct{ referenceEmpty }

// alloc allocates the NVFP4 operands: packed codes, E4M3 scales, their
// swizzled layout and the tensor amaxes. 1D: amax (a memset and a kernel)
// and the quantize kernel, which also writes the swizzled scales, per
// operand (the columnwise operand shares the rowwise amax unless it takes
// the RHT). 16x16 weights: amax and the 2D kernel for the wanted operands
// only, which writes their swizzled scales too (after a memset of each
// scale buffer whose padded shape has padding).
func (nvfp4) alloc(s *Step, c *cuda.Ctx, p *part) error {
	var err error
	row, col, _ := p.operands()
	rows, cols := p.cfg.Rows, p.cfg.Cols
	twoD := p.plan.BlockRows == 16
	n, ds := int64(p.n), int64(p.cfg.Input.Size())
	rsr, rsc := kernels.NVFP4ScaleShape(rows, cols, false)
	csr, csc := kernels.NVFP4ScaleShape(rows, cols, true)
	rowB, colB := rows*kernels.NVFP4RowBytes(cols), cols*kernels.NVFP4RowBytes(rows)
	if p.amR, err = s.out(c, p, 4); err != nil {
		return err
	}
	p.amC = p.amR
	if _, err := allocOps(p.wanted(), s.partOut(c, p), byOp(rowB, colB), byOp(rsr*rsc, csr*csc), true); err != nil {
		return err
	}
	// The amax pass: memset + kernel, input read.
	s.kernels += 2
	s.bytes += n*ds + 4
	switch {
	case twoD:
		// The 2D kernel: input read, the wanted operands' codes, scales
		// and swizzled scales written; before it a memset of each scale
		// buffer whose padded shape has padding (kernels.NVFP4TwoD).
		s.kernels++
		s.bytes += n * ds
		memset := func(bytes int64, copies int) {
			s.kernels += copies
			s.bytes += int64(copies) * bytes
		}
		if row {
			s.bytes += int64(rowB) + 2*int64(rsr*rsc)
			if kernels.NVFP4ScalePadded(rows, cols, false) {
				memset(int64(rsr*rsc), 2)
			}
		}
		if col {
			s.bytes += int64(colB) + 2*int64(csr*csc)
			if kernels.NVFP4ScalePadded(rows, cols, true) {
				memset(int64(csr*csc), 2)
			}
		}
	default:
		if row {
			s.kernels++
			s.bytes += n*ds + int64(rowB) + 2*int64(rsr*rsc)
		}
		if col {
			if p.plan.RHT {
				if p.amC, err = s.out(c, p, 4); err != nil {
					return err
				}
				switch {
				case row && kernels.NVFP4AmaxesOnePass(rows, cols, p.x):
					// The amax pass also takes the RHT amax
					// (kernels.NVFP4Amaxes): a second memset.
					s.kernels++
					s.bytes += 4
				case row:
					// A second amax pass over the RHT of the columns.
					s.kernels += 2
					s.bytes += n*ds + 4
				}
				// With the columnwise operand alone, the step's one amax
				// pass is the RHT one; the input's amax is computed when
				// the result is read.
				if !row {
					if p.amX, err = s.alloc(c, 4); err != nil {
						return err
					}
				}
			}
			s.kernels++
			s.bytes += n*ds + int64(colB) + 2*int64(csr*csc)
		}
	}
	return nil
}

// nvfp4Opts are the kernel options of p's operands: the plan's RHT (which
// the rowwise kernel ignores), stochastic rounding with p's seed, and p's
// state, whose counter words the columnwise kernel takes its tiles in
// order with.
func (p *part) nvfp4Opts() kernels.NVFP4Opts {
	return kernels.NVFP4Opts{RHT: p.plan.RHT, Signs: p.plan.RHTSignMask, Stochastic: p.plan.Stochastic, Seed: p.seed, State: p.st}
}

// enqueue queues the amax pass(es) and the quantize kernels of p.
func (nvfp4) enqueue(c *cuda.Ctx, set *kernels.Set, st cuda.Stream, p *part) error {
	dt, rows, cols := p.cfg.Input, p.cfg.Rows, p.cfg.Cols
	row, col := p.row.Ptr() != 0, p.col.Ptr() != 0
	if p.plan.BlockRows == 16 {
		if err := set.NVFP4Amax(c, st, dt, p.x, rows, cols, p.amR, false, 0); err != nil {
			return err
		}
		// The 2D kernel writes the swizzled scales itself.
		swzRow := p.rowSwz
		if !row {
			swzRow = cuda.Buffer{}
		}
		return set.NVFP4TwoD(c, st, dt, p.x, rows, cols, p.amR, p.row, p.rowSc, swzRow, p.col, p.colSc, p.colSwz)
	}
	o := p.nvfp4Opts()
	// Both operands with the RHT: both amaxes from one amax pass where
	// the input allows (kernels.NVFP4Amaxes).
	both := row && col && p.plan.RHT
	switch {
	case both:
		if err := set.NVFP4Amaxes(c, st, dt, p.x, rows, cols, p.amR, p.amC, p.plan.RHTSignMask); err != nil {
			return err
		}
	case row || !p.plan.RHT:
		if err := set.NVFP4Amax(c, st, dt, p.x, rows, cols, p.amR, false, 0); err != nil {
			return err
		}
	}
	if row {
		if err := set.NVFP4Row(c, st, dt, p.x, rows, cols, p.amR, p.row, p.rowSc, p.rowSwz, o); err != nil {
			return err
		}
	}
	if !col {
		return nil
	}
	if p.plan.RHT && !both {
		if err := set.NVFP4Amax(c, st, dt, p.x, rows, cols, p.amC, true, p.plan.RHTSignMask); err != nil {
			return err
		}
	}
	return set.NVFP4Col(c, st, dt, p.x, rows, cols, p.amC, p.col, p.colSc, p.colSwz, o)
}

// readOperand reads the operand's E4M3 scales, their swizzled layout and
// its amax: each operand is an NVFP4 tensor of its own, whose amax (of the
// RHT-transformed columns where the plan says so) gives its tensor scale,
// as the kernels computed it.
func (nvfp4) readOperand(c *cuda.Ctx, p *part, o *quant.Operand, colwise bool, sc, swz cuda.Buffer, _ []byte) error {
	if err := readScaleCodes(c, o, sc, swz); err != nil {
		return err
	}
	am := p.amR
	if colwise {
		am = p.amC
	}
	raw, err := download(c, am, 4)
	if err != nil {
		return fmt.Errorf("reading the operand amax: %w", err)
	}
	o.Amax = f32(raw, 0)
	o.Scale = scaling.NVFP4TensorScale(o.Amax)
	o.Stochastic = p.plan.Stochastic
	if colwise && p.plan.RHT && p.plan.BlockRows == 1 {
		o.RHT, o.RHTSignMask = true, p.plan.RHTSignMask
	}
	return nil
}

// The grouped NVFP4 step (kernels.GroupedNVFP4 for 1D blocks, either or
// both operands with the plan's RHT and stochastic rounding;
// kernels.GroupedNVFP4TwoD for 16x16 weights): split sizes in device
// memory, a fixed number of launches whatever the group count, each group
// quantized as a tensor of its own, its outputs where the reference's
// concatenated per-group results are. The kernels cover every shape: the
// tiled fast paths where cols is a multiple of 64, their general paths
// otherwise (a 128-row group always holds whole row tiles of both).

// nvfp4RHTCol reports whether g's columnwise operand takes the RHT and so
// its own per-group amaxes (ws.Amax words groups to 2*groups-1).
func (g *grouped) nvfp4RHTCol() bool {
	return g.kernel == groupedNVFP4 && g.plan.RHT && g.colOut.Ptr() != 0
}

// allocGrouped allocates the grouped NVFP4 outputs: the per-group
// amaxes (and RHT amaxes), and per covered operand the codes, scales and
// swizzled scales (GroupedNVFP4's layouts), and counts the step's launches
// and least traffic.
func (nvfp4) allocGrouped(s *Step, _ *cuda.Ctx, g *grouped, covered quant.Usage, out func(int) (cuda.Buffer, error)) error {
	rows, cols := g.cfg.Rows, g.cfg.Cols
	twoD := g.kernel == groupedNVFP4TwoD
	row, col := covered&quant.UsageRowwise != 0, covered&quant.UsageColumnwise != 0
	sc := roundUp(ceilDiv(cols, 16), 4)
	rowB, colB := rows*kernels.NVFP4RowBytes(cols), cols*kernels.NVFP4RowBytes(rows)
	csb := kernels.GroupedNVFP4ColScaleBytes(rows, cols)
	if _, err := allocOps(g.wanted(covered), out, byOp(rowB, colB), byOp(rows*sc, csb), true); err != nil {
		return err
	}
	var err error
	words := g.groups
	if g.nvfp4RHTCol() {
		words *= 2
	}
	if g.ws.Amax, err = out(4 * words); err != nil {
		return err
	}
	n, ds := int64(rows)*int64(cols), int64(g.cfg.Input.Size())
	s.bytes += 4 * int64(words)
	if twoD {
		// The amax pass and the 2D kernel (input read twice, every
		// output written once), and a memset per padded scale layout.
		s.kernels += 2
		s.bytes += 2 * n * ds
		if row {
			s.bytes += int64(rowB + 2*rows*sc)
		}
		if col {
			s.bytes += int64(colB + 2*csb)
		}
		if row && ceilDiv(cols, 16)%4 != 0 {
			s.kernels += 2
		}
		if col && cols%128 != 0 {
			s.kernels += 2
		}
		return nil
	}
	if row || !g.plan.RHT {
		// The input amax.
		s.kernels++
		s.bytes += n * ds
	}
	if row {
		s.kernels++
		s.bytes += n*ds + int64(rowB+2*rows*sc)
	}
	if g.nvfp4RHTCol() {
		// The amax of the transformed columns.
		s.kernels++
		s.bytes += n * ds
	}
	if col {
		s.kernels++
		s.bytes += n*ds + int64(colB+2*csb)
	}
	return nil
}

// enqueueGrouped queues the grouped NVFP4 kernels.
func (nvfp4) enqueueGrouped(c *cuda.Ctx, set *kernels.Set, st cuda.Stream, g *grouped) error {
	rows, cols, dt := g.cfg.Rows, g.cfg.Cols, g.cfg.Input
	row := kernels.GroupedNVFP4Out{Data: g.out, Scales: g.scales, Swizzled: g.swz}
	col := kernels.GroupedNVFP4Out{Data: g.colOut, Scales: g.colScales, Swizzled: g.colSwz}
	if g.kernel == groupedNVFP4TwoD {
		return set.GroupedNVFP4TwoD(c, st, dt, g.x, rows, cols, g.splits, g.groups, g.ws, row, col)
	}
	o := kernels.NVFP4Opts{RHT: g.plan.RHT, Signs: g.plan.RHTSignMask, Stochastic: g.plan.Stochastic, Seed: g.seed}
	return set.GroupedNVFP4(c, st, dt, g.x, rows, cols, g.splits, g.groups, g.ws, row, col, o)
}

// readGroup fills res with group i's operands (rows [off, off+n) of
// the input) from the step's downloaded outputs: the rowwise ones at the
// group's rows of the whole-tensor layout, the columnwise ones at
// cols*off/2 (codes) and roundup(cols,128)*off/16 (scales).
func (nvfp4) readGroup(s *Step, c *cuda.Ctx, r *groupOutputs, res *quant.Result, i, off, n int) error {
	g := s.grp
	data, scales, swz, amax, colData, colScales, colSwz := r.data, r.scales, r.swz, r.amax, r.colData, r.colScales, r.colSwz
	cols := g.cfg.Cols
	word := func(k int) float32 { return f32(amax, 4*k) }
	rhtCol := g.nvfp4RHTCol()
	if g.kernel == groupedNVFP4 && rhtCol && data == nil {
		// Only the RHT columnwise operand: the step has no input amax.
		var err error
		if res.Amax, err = s.inputAmax(c, i, off, n); err != nil {
			return err
		}
	} else {
		res.Amax = word(i)
	}
	if data != nil {
		o := &quant.Operand{Element: g.plan.Element, Rows: n, Cols: cols, Scales: g.plan.Scales}
		o.ScaleRows, o.ScaleCols = g.plan.ScaleShape(n, cols, false)
		stride, sc := o.RowStride(), o.ScaleCols
		o.Data = data[off*stride : (off+n)*stride]
		o.ScaleCodes = scales[off*sc : (off+n)*sc]
		o.Swizzled = swz[off*sc : (off+n)*sc]
		o.Amax = word(i)
		o.Scale = scaling.NVFP4TensorScale(o.Amax)
		o.Stochastic = g.plan.Stochastic
		res.Rowwise = o
	}
	if colData != nil {
		o := &quant.Operand{Element: g.plan.Element, Rows: cols, Cols: n, Transposed: true, Scales: g.plan.Scales}
		o.ScaleRows, o.ScaleCols = g.plan.ScaleShape(n, cols, true)
		if o.ScaleCols*16 != n {
			return fmt.Errorf("group %d: %d rows, not a multiple of 128", i, n)
		}
		base, nb := cols*off/2, o.Rows*o.RowStride()
		o.Data = colData[base : base+nb]
		sb, k := o.ScaleRows*off/16, o.ScaleRows*o.ScaleCols
		o.ScaleCodes, o.Swizzled = colScales[sb:sb+k], colSwz[sb:sb+k]
		o.Amax = word(i)
		if rhtCol {
			o.Amax = word(g.groups + i)
			o.RHT, o.RHTSignMask = true, g.plan.RHTSignMask
		}
		o.Scale = scaling.NVFP4TensorScale(o.Amax)
		o.Stochastic = g.plan.Stochastic
		res.Columnwise = o
	}
	return nil
}
