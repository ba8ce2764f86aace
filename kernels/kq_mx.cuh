// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// kq_mx.cuh: MXFP8's E8M0 block-scale rules (docs/quantization-formats.md:
// TE's rounding up, OCP's floor, the factor 2^(127-e) and the decode factor
// 2^(e-127)) and the tensor-amax reduction the MXFP8 kernels fuse, shared by
// quantize.cu (1x32 blocks) and mx2d.cu (32x32 tiles) so that both give the
// same bytes by construction. Include after kq_common.cuh.
#pragma once

// E8M0 block scales. kq_e8m0_te rounds the exponent up (TE); kq_e8m0_ocp
// takes floor(log2(amax)) - emax (OCP MX v1.0).
KQ_DEV u32 kq_e8m0_te(float amax, int fmt) {
	// float32(1/fp8_max), rounded to nearest even (kq_constants.cuh). A
	// constant rather than a division per block, which costs more than the
	// rest of the rule.
	float inv = __uint_as_float(fmt == KQ_E4M3 ? KQ_E4M3_MAX_INV_BITS : KQ_E5M2_MAX_INV_BITS);
	float t = __fmul_rn(amax, inv);
	u32 b = __float_as_uint(t) & 0x7FFFFFFFu;
	// Round up, TE's float_to_e8m0, in integer arithmetic without branches
	// (they cost more than the rule in the MXFP8 kernels' hot loops): a
	// normal t rounds its exponent field up when its mantissa is nonzero
	// (b + 0x7FFFFF carries into the exponent exactly then); a subnormal t
	// above 2^-127 (mantissa above 0x400000) needs code 1 as well, so
	// subnormals round with 0x3FFFFF; 0xFE is the largest code (and inf's),
	// NaN is 0xFF.
	u32 e = (b + (b < 0x800000u ? 0x3FFFFFu : 0x7FFFFFu)) >> 23;
	e = min(e, 0xFEu);
	return b > 0x7F800000u ? 0xFFu : e;
}
KQ_DEV u32 kq_e8m0_ocp(float amax, int fmt) {
	int emax = fmt == KQ_E4M3 ? 8 : 15;
	u32 b = __float_as_uint(amax) & 0x7FFFFFFFu;
	// floor(log2(amax)) - emax + 127, clamped to [0, 254], is the exponent
	// field less emax for a normal amax; a subnormal amax or 0 (field 0)
	// clamps to 0. Inf is 0xFE, NaN 0xFF. No branches.
	int e = max((int)(b >> 23) - emax, 0);
	u32 r = b == 0x7F800000u ? 0xFEu : (u32)e;
	return b > 0x7F800000u ? 0xFFu : r;
}
// 2^(127-e): the factor that scales data into the FP8 range.
KQ_DEV float kq_e8m0_encode_factor(u32 e) {
	u32 f = (254u - e) << 23;
	f = e == 254u ? 0x00400000u : f;
	f = e == 255u ? KQ_QNAN_BITS : f;
	return __uint_as_float(f);
}
// 2^(e-127): the decode factor.
KQ_DEV float kq_e8m0_decode_factor(u32 e) {
	if (e == 255u) return __uint_as_float(KQ_QNAN_BITS);
	if (e == 0u) return __uint_as_float(0x00400000u);
	return __uint_as_float(e << 23);
}

// Reductions. fmaxf returns the non-NaN operand, so NaN elements never
// raise an amax, as the contract requires.
KQ_DEV float kq_warp_max(float v) {
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
	return v;
}
// kq_block_max returns the block's maximum in thread 0. Every thread of the
// block must call it, once per kernel.
KQ_DEV float kq_block_max(float v) {
	__shared__ float warp_max[32];
	u32 tid = threadIdx.y * blockDim.x + threadIdx.x;
	u32 nwarps = (blockDim.x * blockDim.y + 31u) >> 5;
	v = kq_warp_max(v);
	if ((tid & 31u) == 0u) warp_max[tid >> 5] = v;
	__syncthreads();
	if (tid < 32u) {
		v = tid < nwarps ? warp_max[tid] : 0.0f;
		v = kq_warp_max(v);
	}
	return v;
}
// kq_amax_commit merges one block's amax into the tensor's, from thread 0.
// The last block to arrive gets the tensor's amax (>= 0) and resets the
// scratch words for the next launch; the others get -1.
KQ_DEV float kq_amax_commit(float block_amax, u32 *st) {
	u32 nblocks = gridDim.x * gridDim.y * gridDim.z;
	atomicMax(&st[KQ_ST_ACC], __float_as_uint(block_amax));
	__threadfence();
	u32 ticket = atomicAdd(&st[KQ_ST_TICKET], 1u);
	if (ticket != nblocks - 1u) return -1.0f;
	__threadfence();
	float amax = __uint_as_float(atomicExch(&st[KQ_ST_ACC], 0u));
	atomicExch(&st[KQ_ST_TICKET], 0u);
	kq_sched_reset(st);
	return amax;
}

// kq_pmax is the paired max of two 16-bit |x| pairs (max.bf16x2,
// max.f16x2): exact, and like fmaxf it returns the other operand when one
// is NaN, so NaN never raises an amax; without .ftz subnormals count.
KQ_DEV u32 kq_pmax(kq_bf16, u32 a, u32 b) {
	u32 r;
	asm("max.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
	return r;
}
KQ_DEV u32 kq_pmax(kq_f16, u32 a, u32 b) {
	u32 r;
	asm("max.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
	return r;
}

// kq_e8m0 is the block exponent with the format and the rounding as
// template parameters (kernels that pick the instantiation at the entry
// point carry no branch on them).
template <int fmt, int ocp>
KQ_DEV u32 kq_e8m0(float amax) {
	return ocp ? kq_e8m0_ocp(amax, fmt) : kq_e8m0_te(amax, fmt);
}

// kq_mxfp8_finish reduces the block amaxes a thread saw (m) into the
// tensor's amax in st[KQ_ST_AMAX], when st is given: the quantized result
// reports it, and fusing it here spares a separate read of the input.
// Every thread of the block must call it.
KQ_DEV void kq_mxfp8_finish(float m, u32 *st) {
	if (st == 0) return;
	m = kq_block_max(m);
	if (threadIdx.x != 0) return;
	float amax = kq_amax_commit(m, st);
	if (amax >= 0.0f) reinterpret_cast<float *>(st)[KQ_ST_AMAX] = amax;
}
