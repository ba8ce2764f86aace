// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package reference

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/kquant/kquant/internal/quant"
)

// TestNoOpFlagSequence replays one delayed-scaling request, as a captured
// graph would, with the flag set, cleared and set again, and compares every
// step with an eager run of the steps that were not skipped: a skipped step
// must leave the outputs, the amax history and the scale untouched.
func TestNoOpFlagSequence(t *testing.T) {
	ctx := context.Background()
	r := quant.DefaultRecipe(quant.DelayedScaling)
	r.Delayed.AmaxHistoryLen = 4
	xs := []quant.Tensor{
		row(1, -2, 3, 0.5), row(100, 7, -9, 1e-3), row(-0.25, 4, 2, 8), row(1e4, -3, 0, 6),
	}
	flags := []float32{0, 1, 0, 1}

	var flag float32
	st := quant.NewState(r)
	out := &quant.Result{}
	graph := quant.Request{Recipe: r, Role: quant.Input, State: st, NoOp: &flag, Output: out}

	eagerState := quant.NewState(r)
	var eager *quant.Result
	for i, x := range xs {
		flag = flags[i]
		before, beforeState := *out, st.Clone()
		got, err := New().Quantize(ctx, graph, x)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got != out {
			t.Fatalf("step %d returned a new result, not Request.Output", i)
		}
		if err := st.UpdateUnlessNoOp(&flag, r, quant.Input); err != nil {
			t.Fatal(err)
		}
		if flag == 1 {
			if !quant.SameBytes(&before, out) {
				t.Errorf("step %d (flag set) changed the outputs", i)
			}
			if st.Scale != beforeState.Scale || !slices.Equal(st.AmaxHistory, beforeState.AmaxHistory) {
				t.Errorf("step %d (flag set) advanced the state: %+v -> %+v", i, beforeState, st)
			}
			continue
		}
		eager = mustQuantize(t, r, quant.Input, eagerState, x)
		if err := eagerState.Update(r, quant.Input); err != nil {
			t.Fatal(err)
		}
		if !quant.SameBytes(eager, out) {
			t.Errorf("step %d (flag clear) differs from the eager run", i)
		}
		if st.Scale != eagerState.Scale || !slices.Equal(st.AmaxHistory, eagerState.AmaxHistory) {
			t.Errorf("step %d state %+v, eager %+v", i, st, eagerState)
		}
	}
}

// TestNoOpFlagValues: only exactly 1 skips, as in TE's kernels.
func TestNoOpFlagValues(t *testing.T) {
	for _, v := range []float32{0, -1, 2, 0.99999994, float32(math.NaN()), float32(math.Inf(1))} {
		if quant.Skipped(&v) {
			t.Errorf("flag %g skips", v)
		}
	}
	one := float32(1)
	if !quant.Skipped(&one) || quant.Skipped(nil) {
		t.Error("flag 1 runs or no flag skips")
	}
}

func TestNoOpFlagRefusals(t *testing.T) {
	ctx := context.Background()
	one := float32(1)
	r := quant.DefaultRecipe(quant.Float8CurrentScaling)
	_, err := New().Quantize(ctx, quant.Request{Recipe: r, Role: quant.Input, NoOp: &one}, row(1, 2))
	if !errors.Is(err, quant.ErrNoOutputToKeep) {
		t.Errorf("skip without Output: %v, want ErrNoOutputToKeep", err)
	}
	x := quant.NewTensor(32, 16)
	_, err = New().QuantizeGrouped(ctx, quant.Request{Recipe: r, Role: quant.Input, NoOp: &one}, x, []int{16, 16}, nil)
	if !errors.Is(err, quant.ErrNoOpGrouped) {
		t.Errorf("grouped with a flag: %v, want ErrNoOpGrouped", err)
	}
}
