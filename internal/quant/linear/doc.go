// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package linear implements the QuantizedLinear operation: quantize an
// input x [M, K] (Input role) and a weight W [N, K] (Weight role) with a
// recipe, multiply the dequantized rowwise operands in float32,
// y = x̂ · Ŵᵀ, and compare y with the float32 product of the unquantized
// operands — the number users care about most: how much does this recipe
// perturb my layer?
//
// The GEMM accumulates each output in float32 in k order, with eight
// interleaved partial sums (k mod 8) added pairwise at the end. The result
// is compared by SNR, not bytes, so this order is not a byte contract with
// the CUDA GEMM.
package linear
