// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package dump writes a run's tensors as NumPy .npy files for checking
// outside kquant (kquantctl run --dump-dir). It is a bench.Observer.
//
// Layout, for each shape of the workload, under the dump directory:
//
//	<rows>x<cols>/                 one per shape ("-<i>" appended for a repeated shape)
//	  input.npy                    float32 [rows, cols], the exact widened input
//	  data.npy                     uint8 codes as stored, row-major; FP4 packed two per byte, lower column in the low nibble
//	  scale_inv.npy                float32 decode scales (per tensor: [1, 1]; block scaling) or uint8 E8M0 / E4M3 codes, unswizzled, TE's padded shape
//	  scale_inv_swizzled.npy       uint8, 1-D, the GEMM layout (MXFP8, NVFP4)
//	  columnwise_data.npy          as data.npy for the columnwise operand, where produced
//	  columnwise_scale_inv.npy     as scale_inv.npy for the columnwise operand
//	  columnwise_scale_inv_swizzled.npy
//	  dequantized.npy              float32, the measured operand decoded: the rowwise one [rows, cols] when produced,
//	                               else (usage Columnwise) the columnwise one in its stored orientation (transposed, after the RHT)
//	  meta.json                    recipe key, scheme, format, tensorRole, usage, scaleRounding (MXFP8), shape, tensor scale and amax, files
//
// GroupedQuantize puts that set in group-<g>/ per group (input.npy being the
// group's rows) with a meta.json at the shape level listing the splits.
// QuantizedLinear puts it in x/ (input, Input role) and w/ (weight, Weight
// role), with y.npy (the product of the dequantized operands) and
// y_exact.npy (of the unquantized ones) at the shape level.
package dump
