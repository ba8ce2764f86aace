// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"fmt"

	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/linear"
)

// linear is a QuantizedLinear shape: input and weight quantized, their
// product compared with the exact one.
func (r *shapeRunner) linear(ctx context.Context, i int, stage func(Stage), out *shapeOutcome) (measure.Step, *ShapeArtifacts, error) {
	s := r.spec.Workload.Shapes[i]
	n := outFeatures(s)
	stage(StageInput)
	// Two streams per shape, so that input and weight are independent.
	x, err := r.generate(uint32(2*i), s.Rows, s.Cols)
	if err != nil {
		return nil, nil, err
	}
	w, err := r.generate(uint32(2*i+1), n, s.Cols)
	if err != nil {
		return nil, nil, err
	}
	stage(StageQuantize)
	seed := uint64(r.spec.Workload.Seed)
	res, err := linear.Run(ctx, r.e.Backend, linear.Request{Recipe: r.recipe, X: x, W: w, Seed: seed})
	if err != nil {
		return nil, nil, err
	}
	stage(StageCompare)
	// linear.Run calibrates delayed scaling on each operand; doing the same
	// here reproduces its states for the comparison and the timed step.
	req := r.request(quant.Input, quant.UsageRowwise)
	var states []*quant.State
	for k, t := range []quant.Tensor{x, w} {
		req.Role = []quant.TensorRole{quant.Input, quant.Weight}[k]
		st, err := r.calibrated(ctx, r.e.Backend, req, t)
		if err != nil {
			return nil, nil, err
		}
		if st != nil {
			states = append(states, st)
		}
		if r.e.isReference() {
			continue
		}
		req.State = cloneState(st)
		ref, err := r.e.reference().Quantize(ctx, req, t)
		if err != nil {
			return nil, nil, fmt.Errorf("reference: %w", err)
		}
		req.State = nil
		same := quant.SameBytes([]*quant.Result{res.X, res.W}[k], ref) && (out.bitExact == nil || *out.bitExact)
		out.bitExact = &same
	}
	xd, err := r.e.Backend.Dequantize(ctx, res.X, quant.UsageRowwise)
	if err != nil {
		return nil, nil, err
	}
	wd, err := r.e.Backend.Dequantize(ctx, res.W, quant.UsageRowwise)
	if err != nil {
		return nil, nil, err
	}
	// The output's SNR and error; the operands' clamped and flushed counts,
	// since the output is not quantized itself.
	out.metrics = res.Output
	out.metrics.Saturated = res.XMetrics.Saturated + res.WMetrics.Saturated
	out.metrics.FlushedToZero = res.XMetrics.FlushedToZero + res.WMetrics.FlushedToZero
	out.measured = true
	arts := r.artifacts(i)
	arts.Tensors = []TensorArtifacts{
		{Name: "x", Input: x, Result: res.X, Dequantized: xd},
		{Name: "w", Input: w, Result: res.W, Dequantized: wd},
	}
	arts.Y, arts.Exact = &res.Y, &res.Exact
	// The product reads the rowwise operands (compared above); the timed
	// step produces the operands of the workload's usage: Both is a
	// training forward, which keeps the columnwise ones for the backward
	// GEMMs, Rowwise inference.
	req.Role, req.Usage = quant.Input, usageFromAPI(r.spec.Workload.Usage)
	return measure.QuantizedLinear{Request: req, X: x, W: w, States: states}, arts, nil
}
