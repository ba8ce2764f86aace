// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"fmt"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/accuracy"
	"github.com/kquant/kquant/internal/quant/workload"
)

// Splits returns a grouped workload's split sizes for a shape of rows
// rows under scheme s: Uniform and Random aligned to the scheme's group
// alignment (the rows that do not fill an aligned chunk go to the last
// group, which then reports the violation), Explicit as written.
func Splits(g *v1alpha1.Groups, rows int64, s quant.Scheme) ([]int, error) {
	align := s.GroupAlignment()
	switch g.Splits {
	case v1alpha1.SplitExplicit:
		out := make([]int, len(g.Sizes))
		for k, n := range g.Sizes {
			out[k] = int(n)
		}
		return out, nil
	case v1alpha1.SplitRandom:
		return workload.RandomSplits(int(rows), int(g.Count), align, g.Seed)
	default:
		return workload.UniformSplits(int(rows), int(g.Count), align)
	}
}

// alignmentViolation describes the first group whose row count breaks the
// scheme's alignment; empty when every group is aligned.
func alignmentViolation(splits []int, s quant.Scheme) string {
	align := s.GroupAlignment()
	for g, n := range splits {
		if n%align != 0 {
			return fmt.Sprintf("group %d has %d rows, not a multiple of %d as %s requires", g, n, align, s)
		}
	}
	return ""
}

// grouped is a GroupedQuantize shape: the rows split into groups, each
// quantized with its own scales, the accuracy over the whole tensor.
func (r *shapeRunner) grouped(ctx context.Context, i int, stage func(Stage), out *shapeOutcome) (measure.Step, *ShapeArtifacts, error) {
	s := r.spec.Workload.Shapes[i]
	splits, err := Splits(r.spec.Workload.Groups, s.Rows, r.recipe.Scheme)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	// Checked here, before any backend sees the splits, so that every
	// backend reports a misaligned group the same way: as a Fail verdict
	// naming the group, not as an error.
	if out.alignment = alignmentViolation(splits, r.recipe.Scheme); out.alignment != "" {
		return nil, nil, nil
	}
	x, req, err := r.input(i, stage)
	if err != nil {
		return nil, nil, err
	}
	var states []*quant.State
	if r.delayed() {
		states = make([]*quant.State, len(splits))
		for g := range states {
			states[g] = quant.NewState(r.recipe)
		}
		if _, err := r.e.Backend.QuantizeGrouped(ctx, req, x, splits, states); err != nil {
			return nil, nil, fmt.Errorf("calibrating: %w", err)
		}
		for g, st := range states {
			if err := st.Update(r.recipe, req.Role); err != nil {
				return nil, nil, fmt.Errorf("calibrating group %d: %w", g, err)
			}
		}
	}
	results, err := r.e.Backend.QuantizeGrouped(ctx, req, x, splits, cloneStates(states))
	if err != nil {
		return nil, nil, err
	}
	if !r.e.isReference() {
		ref, err := r.e.reference().QuantizeGrouped(ctx, req, x, splits, cloneStates(states))
		if err != nil {
			return nil, nil, fmt.Errorf("reference: %w", err)
		}
		same := len(ref) == len(results)
		for g := range ref {
			same = same && quant.SameBytes(results[g], ref[g])
		}
		out.bitExact = &same
	}
	stage(StageCompare)
	arts := r.artifacts(i)
	arts.Splits = splits
	// Each group's measured operand and its source values, concatenated
	// (the SNR is a sum over elements, whatever their order).
	var exact, approx []float32
	var counts accuracy.Counts
	off := 0
	for g, n := range splits {
		xg := x.RowSlice(off, off+n)
		_, measured := accuracy.Measured(results[g])
		deq, err := r.e.Backend.Dequantize(ctx, results[g], measured)
		if err != nil {
			return nil, nil, fmt.Errorf("group %d: %w", g, err)
		}
		src, err := accuracy.Source(xg, results[g])
		if err != nil {
			return nil, nil, fmt.Errorf("group %d: %w", g, err)
		}
		c, err := accuracy.Count(xg, results[g])
		if err != nil {
			return nil, nil, fmt.Errorf("group %d: %w", g, err)
		}
		counts.Saturated += c.Saturated
		counts.FlushedToZero += c.FlushedToZero
		exact, approx = append(exact, src.Data...), append(approx, deq.Data...)
		arts.Tensors = append(arts.Tensors, TensorArtifacts{
			Name: fmt.Sprintf("group-%d", g), Input: xg, Result: results[g], Dequantized: deq, RowOffset: off,
		})
		off += n
	}
	// SNR over the whole tensor, not an average of the groups' dB.
	all := func(d []float32) quant.Tensor { return quant.Tensor{Rows: 1, Cols: len(d), Data: d} }
	if out.metrics, err = accuracy.Compare(all(exact), all(approx)); err != nil {
		return nil, nil, err
	}
	out.metrics.Saturated, out.metrics.FlushedToZero = counts.Saturated, counts.FlushedToZero
	out.measured = true
	return measure.GroupedQuantize{Request: req, X: x, Splits: splits, States: states}, arts, nil
}

func cloneStates(s []*quant.State) []*quant.State {
	if s == nil {
		return nil
	}
	out := make([]*quant.State, len(s))
	for g := range s {
		out[g] = s[g].Clone()
	}
	return out
}
