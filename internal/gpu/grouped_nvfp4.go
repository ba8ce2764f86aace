package gpu

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/scaling"
	"github.com/kquant/kquant/kernels"
)

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

// addGroupedNVFP4 allocates the grouped NVFP4 outputs: the per-group
// amaxes (and RHT amaxes), and per covered operand the codes, scales and
// swizzled scales (GroupedNVFP4's layouts), and counts the step's launches
// and least traffic.
func (s *Step) addGroupedNVFP4(g *grouped, covered quant.Usage, out func(int) (cuda.Buffer, error)) error {
	rows, cols := g.cfg.Rows, g.cfg.Cols
	twoD := g.kernel == groupedNVFP4TwoD
	row, col := covered&quant.UsageRowwise != 0, covered&quant.UsageColumnwise != 0
	sc := roundUp(ceilDiv(cols, 16), 4)
	rowB, colB := rows*kernels.NVFP4RowBytes(cols), cols*kernels.NVFP4RowBytes(rows)
	csb := kernels.GroupedNVFP4ColScaleBytes(rows, cols)
	var err error
	if row {
		if g.out, err = out(rowB); err != nil {
			return err
		}
	}
	if row || twoD {
		// The 2D kernel writes the rowwise tile scales even when only the
		// columnwise operand is wanted.
		if g.scales, err = out(rows * sc); err != nil {
			return err
		}
	}
	if row {
		if g.swz, err = out(rows * sc); err != nil {
			return err
		}
	}
	if col {
		if g.colOut, err = out(colB); err != nil {
			return err
		}
		if g.colScales, err = out(csb); err != nil {
			return err
		}
		if g.colSwz, err = out(csb); err != nil {
			return err
		}
	}
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
		s.bytes += 2*n*ds + int64(rows*sc)
		if row {
			s.bytes += int64(rowB + rows*sc)
		}
		if col {
			s.bytes += int64(colB + 2*csb)
		}
		if ceilDiv(cols, 16)%4 != 0 {
			s.kernels += 1 + b2i(row)
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

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// enqueueNVFP4 queues the grouped NVFP4 kernels.
func (g *grouped) enqueueNVFP4(c *cuda.Ctx, set *kernels.Set, st cuda.Stream) error {
	rows, cols, dt := g.cfg.Rows, g.cfg.Cols, g.cfg.Input
	row := kernels.GroupedNVFP4Out{Data: g.out, Scales: g.scales, Swizzled: g.swz}
	col := kernels.GroupedNVFP4Out{Data: g.colOut, Scales: g.colScales, Swizzled: g.colSwz}
	if g.kernel == groupedNVFP4TwoD {
		return set.GroupedNVFP4TwoD(c, st, dt, g.x, rows, cols, g.splits, g.groups, g.ws, row, col)
	}
	o := kernels.NVFP4Opts{RHT: g.plan.RHT, Signs: g.plan.RHTSignMask, Stochastic: g.plan.Stochastic, Seed: g.seed}
	return set.GroupedNVFP4(c, st, dt, g.x, rows, cols, g.splits, g.groups, g.ws, row, col, o)
}

// nvfp4GroupResult fills res with group i's operands (rows [off, off+n) of
// the input) from the step's downloaded outputs: the rowwise ones at the
// group's rows of the whole-tensor layout, the columnwise ones at
// cols*off/2 (codes) and roundup(cols,128)*off/16 (scales).
func (s *Step) nvfp4GroupResult(c *cuda.Ctx, res *quant.Result, i, off, n int, data, scales, swz, amax, colData, colScales, colSwz []byte) error {
	g := s.grp
	cols := g.cfg.Cols
	word := func(k int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(amax[4*k:])) }
	rhtCol := g.nvfp4RHTCol()
	if g.kernel == groupedNVFP4 && rhtCol && data == nil {
		// Only the RHT columnwise operand: the step has no input amax;
		// one launch now, outside the step.
		x := g.x.Slice(off*cols*g.cfg.Input.Size(), n*cols*g.cfg.Input.Size())
		if err := s.b.set.NVFP4Amax(c, s.b.stream, g.cfg.Input, x, n, cols, g.amScratch, false, 0); err != nil {
			return fmt.Errorf("group %d amax: %w", i, err)
		}
		if err := c.StreamSynchronize(s.b.stream); err != nil {
			return err
		}
		raw, err := download(c, g.amScratch, 4)
		if err != nil {
			return err
		}
		res.Amax = f32(raw, 0)
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
