// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package linear

import (
	"context"
	"fmt"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/accuracy"
)

// Request is a QuantizedLinear to run.
type Request struct {
	Recipe quant.Recipe
	// X is the input [M, K], W the weight [N, K].
	X, W quant.Tensor
	// XState and WState are the delayed-scaling states of X and W. When
	// nil under DelayedScaling, the operand is calibrated on itself first:
	// one quantize to record its amax and one state update, as after a
	// training step on the same data, so that the measured step uses a
	// realistic scale rather than the initial scale of 1.
	XState, WState *quant.State
	// Seed seeds stochastic rounding (unused by the forward roles today).
	Seed uint64
}

// Validate checks the operands: both well formed, and agreeing on K. Every
// backend's QuantizedLinear starts with it.
func (req Request) Validate() error {
	if err := req.X.Validate(); err != nil {
		return fmt.Errorf("quantized linear: input: %w", err)
	}
	if err := req.W.Validate(); err != nil {
		return fmt.Errorf("quantized linear: weight: %w", err)
	}
	if req.X.Cols != req.W.Cols {
		return fmt.Errorf("quantized linear: input [%d, %d] and weight [%d, %d] disagree on K", req.X.Rows, req.X.Cols, req.W.Rows, req.W.Cols)
	}
	return nil
}

// Result is the outcome of a QuantizedLinear.
type Result struct {
	// X and W are the quantized operands.
	X, W *quant.Result
	// XMetrics and WMetrics compare the dequantized operands with theirs.
	XMetrics, WMetrics accuracy.Metrics
	// Y is the product of the dequantized operands, [M, N]; Exact the
	// float32 product of the unquantized ones.
	Y, Exact quant.Tensor
	// Output compares Y with Exact; Output.SNRdB is the headline figure.
	Output accuracy.Metrics
}

// Runner is a backend that performs a whole QuantizedLinear itself, such
// as the CUDA backend, which dequantizes and multiplies on the device
// instead of in the host GEMM below.
type Runner interface {
	QuantizedLinear(ctx context.Context, req Request) (*Result, error)
}

// Run performs the QuantizedLinear on a backend: by the backend itself when
// it is a Runner, else by quantizing and dequantizing through it and
// multiplying on the host.
func Run(ctx context.Context, b quant.Backend, req Request) (*Result, error) {
	if r, ok := b.(Runner); ok {
		return r.QuantizedLinear(ctx, req)
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	out := &Result{}
	var err error
	out.X, out.XMetrics, err = quantizeOperand(ctx, b, req, quant.Input, req.X, req.XState)
	if err != nil {
		return nil, fmt.Errorf("quantized linear: input: %w", err)
	}
	out.W, out.WMetrics, err = quantizeOperand(ctx, b, req, quant.Weight, req.W, req.WState)
	if err != nil {
		return nil, fmt.Errorf("quantized linear: weight: %w", err)
	}
	xq, err := b.Dequantize(ctx, out.X, quant.UsageRowwise)
	if err != nil {
		return nil, fmt.Errorf("quantized linear: %w", err)
	}
	wq, err := b.Dequantize(ctx, out.W, quant.UsageRowwise)
	if err != nil {
		return nil, fmt.Errorf("quantized linear: %w", err)
	}
	if out.Y, err = GEMM(ctx, xq, wq); err != nil {
		return nil, fmt.Errorf("quantized linear: %w", err)
	}
	if out.Exact, err = GEMM(ctx, req.X, req.W); err != nil {
		return nil, fmt.Errorf("quantized linear: %w", err)
	}
	if out.Output, err = accuracy.Compare(out.Exact, out.Y); err != nil {
		return nil, fmt.Errorf("quantized linear: %w", err)
	}
	return out, nil
}

func quantizeOperand(ctx context.Context, b quant.Backend, req Request, role quant.TensorRole, t quant.Tensor, st *quant.State) (*quant.Result, accuracy.Metrics, error) {
	q := quant.Request{Recipe: req.Recipe, Role: role, Usage: quant.UsageRowwise, State: st, Seed: req.Seed}
	if req.Recipe.Scheme == quant.DelayedScaling && st == nil {
		q.State = quant.NewState(req.Recipe)
		if _, err := b.Quantize(ctx, q, t); err != nil {
			return nil, accuracy.Metrics{}, fmt.Errorf("calibrating: %w", err)
		}
		if err := q.State.Update(req.Recipe, role); err != nil {
			return nil, accuracy.Metrics{}, fmt.Errorf("calibrating: %w", err)
		}
	}
	res, err := b.Quantize(ctx, q, t)
	if err != nil {
		return nil, accuracy.Metrics{}, err
	}
	deq, err := b.Dequantize(ctx, res, quant.UsageRowwise)
	if err != nil {
		return nil, accuracy.Metrics{}, err
	}
	m, err := accuracy.Measure(t, res, deq)
	if err != nil {
		return nil, accuracy.Metrics{}, err
	}
	return res, m, nil
}

// GEMM returns x · wᵀ for x [M, K] and w [N, K], accumulated in float32 as
// the package documentation describes.
func GEMM(ctx context.Context, x, w quant.Tensor) (quant.Tensor, error) {
	if x.Cols != w.Cols {
		return quant.Tensor{}, fmt.Errorf("gemm: K of [%d, %d] and [%d, %d] differ", x.Rows, x.Cols, w.Rows, w.Cols)
	}
	y := quant.NewTensor(x.Rows, w.Rows)
	for i := range x.Rows {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return quant.Tensor{}, fmt.Errorf("gemm: %w", err)
			}
		}
		xr := x.Row(i)
		yr := y.Row(i)
		for j := range w.Rows {
			yr[j] = dot(xr, w.Row(j))
		}
	}
	return y, nil
}

// dot accumulates eight interleaved float32 partial sums, which lets the
// CPU overlap the additions, then adds them pairwise.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s [8]float32
	k := 0
	for ; k+8 <= len(a); k += 8 {
		s[0] += a[k] * b[k]
		s[1] += a[k+1] * b[k+1]
		s[2] += a[k+2] * b[k+2]
		s[3] += a[k+3] * b[k+3]
		s[4] += a[k+4] * b[k+4]
		s[5] += a[k+5] * b[k+5]
		s[6] += a[k+6] * b[k+6]
		s[7] += a[k+7] * b[k+7]
	}
	for ; k < len(a); k++ {
		s[k%8] += a[k] * b[k]
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}
