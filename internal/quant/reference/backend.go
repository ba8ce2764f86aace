// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package reference

import (
	"context"
	"fmt"

	"github.com/kquant/kquant/internal/quant"
)

// Backend is the reference backend. The zero value is ready to use.
type Backend struct{}

// New returns the reference backend.
func New() *Backend { return &Backend{} }

var _ quant.Backend = (*Backend)(nil)

// Name returns "reference".
func (*Backend) Name() string { return "reference" }

// Quantize implements quant.Backend.
func (b *Backend) Quantize(ctx context.Context, req quant.Request, x quant.Tensor) (*quant.Result, error) {
	plan, err := quant.CheckRequest(req, x)
	if err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	if quant.Skipped(req.NoOp) {
		if req.Output == nil {
			return nil, fmt.Errorf("quantize: %w", quant.ErrNoOutputToKeep)
		}
		return req.Output, nil
	}
	res, err := quantize(ctx, plan, req, x, req.State, 0)
	if err != nil {
		return nil, fmt.Errorf("quantize %s [%d, %d]: %w", plan.Scheme, x.Rows, x.Cols, err)
	}
	if req.Output != nil {
		*req.Output = *res
		return req.Output, nil
	}
	return res, nil
}

// QuantizeGrouped implements quant.Backend.
func (b *Backend) QuantizeGrouped(ctx context.Context, req quant.Request, x quant.Tensor, splits []int, states []*quant.State) ([]*quant.Result, error) {
	plan, err := quant.CheckGroupedRequest(req, x, splits, states)
	if err != nil {
		return nil, fmt.Errorf("grouped quantize: %w", err)
	}
	out := make([]*quant.Result, len(splits))
	off := 0
	for g, n := range splits {
		var st *quant.State
		if plan.Scheme == quant.DelayedScaling {
			st = states[g]
			if err := st.Check(req.Recipe); err != nil {
				return nil, fmt.Errorf("grouped quantize: group %d: %w", g, err)
			}
		}
		res, err := quantize(ctx, plan, req, x.RowSlice(off, off+n), st, uint32(g))
		if err != nil {
			return nil, fmt.Errorf("grouped quantize: group %d: %w", g, err)
		}
		out[g] = res
		off += n
	}
	return out, nil
}

func quantize(ctx context.Context, plan quant.Plan, req quant.Request, x quant.Tensor, st *quant.State, group uint32) (*quant.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	u := req.EffectiveUsage()
	res := &quant.Result{Plan: plan, Role: req.Role, Rows: x.Rows, Cols: x.Cols}
	var err error
	switch plan.Scheme {
	case quant.DelayedScaling, quant.Float8CurrentScaling:
		err = quantizePerTensor(ctx, plan, u, x, st, res)
	case quant.Float8BlockScaling:
		err = quantizeBlock(ctx, plan, u, x, res)
	case quant.MXFP8BlockScaling:
		err = quantizeMXFP8(ctx, plan, u, x, res)
	case quant.NVFP4BlockScaling:
		err = quantizeNVFP4(ctx, plan, u, x, req.Seed, group, res)
	default:
		err = fmt.Errorf("unknown scheme %q", string(plan.Scheme))
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// ctxEvery is how many rows the loops process between context checks.
const ctxEvery = 256

// newOperand allocates an operand of the plan's element type and scale kind
// with the contract's padded scale shape, and its data unless the caller
// supplies codes it already has (data != nil).
func newOperand(plan quant.Plan, rows, cols int, columnwise bool, data []byte) *quant.Operand {
	o := &quant.Operand{Element: plan.Element, Rows: rows, Cols: cols, Scales: plan.Scales}
	if columnwise && plan.ColumnwiseTransposed {
		o.Rows, o.Cols, o.Transposed = cols, rows, true
	}
	o.Data = data
	if o.Data == nil {
		o.Data = make([]byte, o.Rows*o.RowStride())
	}
	o.ScaleRows, o.ScaleCols = plan.ScaleShape(rows, cols, columnwise)
	if plan.Scales == quant.ScaleFloat32 {
		o.ScaleInv = make([]float32, o.ScaleRows*o.ScaleCols)
	} else {
		o.ScaleCodes = make([]byte, o.ScaleRows*o.ScaleCols)
	}
	return o
}

// transposeCodes writes the [rows, cols] byte matrix src transposed into
// dst ([cols, rows]).
func transposeCodes(dst, src []byte, rows, cols int) {
	// Tiles of 64x64 keep both sides in cache for large matrices.
	const t = 64
	for i0 := 0; i0 < rows; i0 += t {
		for j0 := 0; j0 < cols; j0 += t {
			for i := i0; i < min(i0+t, rows); i++ {
				row := src[i*cols : (i+1)*cols]
				for j := j0; j < min(j0+t, cols); j++ {
					dst[j*rows+i] = row[j]
				}
			}
		}
	}
}
