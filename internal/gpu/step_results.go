// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpu

// What a Step gives back after it ran: the raw bytes of every output (for
// byte-for-byte comparisons of eager runs and graph replays) and each
// tensor's decoded result.

import (
	"context"
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/kernels"
)

// Snapshot returns every output and state byte of the step (codes, scales,
// state, history), to compare runs.
func (s *Step) Snapshot(ctx context.Context) ([]byte, error) {
	if err := s.usable(); err != nil {
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
	var bufs []cuda.Buffer
	if s.grp != nil {
		bufs = append(bufs, s.grp.outs...)
	}
	for _, p := range s.parts {
		bufs = append(bufs, p.outs...)
	}
	{
		for _, b := range bufs {
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
	if s.grp != nil {
		return nil, fmt.Errorf("a grouped step's results are per group: use GroupResults")
	}
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
		res, err = p.result(c, s.b.set, s.b.stream)
		return err
	})
	return res, err
}

func (p *part) result(c *cuda.Ctx, set *kernels.Set, st cuda.Stream) (*quant.Result, error) {
	rows, cols := p.cfg.Rows, p.cfg.Cols
	amax, err := p.inputAmax(c, set, st)
	if err != nil {
		return nil, err
	}
	res := &quant.Result{Plan: p.plan, Role: p.cfg.Request.Role, Rows: rows, Cols: cols, Amax: amax}
	state, err := download(c, p.st, kernels.StateBytes)
	if err != nil {
		return nil, fmt.Errorf("reading the state: %w", err)
	}
	for _, u := range []quant.Usage{quant.UsageRowwise, quant.UsageColumnwise} {
		colwise := u == quant.UsageColumnwise
		data, sc, swz := p.row, p.rowSc, p.rowSwz
		if colwise {
			data, sc, swz = p.col, p.colSc, p.colSwz
		}
		if data.Ptr() == 0 {
			continue
		}
		o := &quant.Operand{Element: p.plan.Element, Rows: rows, Cols: cols, Scales: p.plan.Scales, Amax: amax}
		if colwise && p.plan.ColumnwiseTransposed {
			o.Rows, o.Cols, o.Transposed = cols, rows, true
		}
		o.ScaleRows, o.ScaleCols = p.plan.ScaleShape(rows, cols, colwise)
		if o.Data, err = download(c, data, o.Rows*o.RowStride()); err != nil {
			return nil, fmt.Errorf("reading codes: %w", err)
		}
		if err := p.fam.readOperand(c, p, o, colwise, sc, swz, state); err != nil {
			return nil, err
		}
		if colwise {
			res.Columnwise = o
		} else {
			res.Rowwise = o
		}
	}
	return res, nil
}

// inputAmax is max |x| of p's input (NaN ignored), as the result reports
// it: from the step's own amax where one of its kernels computed it, else
// from an amax launch now (outside the step: block scaling has no tensor
// amax, and NVFP4's columnwise operand alone takes the amax of the RHT).
func (p *part) inputAmax(c *cuda.Ctx, set *kernels.Set, st cuda.Stream) (float32, error) {
	src := p.st
	off := kernels.StateAmaxOffset
	switch {
	case p.amX.Ptr() != 0:
		if err := set.NVFP4Amax(c, st, p.cfg.Input, p.x, p.cfg.Rows, p.cfg.Cols, p.amX, false, 0); err != nil {
			return 0, fmt.Errorf("input amax: %w", err)
		}
		src, off = p.amX, 0
	case p.amR.Ptr() != 0:
		// NVFP4: the rowwise operand's amax is the input's.
		src, off = p.amR, 0
	}
	if err := c.StreamSynchronize(st); err != nil {
		return 0, err
	}
	raw, err := download(c, src, off+4)
	if err != nil {
		return 0, fmt.Errorf("reading the amax: %w", err)
	}
	return f32(raw, off), nil
}
