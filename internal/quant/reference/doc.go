// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package reference is the pure-Go reference backend of quant.Backend: the
// byte-for-byte definition of every recipe in docs/quantization-formats.md
// that the CUDA backend is tested against. It runs on one goroutine, with
// no cgo and no global state.
//
// Evaluation order matters only where the contract leaves a choice; those
// choices are documented in package quant (operand layouts), element
// (stochastic rounding), philox (the random stream), hadamard (the RHT
// summation order) and here:
//
//   - The RHT of a partial run (the last rows of a columnwise operand when
//     the row count is not a multiple of 16) transforms the run padded with
//     zeros to 16 and keeps the outputs of the rows that exist.
//   - 2D blocks (128x128 block scaling, 32x32 MXFP8, 16x16 NVFP4 weights)
//     give the same codes to both operands, so the columnwise operand is the
//     rowwise codes rearranged (transposed where the layout is transposed).
//   - Tensor amax (Result.Amax) is max |x| over the input, NaN ignored.
package reference
