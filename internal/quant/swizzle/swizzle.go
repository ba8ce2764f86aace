// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package swizzle

import "fmt"

// Offset returns the byte offset of entry (i, j) of a swizzled matrix with
// cols columns.
func Offset(i, j, cols int) int {
	return ((i/128)*(cols/4)+j/4)*512 + (i%32)*16 + ((i%128)/32)*4 + j%4
}

func checkShape(n, rows, cols int) error {
	switch {
	case rows < 0 || cols < 0:
		return fmt.Errorf("negative scale shape [%d, %d]", rows, cols)
	case rows%128 != 0 || cols%4 != 0:
		return fmt.Errorf("scale shape [%d, %d] is not padded to [128k, 4k]", rows, cols)
	case n != rows*cols:
		return fmt.Errorf("scale matrix has %d entries, shape [%d, %d] needs %d", n, rows, cols, rows*cols)
	}
	return nil
}

// Swizzle returns the GEMM layout of the row-major matrix src of shape
// [rows, cols].
func Swizzle(src []byte, rows, cols int) ([]byte, error) {
	return relayout(src, rows, cols, false)
}

// Unswizzle is the inverse of Swizzle.
func Unswizzle(src []byte, rows, cols int) ([]byte, error) {
	return relayout(src, rows, cols, true)
}

// relayout moves every entry of src from the row-major layout to the GEMM
// layout (Offset), or back when inverse.
func relayout(src []byte, rows, cols int, inverse bool) ([]byte, error) {
	if err := checkShape(len(src), rows, cols); err != nil {
		if inverse {
			return nil, fmt.Errorf("unswizzling: %w", err)
		}
		return nil, fmt.Errorf("swizzling: %w", err)
	}
	dst := make([]byte, len(src))
	for i := range rows {
		for j := range cols {
			rowMajor, gemm := i*cols+j, Offset(i, j, cols)
			if inverse {
				dst[rowMajor] = src[gemm]
			} else {
				dst[gemm] = src[rowMajor]
			}
		}
	}
	return dst, nil
}

// Transpose returns the [cols, rows] transpose of the row-major [rows, cols]
// matrix src.
func Transpose(src []byte, rows, cols int) []byte {
	dst := make([]byte, len(src))
	for i := range rows {
		for j := range cols {
			dst[j*rows+i] = src[i*cols+j]
		}
	}
	return dst
}
