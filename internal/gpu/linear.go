// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"context"
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/accuracy"
	"github.com/kquant/kquant/internal/quant/linear"
)

// QuantizedLinear is package linear's operation with the device doing the
// work: X (Input role) and W (Weight role) are quantized rowwise by this
// backend (bytes equal to the reference's), dequantized on the device, and
// multiplied by the float32 GEMM kernel, y = x̂ · Ŵᵀ; the float32 product
// of the unquantized operands (Exact) is the same kernel's. Only the
// metrics are computed on the host.
//
// The GEMM's summation order differs from linear.GEMM's, so Y is not a byte
// contract with the reference: each element lies within float32
// summation-order error of it, |y_gpu - y_ref| <= 2·K·2^-24·Σ_k |x̂_k ŵ_k|
// (both sums within K·u·Σ|x̂ ŵ| of the exact sum), and the output SNR is
// the reference's to that tolerance.
func (b *Backend) QuantizedLinear(ctx context.Context, req linear.Request) (*linear.Result, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	m, n, k := req.X.Rows, req.W.Rows, req.X.Cols
	out := &linear.Result{}
	var err error
	if out.X, err = b.quantizeOperand(ctx, req, quant.Input, req.X, req.XState); err != nil {
		return nil, fmt.Errorf("quantized linear: input: %w", err)
	}
	if out.W, err = b.quantizeOperand(ctx, req, quant.Weight, req.W, req.WState); err != nil {
		return nil, fmt.Errorf("quantized linear: weight: %w", err)
	}
	xd, wd := quant.NewTensor(m, k), quant.NewTensor(n, k)
	out.Y, out.Exact = quant.NewTensor(m, n), quant.NewTensor(m, n)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	err = b.dev.Do(func(c *cuda.Ctx) error {
		if m*n*k == 0 {
			return nil
		}
		var bufs []cuda.Buffer
		defer func() {
			_ = c.StreamSynchronize(b.stream)
			for _, x := range bufs {
				_ = c.Free(x)
			}
		}()
		alloc := func(elems int) (cuda.Buffer, error) {
			x, err := c.Alloc(4 * elems)
			if err == nil {
				bufs = append(bufs, x)
			}
			return x, err
		}
		var dx, dw, y, x32, w32, exact cuda.Buffer
		for _, a := range []struct {
			dst   *cuda.Buffer
			elems int
		}{{&dx, m * k}, {&dw, n * k}, {&y, m * n}, {&x32, m * k}, {&w32, n * k}, {&exact, m * n}} {
			if *a.dst, err = alloc(a.elems); err != nil {
				return err
			}
		}
		if err := b.dequantizeTo(c, out.X, quant.UsageRowwise, dx); err != nil {
			return fmt.Errorf("dequantizing the input: %w", err)
		}
		if err := b.dequantizeTo(c, out.W, quant.UsageRowwise, dw); err != nil {
			return fmt.Errorf("dequantizing the weight: %w", err)
		}
		if err := b.set.GEMM(c, b.stream, dx, dw, y, m, n, k); err != nil {
			return err
		}
		if err := cuda.Upload(c, x32, req.X.Data); err != nil {
			return err
		}
		if err := cuda.Upload(c, w32, req.W.Data); err != nil {
			return err
		}
		if err := b.set.GEMM(c, b.stream, x32, w32, exact, m, n, k); err != nil {
			return err
		}
		if err := c.StreamSynchronize(b.stream); err != nil {
			return err
		}
		for _, d := range []struct {
			dst []float32
			src cuda.Buffer
		}{{xd.Data, dx}, {wd.Data, dw}, {out.Y.Data, y}, {out.Exact.Data, exact}} {
			if err := cuda.Download(c, d.dst, d.src); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("quantized linear [%d, %d] x [%d, %d] on %s: %w", m, k, n, k, Name, err)
	}
	if out.XMetrics, err = accuracy.Measure(req.X, out.X, xd); err != nil {
		return nil, fmt.Errorf("quantized linear: input: %w", err)
	}
	if out.WMetrics, err = accuracy.Measure(req.W, out.W, wd); err != nil {
		return nil, fmt.Errorf("quantized linear: weight: %w", err)
	}
	if out.Output, err = accuracy.Compare(out.Exact, out.Y); err != nil {
		return nil, fmt.Errorf("quantized linear: %w", err)
	}
	return out, nil
}

// quantizeOperand quantizes one operand rowwise as linear.Run does,
// calibrating a delayed-scaling operand without a state on itself first.
func (b *Backend) quantizeOperand(ctx context.Context, req linear.Request, role quant.TensorRole, t quant.Tensor, st *quant.State) (*quant.Result, error) {
	q := quant.Request{Recipe: req.Recipe, Role: role, Usage: quant.UsageRowwise, State: st, Seed: req.Seed}
	if req.Recipe.Scheme == quant.DelayedScaling && st == nil {
		q.State = quant.NewState(req.Recipe)
		if _, err := b.Quantize(ctx, q, t); err != nil {
			return nil, fmt.Errorf("calibrating: %w", err)
		}
		if err := q.State.Update(req.Recipe, role); err != nil {
			return nil, fmt.Errorf("calibrating: %w", err)
		}
	}
	return b.Quantize(ctx, q, t)
}

// The agent's benchmark engine reaches QuantizedLinear through linear.Run.
var _ linear.Runner = (*Backend)(nil)
