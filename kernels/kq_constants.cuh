// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// kq_constants.cuh: the format limits the kernels compute with, written
// from internal/quant/element by
//   go test ./kernels -run TestCUDAConstants -update-cuda-constants
// A kernel that used another value than the reference would compute other
// bytes, so the sources name these and never write the numbers:
// TestCUDAConstants fails when this file and element disagree, and
// TestCUDAConstantsOnlyInHeader when a source writes one as a literal.
#pragma once

// FP8 E4M3's largest finite magnitude: the saturation bound and the scale numerator.
#define KQ_E4M3_MAX 448.0f

// FP8 E5M2's largest finite magnitude.
#define KQ_E5M2_MAX 57344.0f

// float32(1/KQ_E4M3_MAX), rounded to nearest even, as bits: MXFP8's
// E8M0 rule multiplies by it rather than divide once a block.
#define KQ_E4M3_MAX_INV_BITS 0x3B124925u

// float32(1/KQ_E5M2_MAX), likewise.
#define KQ_E5M2_MAX_INV_BITS 0x37924925u

// FP4 E2M1's largest magnitude: NVFP4's clamp and block-scale divisor.
#define KQ_E2M1_MAX 6.0f

// KQ_E4M3_MAX x KQ_E2M1_MAX, the numerator of NVFP4's per-tensor scale.
#define KQ_NVFP4_TENSOR_NUM 2688.0f
