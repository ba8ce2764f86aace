// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quant

import "errors"

// ErrNoOutputToKeep is returned for a skipped step that has no outputs to
// leave untouched (Request.Output is nil): there is nothing to return.
var ErrNoOutputToKeep = errors.New("the no-op flag is set but the request has no Output to leave untouched")

// ErrNoOpGrouped is returned for a grouped quantize with a no-op flag:
// grouped steps do not take the flag yet.
var ErrNoOpGrouped = errors.New("grouped quantizes do not take a no-op flag yet")

// Skipped reports whether a step with this no-op flag is skipped: the flag
// exists and holds exactly 1, as TE's kernels test it.
//
// TransformerEngine's quantize kernels take an optional device-side no-op
// flag (a float32 in device memory; TE PRs 3246 and 3271): a kernel that
// reads exactly 1.0 from it returns before writing anything. A captured
// CUDA graph can so skip a quantize at replay, chosen by a value written
// to device memory, without being captured again. kquant gives every
// quantize step the same flag, with these semantics:
//
//   - Request.NoOp points at the flag's value; nil means no flag. The step
//     is skipped when *NoOp == 1 (any other value, NaN included, runs it),
//     read when the step runs, so that one request replayed with the value
//     changed in between behaves like a graph replay.
//   - A skipped step leaves its outputs (Request.Output, returned as is),
//     the delayed-scaling amax history and the scale untouched: it records
//     no amax, and State.UpdateUnlessNoOp does not end the step either.
func Skipped(noOp *float32) bool {
	return noOp != nil && *noOp == 1
}

// UpdateUnlessNoOp ends a delayed-scaling step as Update does, unless the
// step's no-op flag skipped it: then the history and the scale stay.
func (s *State) UpdateUnlessNoOp(noOp *float32, r Recipe, role TensorRole) error {
	if Skipped(noOp) {
		return nil
	}
	return s.Update(r, role)
}
