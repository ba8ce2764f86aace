// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package quant is the agent's model of low-precision quantization: the
// recipes of docs/quantization-formats.md as plain Go values (Recipe, with
// TransformerEngine's defaults from DefaultRecipe), the role of a tensor in
// training (TensorRole), the resolved per-role decisions (Plan), the input
// (Tensor, row-major float32), the quantized output (Result with its rowwise
// and columnwise Operands, scales in TE's padded shapes and, for MXFP8 and
// NVFP4, in the swizzled GEMM layout), the delayed-scaling State carried
// from step to step, and the Backend interface that the pure-Go reference
// (package reference) and the CUDA backend both implement, byte for byte.
//
// Subpackages hold one job each: element (element conversions), scaling
// (scale rules), philox (stochastic-rounding bits), hadamard (the RHT),
// swizzle (GEMM scale layout), reference (the reference backend), accuracy
// (error metrics), linear (QuantizedLinear) and workload (deterministic
// inputs).
//
// # Role rules (TransformerEngine's)
//
//   - HYBRID: E4M3 for Input and Weight, E5M2 for Gradient. E4M3: E4M3 for all.
//   - Float8BlockScaling: 128x128 tiles for Weight, 1x128 blocks otherwise.
//   - MXFP8BlockScaling: 1x32 rowwise and 32x1 columnwise blocks; with
//     TwoDimensionalWeights, 32x32 tiles for Weight.
//   - NVFP4BlockScaling: 1x16 blocks; 16x16 tiles for Weight (on by
//     default); the random Hadamard transform on the columnwise operand of
//     Input and Gradient; stochastic rounding on Gradient (both operands).
//   - NVFP4 4over6 (FourOverSix): on Weight, Input or both as the scope
//     says, never on Gradient; refused with the RHT on Input. Row scaling
//     (RowScaledActivation): Input only, rowwise operand only.
//
// # Operand layouts (decisions where the contract leaves room)
//
//   - Per-tensor FP8 (delayed, current) and Float8BlockScaling store the
//     columnwise operand transposed, [cols, rows], as TE does for the wgrad
//     GEMM on Hopper. Per-tensor operands share one scale.
//   - MXFP8 stores the columnwise operand untransposed, [rows, cols], with
//     32x1 blocks; its swizzled scales are those of the transposed scale
//     matrix.
//   - NVFP4 stores the columnwise operand transposed, [cols, rows], and
//     quantizes it as a tensor of its own: with the RHT its tensor amax and
//     scale are those of the transformed values.
//   - E2M1 codes are packed two per byte, lower column in the low nibble,
//     each row padded to a whole byte (row stride ceil(cols/2)); the padding
//     nibble is zero.
//   - Shapes need no alignment: a partial block at the end of a row or
//     column takes its amax over the elements that exist. Padding entries of
//     scale matrices are zero.
//   - Dequantize of the columnwise operand returns it in its stored
//     orientation and, with the RHT, in the transformed domain (what the
//     wgrad GEMM consumes).
package quant
