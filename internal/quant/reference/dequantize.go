// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package reference

import (
	"context"
	"fmt"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/internal/quant/scaling"
)

// Dequantize implements quant.Backend: every element is decoded as
// code value × decode factor in float32 (one rounding), where the factor is
// scale_inv (per tensor, block scaling) or 2^(e-127) (MXFP8); NVFP4 decodes
// as (E2M1 × E4M3 block scale) / S.
func (b *Backend) Dequantize(ctx context.Context, r *quant.Result, u quant.Usage) (quant.Tensor, error) {
	o := r.Operand(u)
	if o == nil {
		return quant.Tensor{}, fmt.Errorf("dequantize: result has no %s operand", u)
	}
	out := quant.NewTensor(o.Rows, o.Cols)
	columnwise := u == quant.UsageColumnwise
	tab := o.Element.DecodeTable()
	err := eachRow(ctx, o.Rows, func(i int) {
		row := out.Row(i)
		for j := range row {
			k := r.Plan.ScaleIndex(i, j, o.ScaleCols, columnwise)
			q := o.Code(i, j)
			switch o.Scales {
			case quant.ScaleFloat32:
				row[j] = tab[q] * o.ScaleInv[k]
			case quant.ScaleE8M0:
				row[j] = tab[q] * element.E8M0ToFloat32(o.ScaleCodes[k])
			case quant.ScaleE4M3:
				row[j] = scaling.NVFP4Decode(q, o.ScaleCodes[k], o.TensorScale(i))
			}
		}
	})
	if err != nil {
		return quant.Tensor{}, fmt.Errorf("dequantize: %w", err)
	}
	return out, nil
}
