// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quant

import (
	"fmt"

	"github.com/kquant/kquant/internal/quant/element"
)

// Tensor is a row-major float32 matrix [Rows, Cols]: Rows is the product of
// the leading dimensions (M, or T tokens), Cols the last dimension (K, H).
type Tensor struct {
	Rows, Cols int
	Data       []float32
}

// NewTensor returns a zeroed tensor.
func NewTensor(rows, cols int) Tensor {
	return Tensor{Rows: rows, Cols: cols, Data: make([]float32, rows*cols)}
}

// Validate checks that the shape is nonnegative and matches the data.
func (t Tensor) Validate() error {
	if t.Rows < 0 || t.Cols < 0 {
		return fmt.Errorf("negative tensor shape [%d, %d]", t.Rows, t.Cols)
	}
	if len(t.Data) != t.Rows*t.Cols {
		return fmt.Errorf("tensor [%d, %d] needs %d elements, has %d", t.Rows, t.Cols, t.Rows*t.Cols, len(t.Data))
	}
	return nil
}

// Row returns row i as a slice of the tensor's data.
func (t Tensor) Row(i int) []float32 { return t.Data[i*t.Cols : (i+1)*t.Cols] }

// RowSlice returns rows [from, to) as a tensor sharing the data.
func (t Tensor) RowSlice(from, to int) Tensor {
	return Tensor{Rows: to - from, Cols: t.Cols, Data: t.Data[from*t.Cols : to*t.Cols]}
}

// TensorFromBF16 widens bfloat16 bit patterns to a float32 tensor exactly.
func TensorFromBF16(rows, cols int, bits []uint16) (Tensor, error) {
	return widen(rows, cols, bits, element.BF16ToFloat32)
}

// TensorFromFP16 widens IEEE half bit patterns to a float32 tensor exactly.
func TensorFromFP16(rows, cols int, bits []uint16) (Tensor, error) {
	return widen(rows, cols, bits, element.FP16ToFloat32)
}

func widen(rows, cols int, bits []uint16, f func(uint16) float32) (Tensor, error) {
	if rows < 0 || cols < 0 || len(bits) != rows*cols {
		return Tensor{}, fmt.Errorf("%d half-precision values do not fill a [%d, %d] tensor", len(bits), rows, cols)
	}
	t := NewTensor(rows, cols)
	for i, h := range bits {
		t.Data[i] = f(h)
	}
	return t, nil
}
