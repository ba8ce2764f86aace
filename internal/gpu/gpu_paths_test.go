// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package gpu

import (
	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant"
)

// The paths below are what the backend did before its fused and grouped
// kernels. They live only here, for the benchmarks that compare before and
// after; the backend has no switch for them.

// perGroup measures a grouped quantize as one launch sequence per group: a
// plain step with one tensor per non-empty group. Measure sees no
// measure.GroupedQuantize and builds that plain step.
type perGroup struct{ measure.GroupedQuantize }

// operandsApart measures a quantize wanting both operands as two tensors,
// the rowwise and the columnwise operand each with its own kernel (and its
// own read of the input): MXFP8 before its fused both-operand kernel.
type operandsApart struct{ measure.Quantize }

// Tensors implements measure.Step.
func (s operandsApart) Tensors() []measure.Tensor {
	row := s.Quantize.Tensors()[0]
	col := row
	row.Request.Usage, col.Request.Usage = quant.UsageRowwise, quant.UsageColumnwise
	if col.State != nil {
		col.State = col.State.Clone()
	}
	return []measure.Tensor{row, col}
}
