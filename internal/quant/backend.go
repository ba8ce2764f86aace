// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quant

import (
	"context"
	"fmt"
)

// Request is what to quantize a tensor with.
type Request struct {
	Recipe Recipe
	Role   TensorRole
	// Usage selects the operands to produce; zero means both.
	Usage Usage
	// State is the delayed-scaling state (required for DelayedScaling,
	// ignored otherwise): the quantize uses State.Scale and records its
	// amax in State.AmaxHistory[0]; State.Update ends the step.
	State *State
	// Seed seeds the Philox stream of stochastic rounding.
	Seed uint64
	// NoOp is the step's no-op flag (see Skipped); nil means none.
	NoOp *float32
	// Output holds the outputs of the previous run of this step, the
	// buffers a graph replay writes into: a step that runs gives it the new
	// values (*Output is replaced) and returns it, a skipped step returns
	// it untouched. Nil means a fresh Result per call.
	Output *Result
}

// EffectiveUsage returns the usage with the zero value resolved to both.
func (r Request) EffectiveUsage() Usage {
	if r.Usage == 0 {
		return UsageBoth
	}
	return r.Usage
}

// Backend quantizes and dequantizes. The reference backend (package
// reference) and the CUDA backend implement it and must return the same
// bytes for the same request.
type Backend interface {
	// Name identifies the backend ("reference", "cuda").
	Name() string
	// Quantize quantizes x.
	Quantize(ctx context.Context, req Request, x Tensor) (*Result, error)
	// QuantizeGrouped splits x along its rows into len(splits) groups of
	// splits[g] rows and quantizes each on its own. For DelayedScaling,
	// states[g] is group g's state and req.State must be nil; other
	// schemes take nil states. A group whose row count is not a multiple
	// of the scheme's GroupAlignment is an error naming the group.
	QuantizeGrouped(ctx context.Context, req Request, x Tensor, splits []int, states []*State) ([]*Result, error)
	// Dequantize decodes one operand (u is UsageRowwise or
	// UsageColumnwise) to float32 in its stored orientation.
	Dequantize(ctx context.Context, r *Result, u Usage) (Tensor, error)
}

// CheckSplits validates grouped-quantize arguments against a tensor with
// the given rows: nonnegative split sizes adding up to rows, each a multiple
// of the scheme's alignment, and one state per group exactly when the
// scheme is DelayedScaling.
func CheckSplits(s Scheme, rows int, splits []int, states []*State) error {
	if len(splits) == 0 {
		return fmt.Errorf("grouped quantize needs at least one group")
	}
	align := s.GroupAlignment()
	if align == 0 {
		return fmt.Errorf("unknown scheme %q", string(s))
	}
	sum := 0
	for g, n := range splits {
		if n < 0 {
			return fmt.Errorf("group %d has a negative row count %d", g, n)
		}
		if n%align != 0 {
			return fmt.Errorf("group %d has %d rows, not a multiple of %d as %s requires", g, n, align, s)
		}
		sum += n
	}
	if sum != rows {
		return fmt.Errorf("split sizes add up to %d rows, the tensor has %d", sum, rows)
	}
	switch {
	case s == DelayedScaling && len(states) != len(splits):
		return fmt.Errorf("delayed scaling needs one state per group: %d groups, %d states", len(splits), len(states))
	case s != DelayedScaling && states != nil:
		return fmt.Errorf("scheme %s keeps no per-group state; pass nil states", s)
	}
	return nil
}

// CheckRequest validates the arguments of Backend.Quantize the same way for
// every backend and returns the resolved plan: a known recipe and role, a
// well-formed tensor, and a valid state for DelayedScaling.
func CheckRequest(req Request, x Tensor) (Plan, error) {
	plan, err := req.Recipe.Plan(req.Role)
	if err != nil {
		return Plan{}, err
	}
	if err := x.Validate(); err != nil {
		return Plan{}, err
	}
	if err := plan.CheckUsage(req.EffectiveUsage()); err != nil {
		return Plan{}, err
	}
	if plan.Scheme == DelayedScaling {
		if err := req.State.Check(req.Recipe); err != nil {
			return Plan{}, err
		}
	}
	return plan, nil
}

// CheckGroupedRequest validates the arguments of Backend.QuantizeGrouped the
// same way for every backend and returns the resolved plan. Per-group states
// are checked by the per-group quantize.
func CheckGroupedRequest(req Request, x Tensor, splits []int, states []*State) (Plan, error) {
	plan, err := req.Recipe.Plan(req.Role)
	if err != nil {
		return Plan{}, err
	}
	if err := x.Validate(); err != nil {
		return Plan{}, err
	}
	if req.State != nil {
		return Plan{}, fmt.Errorf("pass per-group states, not Request.State")
	}
	if req.NoOp != nil || req.Output != nil {
		return Plan{}, ErrNoOpGrouped
	}
	if err := plan.CheckUsage(req.EffectiveUsage()); err != nil {
		return Plan{}, err
	}
	if err := CheckSplits(plan.Scheme, x.Rows, splits, states); err != nil {
		return Plan{}, err
	}
	return plan, nil
}
