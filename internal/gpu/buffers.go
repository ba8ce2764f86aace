// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
)

// This file holds the Step's device buffers as the families use them:
// allocating a step's own and its outputs (which Snapshot reads), an
// operand's codes and scales sized by operand, and decoding what is read
// back.

// alloc allocates a buffer the step owns (freed by Close).
func (s *Step) alloc(c *cuda.Ctx, n int) (cuda.Buffer, error) {
	buf, err := c.Alloc(max(n, 1))
	if err != nil {
		return cuda.Buffer{}, err
	}
	s.size += int64(buf.Size())
	s.owned = append(s.owned, buf)
	return buf, nil
}

// out allocates an output buffer of p that Snapshot reads, zeroed: a
// buffer that no launch of the step writes (an amax computed only when
// the result is read) then reads the same in every step of the config,
// so that two steps' snapshots compare.
func (s *Step) out(c *cuda.Ctx, p *part, n int) (cuda.Buffer, error) {
	buf, err := s.alloc(c, n)
	if err != nil {
		return buf, err
	}
	p.outs = append(p.outs, buf)
	if err := c.Memset(buf, 0); err != nil {
		return buf, fmt.Errorf("zeroing an output: %w", err)
	}
	return buf, nil
}

// outBuf is an output buffer to allocate and its size in bytes.
type outBuf struct {
	b *cuda.Buffer
	n int
}

// allocOuts allocates bufs in order with out (partOut for a part, the
// grouped step's out), stopping at the first error.
func allocOuts(out func(int) (cuda.Buffer, error), bufs ...outBuf) error {
	for _, o := range bufs {
		var err error
		if *o.b, err = out(o.n); err != nil {
			return err
		}
	}
	return nil
}

// partOut is out for p's buffers.
func (s *Step) partOut(c *cuda.Ctx, p *part) func(int) (cuda.Buffer, error) {
	return func(n int) (cuda.Buffer, error) { return s.out(c, p, n) }
}

// opBufs are one operand's output buffers, of a part or of a grouped step:
// its codes, its scales and (MXFP8, NVFP4) their swizzled layout.
type opBufs struct {
	colwise       bool
	data, sc, swz *cuda.Buffer
}

// alloc allocates the operand's codes (data bytes) and scales (sc bytes)
// and, with swz, their swizzled layout (sc bytes too), with out.
func (o opBufs) alloc(out func(int) (cuda.Buffer, error), data, sc int, swz bool) error {
	bufs := []outBuf{{o.data, data}, {o.sc, sc}}
	if swz {
		bufs = append(bufs, outBuf{o.swz, sc})
	}
	return allocOuts(out, bufs...)
}

// allocOps allocates each operand's codes (data(colwise) bytes) and scales
// (scales(colwise) bytes; with swz their swizzled layout, as many) with
// out, in order, and returns the scales' bytes (one layout), summed.
func allocOps(ops []opBufs, out func(int) (cuda.Buffer, error), data, scales func(colwise bool) int, swz bool) (int64, error) {
	total := int64(0)
	for _, o := range ops {
		if err := o.alloc(out, data(o.colwise), scales(o.colwise), swz); err != nil {
			return 0, err
		}
		total += int64(scales(o.colwise))
	}
	return total, nil
}

// allocFP8Ops allocates p's wanted operands for an FP8 family: codes of
// p.n bytes, and scales of size bytes per entry of the operand's scale
// shape (and with swz their swizzled layout); it returns the scales'
// bytes.
func (s *Step) allocFP8Ops(c *cuda.Ctx, p *part, shape func(rows, cols int, colwise bool) (int, int), size int, swz bool) (int64, error) {
	scales := func(colwise bool) int {
		r, cc := shape(p.cfg.Rows, p.cfg.Cols, colwise)
		return size * r * cc
	}
	return allocOps(p.wanted(), s.partOut(c, p), byOp(p.n, p.n), scales, swz)
}

// byOp is a size by operand: row for the rowwise one, col for the
// columnwise one.
func byOp(row, col int) func(colwise bool) int {
	return func(colwise bool) int {
		if colwise {
			return col
		}
		return row
	}
}

// sumOps sums size over ops.
func sumOps(ops []opBufs, size func(colwise bool) int) int64 {
	total := int64(0)
	for _, o := range ops {
		total += int64(size(o.colwise))
	}
	return total
}

// wantedOps is the buffers of the operands in usage, rowwise first.
func wantedOps(usage quant.Usage, row, col opBufs) []opBufs {
	var w []opBufs
	if usage&quant.UsageRowwise != 0 {
		w = append(w, row)
	}
	if usage&quant.UsageColumnwise != 0 {
		col.colwise = true
		w = append(w, col)
	}
	return w
}

// wanted is the buffers of p's operands that its usage asks for.
func (p *part) wanted() []opBufs {
	return wantedOps(p.usage, opBufs{false, &p.row, &p.rowSc, &p.rowSwz}, opBufs{true, &p.col, &p.colSc, &p.colSwz})
}

// f32 decodes the float32 at byte offset off of b.
func f32(b []byte, off int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[off:])) }

// floats decodes n float32 at element offset off of b.
func floats(b []byte, off, n int) []float32 {
	out := make([]float32, n)
	for k := range out {
		out[k] = f32(b, 4*(off+k))
	}
	return out
}

func download(c *cuda.Ctx, b cuda.Buffer, n int) ([]byte, error) {
	out := make([]byte, n)
	if err := c.CopyToHost(out, b); err != nil {
		return nil, err
	}
	return out, nil
}
