// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// kq_fp8_sw.cuh: the contract's float32 -> E4M3 / E5M2 conversion in
// integer arithmetic (docs/quantization-formats.md: one rounding, round to
// nearest even, saturating; +-inf to +-max, NaN to 0x7F). It is what
// cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 computes, and the kernels use it in
// place of that instruction where the target has none: the compute_80 PTX
// (Ampere; Ada runs it too) that hack/gen-kernels.sh builds beside the
// compute_90 one. kq_cvt_check (quantize.cu) compares it with the hardware
// over every float32 bit pattern. Each kernel source that converts to FP8
// includes this file; a kernel's PTX stamp covers every kernels/*.cuh.
#pragma once

// kq_fp8_sw converts x to E4M3 (e4m3 != 0) or E5M2; the code in bits 0-7.
static __device__ __forceinline__ unsigned int kq_fp8_sw(float x, int e4m3) {
	const unsigned int b = __float_as_uint(x);
	const unsigned int sign = (b >> 24) & 0x80u;
	const unsigned int a = b & 0x7FFFFFFFu;
	const int mb = e4m3 ? 3 : 2;
	const int bias = e4m3 ? 7 : 15;
	const unsigned int maxcode = e4m3 ? 0x7Eu : 0x7Bu;
	if (a > 0x7F800000u) return 0x7Fu;
	if (a == 0x7F800000u) return sign | maxcode;
	const int e = (int)(a >> 23) - 127;
	unsigned int code;
	if (e < 1 - bias) {
		// Below the smallest normal: count quanta of 2^(1-bias-mb).
		// Scaling by a power of two upward is exact, rintf rounds to
		// nearest even; 2^mb quanta is the smallest normal's code.
		const float v = __fmul_rn(__uint_as_float(a), __uint_as_float((unsigned int)(127 + bias - 1 + mb) << 23));
		code = (unsigned int)rintf(v);
	} else {
		const unsigned int shift = 23 - mb;
		unsigned int r = a >> shift;
		const unsigned int rem = a & ((1u << shift) - 1u);
		const unsigned int half = 1u << (shift - 1);
		if (rem > half || (rem == half && (r & 1u))) r++;
		code = r - ((unsigned int)(127 - bias) << mb);
		if (code > maxcode) code = maxcode;
	}
	return sign | code;
}

// kq_fp8x2 is cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 of (hi, lo): lo in bits
// 0-7, hi in bits 8-15; the instruction where the target has it (sm_89 and
// newer), else kq_fp8_sw.
static __device__ __forceinline__ unsigned short kq_fp8x2(float lo, float hi, int e4m3) {
	unsigned short r;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
	r = (unsigned short)(kq_fp8_sw(lo, e4m3) | (kq_fp8_sw(hi, e4m3) << 8));
#else
	if (e4m3) {
		asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
	} else {
		asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
	}
#endif
	return r;
}
