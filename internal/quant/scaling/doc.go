// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package scaling holds the scale rules of the quantization contract as
// scalar functions: the per-tensor and per-block FP8 scale from an amax
// (current and block scaling), the delayed-scaling update, the MXFP8 E8M0
// block exponent (TE and OCP rounding) and the NVFP4 tensor, block and
// element factors. Backends call these per tensor or per block; the CUDA
// kernels implement the same arithmetic, operation by operation, in float32
// with round-to-nearest-even.
//
// Every function here is pure; the state that delayed scaling carries from
// step to step lives in quant.State, whose update calls DelayedUpdate.
package scaling
