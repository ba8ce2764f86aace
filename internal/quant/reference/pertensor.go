// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package reference

import (
	"context"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/internal/quant/scaling"
)

// quantizePerTensor implements DelayedScaling and Float8CurrentScaling: one
// scale for the tensor, rowwise codes and their transpose.
func quantizePerTensor(ctx context.Context, plan quant.Plan, u quant.Usage, x quant.Tensor, st *quant.State, res *quant.Result) error {
	amax := element.AbsMax(x.Data)
	res.Amax = amax
	var scale float32
	if plan.Scheme == quant.DelayedScaling {
		// Delayed scaling casts with the scale of the previous step and
		// only records this step's amax.
		scale = st.Scale
		st.RecordAmax(amax)
	} else {
		scale = scaling.FromAmax(amax, plan.Element.MaxFinite(), plan.Epsilon, plan.Power2Scales)
	}
	scaleInv := scaling.Inverse(scale)

	codes := make([]byte, len(x.Data))
	for i0 := 0; i0 < x.Rows; i0 += ctxEvery {
		if err := ctx.Err(); err != nil {
			return err
		}
		i1 := min(i0+ctxEvery, x.Rows)
		plan.Element.EncodeScaled(codes[i0*x.Cols:i1*x.Cols], x.Data[i0*x.Cols:i1*x.Cols], scale)
	}
	fill := func(o *quant.Operand) {
		o.ScaleInv[0] = scaleInv
		o.Scale = scale
		o.Amax = amax
	}
	if u&quant.UsageRowwise != 0 {
		o := newOperand(plan, x.Rows, x.Cols, false, codes)
		fill(o)
		res.Rowwise = o
	}
	if u&quant.UsageColumnwise != 0 {
		o := newOperand(plan, x.Rows, x.Cols, true, nil)
		transposeCodes(o.Data, codes, x.Rows, x.Cols)
		fill(o)
		res.Columnwise = o
	}
	return nil
}
