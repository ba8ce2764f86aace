// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// kquant NVFP4BlockScaling kernels: E2M1 data packed two per byte (lower
// index in the low nibble), E4M3 decode scales per 1x16 block (per 16x16
// tile for 2D weights) and a float32 tensor scale S computed on the device
// from a device amax; the random Hadamard transform (RHT) of the columnwise
// operand; stochastic rounding (SR) with the Philox 4x32-10 stream that
// internal/quant/philox documents; the GEMM scale swizzle, standalone and as an
// option of the 1D quantize kernels; and the NVFP4 dequantize.
//
// Hopper has no E2M1 conversion instruction, so the conversion is written
// out: round to nearest even by comparing with the midpoints between the
// eight E2M1 magnitudes (ties go to the even code), saturating to +-6; NaN
// becomes 0x7 (the contract's choice). The E4M3 block scale uses the
// hardware's cvt.rn.satfinite.
//
// Every kernel also serves the grouped (MoE) quantize: given
// kq_grp_offsets' device offsets they find each row's group by binary
// search, reduce into and read that group's amax, and number the SR stream
// within the group, as the reference quantizes each group as a tensor of
// its own. Groups are 128-row aligned (else the offsets kernel sets the
// flag and nothing runs), so every row tile of the columnwise, RHT-amax
// and 2D kernels (64 or 128 rows, or a 16x16 tile) lies in one group: the
// wrapper (kq_grp_block) moves the tile's pointers to its group's tensor
// and the kernel runs on that tensor as on a tensor of its own.
//
// The shared prelude (types, kq_finite, kq_group) is kq_common.cuh; the
// general paths (nvfp4_general.cuh) and the fast paths (nvfp4_fast.cuh,
// the instruction-level pieces the rowwise and RHT columnwise ones share
// in nvfp4_bits.cuh, the tiled ones in nvfp4_tile.cuh, the 2D one of
// 16-bit inputs in nvfp4_2d.cuh, its persistent form in nvfp4_2dp.cuh)
// are parts of this file in headers of their own. The stamp on nvfp4.ptx
// covers every kernels/*.cuh.

#include "kq_common.cuh"

KQ_DEV float kq_ld(const float *x, long long i) { return x[i]; }
KQ_DEV float kq_ld(const kq_bf16 *x, long long i) { return __uint_as_float((u32)x[i].bits << 16); }
KQ_DEV float kq_ld(const kq_f16 *x, long long i) { return kq_f16_to_f32(x[i].bits); }

// Sixteen consecutive elements from element i (i % 16 == 0, base aligned to
// 16 bytes): 16-byte loads.
KQ_DEV void kq_ld16(const float *x, long long i, float v[16]) {
	const float4 *p = reinterpret_cast<const float4 *>(x + i);
#pragma unroll
	for (int q = 0; q < 4; q++) {
		float4 f = p[q];
		v[4 * q] = f.x; v[4 * q + 1] = f.y; v[4 * q + 2] = f.z; v[4 * q + 3] = f.w;
	}
}
template <typename H>
KQ_DEV void kq_ld16(const H *x, long long i, float v[16]) {
	const uint4 *p = reinterpret_cast<const uint4 *>(x + i);
#pragma unroll
	for (int q = 0; q < 2; q++) kq_widen8<H>(p[q], v + 8 * q);
}

KQ_DEV u32 kq_absbits(float x) {
	u32 a = __float_as_uint(x) & 0x7FFFFFFFu;
	return a > 0x7F800000u ? 0u : a;
}

KQ_DEV u32 kq_warp_max(u32 a) {
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) a = max(a, __shfl_xor_sync(0xFFFFFFFFu, a, o));
	return a;
}

// kq_grp_tile: the group of the row tile starting at row m0 of a grouped
// quantize, with its first row *o and its row count *n; -1 when the flag
// is set or m0 is past the groups' rows.
KQ_DEV int kq_grp_tile(const int *offsets, int ngroups, const int *flag, int m0, int *o, int *n) {
	if (flag != 0 && *flag != 0) return -1;
	if (m0 >= offsets[ngroups]) return -1;
	const int g = kq_group(offsets, ngroups, m0);
	*o = offsets[g];
	*n = offsets[g + 1] - *o;
	return g;
}

// kq_grp_block is kq_grp_tile for a whole block (every thread calls it,
// blockDim.x == 256, the same m0): with at most 256 groups the offsets
// are read by independent loads (one memory latency instead of a binary
// search's chain) and the group is counted with a barrier.
KQ_DEV int kq_grp_block(const int *offsets, int ngroups, const int *flag, int m0, int *o, int *n) {
	if (ngroups > 256) return kq_grp_tile(offsets, ngroups, flag, m0, o, n);
	__shared__ int so[257];
	const int t = threadIdx.x;
	const int fv = (t == 0 && flag != 0) ? *flag : 0;
	const int total = offsets[ngroups];
	const int v = t < ngroups ? offsets[t] : 0;
	if (t < ngroups) so[t] = v;
	if (t == 0) so[ngroups] = total;
	if (__syncthreads_or(fv != 0 || m0 >= total)) return -1;
	const int g = __syncthreads_count(t >= 1 && t < ngroups && v <= m0);
	*o = so[g];
	*n = so[g + 1] - *o;
	return g;
}

// Tensor encode scale S = KQ_NVFP4_TENSOR_NUM / amax; float32 max on overflow; 1 for a
// zero (or NaN) amax and when S is 0.
KQ_DEV float kq_tensor_scale(float amax) {
	if (amax == 0.0f || amax != amax) return 1.0f;
	float s = __fdiv_rn(KQ_NVFP4_TENSOR_NUM, amax);
	if (!kq_finite(s)) return __uint_as_float(KQ_FLT_MAX_BITS);
	if (s == 0.0f) return 1.0f;
	return s;
}

// E4M3 of a float32 (RNE, saturating: kq_fp8x2).
KQ_DEV u32 kq_e4m3(float x) { return kq_fp8x2(x, 0.0f, 1) & 0xFFu; }

// Exact value of an E4M3 code.
KQ_DEV float kq_e4m3_val(u32 b) {
	u32 s = (b & 0x80u) << 24;
	u32 e = (b >> 3) & 0xFu, m = b & 7u;
	if (e == 15u && m == 7u) return __uint_as_float(s | 0x7FC00000u);
	if (e == 0u) return __uint_as_float(s | __float_as_uint(__fmul_rn((float)m, 0.001953125f)));
	return __uint_as_float(s | ((e + 120u) << 23) | (m << 20));
}

// Exact value of an E2M1 code (low nibble).
KQ_DEV float kq_e2m1_val(u32 c) {
	const u32 e = (c >> 1) & 3u, m = c & 1u, sign = (c & 8u) << 28;
	// e == 0: 0 or 0.5; else 2^(e-1) * (1 + m/2), built from its bits.
	const u32 mag = e == 0u ? (m ? 0x3F000000u : 0u) : (((e + 126u) << 23) | (m << 22));
	return __uint_as_float(sign | mag);
}

// E2M1, round to nearest even, saturating; NaN -> 0x7.
KQ_DEV u32 kq_e2m1(float x) {
	const u32 b = __float_as_uint(x), a = b & 0x7FFFFFFFu;
	if (a > 0x7F800000u) return 7u;
	const u32 sign = (b >> 28) & 8u;
	const float v = __uint_as_float(a);
	u32 c;
	if (v <= 0.25f) c = 0;
	else if (v < 0.75f) c = 1;
	else if (v <= 1.25f) c = 2;
	else if (v < 1.75f) c = 3;
	else if (v <= 2.5f) c = 4;
	else if (v < 3.5f) c = 5;
	else if (v <= 5.0f) c = 6;
	else c = 7;
	return sign | c;
}

// E2M1 with stochastic rounding by the random byte r: between neighbours
// lo < v < hi, round up when r < floor(256 (v - lo) / (hi - lo)); the
// scalings by powers of two are exact and the conversion truncates.
KQ_DEV u32 kq_e2m1_sr(float x, u32 r) {
	const u32 b = __float_as_uint(x), a = b & 0x7FFFFFFFu;
	const u32 sign = (b >> 28) & 8u;
	if (a >= 0x40C00000u) return a > 0x7F800000u ? 7u : (sign | 7u);
	const float v = __uint_as_float(a);
	u32 lo, frac;
	if (a >= 0x40800000u) {
		u32 q = (u32)__fmul_rn(v, 128.0f);
		lo = 6; frac = q - 512u;
	} else if (a >= 0x40000000u) {
		u32 q = (u32)__fmul_rn(v, 256.0f);
		lo = (q >> 8) + 2u; frac = q & 255u;
	} else {
		u32 q = (u32)__fmul_rn(v, 512.0f);
		lo = q >> 8; frac = q & 255u;
	}
	if (r < frac) lo++;
	return sign | lo;
}

// Philox 4x32-10 (internal/quant/philox): counter (c0..c3), key from the seed.
KQ_DEV uint4 kq_philox(u32 c0, u32 c1, u32 c2, u32 c3, u32 k0, u32 k1) {
#pragma unroll
	for (int r = 0; r < 10; r++) {
		if (r > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
		const u32 hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
		const u32 hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
		const u32 n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
		c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
	}
	uint4 w;
	w.x = c0; w.y = c1; w.z = c2; w.w = c3;
	return w;
}

KQ_DEV u32 kq_word(uint4 w, u32 i) {
	return i == 0 ? w.x : i == 1 ? w.y : i == 2 ? w.z : w.w;
}

// kq_sr_bytes fills r[t] with the SR byte of element n0 + t of an operand
// (t < 16): byte n % 16 of Philox block n / 16 with counter (block lo,
// block hi, operand, group). A run of 16 that is not 16-aligned straddles
// two Philox blocks.
KQ_DEV void kq_sr_bytes(u64 n0, u32 operand, u32 group, u64 seed, u32 r[16]) {
	const u64 b0 = n0 >> 4;
	const u32 k0 = (u32)seed, k1 = (u32)(seed >> 32);
	const uint4 w0 = kq_philox((u32)b0, (u32)(b0 >> 32), operand, group, k0, k1);
	uint4 w1 = w0;
	if ((n0 & 15u) != 0) w1 = kq_philox((u32)(b0 + 1), (u32)((b0 + 1) >> 32), operand, group, k0, k1);
#pragma unroll
	for (int t = 0; t < 16; t++) {
		const u64 n = n0 + t;
		const u32 j = (u32)(n & 15u);
		const uint4 w = (n >> 4) == b0 ? w0 : w1;
		r[t] = (kq_word(w, j >> 2) >> (8 * (j & 3u))) & 0xFFu;
	}
}

// Round to BF16 (nearest even) and widen back, as element.Float32ToBF16:
// NaN stays NaN, quieted, sign kept; overflow goes to infinity.
KQ_DEV float kq_bf16_rne(float y) {
	const u32 b = __float_as_uint(y);
	if ((b & 0x7FFFFFFFu) > 0x7F800000u) return __uint_as_float((b | 0x00400000u) & 0xFFFF0000u);
	return __uint_as_float((b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u);
}

// kq_butterfly16: the contract's butterfly (h = 1, 2, 4, 8) in place:
// (v_i, v_i+h) <- (v_i + v_i+h, v_i - v_i+h) for i & h == 0: the
// butterfly of kq_rht16 (the 16-bit fast paths' kq_rht16x2c and
// kq_rht_amax2c, nvfp4_rhtcol.cuh, write its stages out for two columns).
KQ_DEV void kq_butterfly16(float v[16]) {
#pragma unroll
	for (int h = 1; h < 16; h <<= 1) {
#pragma unroll
		for (int i = 0; i < 16; i++) {
			if (i & h) continue;
			const float a = v[i], b = v[i + h];
			v[i] = __fadd_rn(a, b);
			v[i + h] = __fsub_rn(a, b);
		}
	}
}

// RHT of 16 values in place, contract v2's order (internal/quant/hadamard):
// v_j = s_j * (x_j * 0.25), then the butterfly h = 1, 2, 4, 8 with
// (v_i, v_i+h) <- (v_i + v_i+h, v_i - v_i+h) for i & h == 0, which leaves
// H16 . v in natural (Sylvester) order, then each result rounded to BF16.
// 4 float32 additions per element instead of 16; every index is a
// compile-time constant once unrolled, so v stays in registers.
KQ_DEV void kq_rht16(float v[16], u32 signs) {
#pragma unroll
	for (int j = 0; j < 16; j++) v[j] = __uint_as_float(__float_as_uint(__fmul_rn(v[j], 0.25f)) ^ (((signs >> j) & 1u) << 31));
	kq_butterfly16(v);
#pragma unroll
	for (int i = 0; i < 16; i++) v[i] = kq_bf16_rne(v[i]);
}

// Byte offset of entry (i, j) of a swizzled scale matrix with cols columns
// (the contract's GEMM layout: 128x4 tiles of 512 bytes, row-major).
KQ_DEV long long kq_swz(int i, int j, int cols) {
	return ((long long)(i >> 7) * (cols >> 2) + (j >> 2)) * 512 + (i & 31) * 16 + ((i & 127) >> 5) * 4 + (j & 3);
}

// Factor f = 1 / (float(d) * (1/S)), clamped to float32 max (a zero block
// scale gives +inf, clamped).
KQ_DEV float kq_factor(u32 d, float sinv) {
	float f = __fdiv_rn(1.0f, __fmul_rn(kq_e4m3_val(d), sinv));
	if (!(f <= __uint_as_float(KQ_FLT_MAX_BITS))) f = __uint_as_float(KQ_FLT_MAX_BITS);
	return f;
}

// kq_quant16 quantizes the first n (<= 16) of v into packed nibbles (bit 4t
// for element t, unused nibbles zero), given the block decode scale code.
KQ_DEV u64 kq_quant16(const float v[16], int n, float f, int sr, u64 n0, u32 operand, u32 group, u64 seed) {
	u32 r[16];
	if (sr) kq_sr_bytes(n0, operand, group, seed, r);
	u64 packed = 0;
#pragma unroll
	for (int t = 0; t < 16; t++) {
		if (t < n) {
			const float y = __fmul_rn(v[t], f);
			const u32 c = sr ? kq_e2m1_sr(y, r[t]) : kq_e2m1(y);
			packed |= (u64)c << (4 * t);
		}
	}
	return packed;
}

// kq_store_packed writes the (n + 1) / 2 bytes of a packed run to dst,
// with one 8-byte store when the run is whole and dst 8-byte aligned.
KQ_DEV void kq_store_packed(u8 *dst, u64 packed, int n, bool aligned) {
	if (n == 16 && aligned) {
		*reinterpret_cast<u64 *>(dst) = packed;
		return;
	}
	for (int b = 0; b < (n + 1) / 2; b++) dst[b] = (u8)(packed >> (8 * b));
}

KQ_DEV float kq_block_amax(const float v[16], int n) {
	u32 a = 0;
#pragma unroll
	for (int t = 0; t < 16; t++) {
		if (t < n) a = max(a, kq_absbits(v[t]));
	}
	return __uint_as_float(a);
}

// Block reduction to one atomicMax per block (blockDim.x == 256).
KQ_DEV void kq_block_atomic_max(u32 a, u32 *dst) {
	__shared__ u32 red[8];
	a = kq_warp_max(a);
	if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = a;
	__syncthreads();
	if (threadIdx.x == 0) {
		for (int w = 1; w < 8; w++) a = max(a, red[w]);
		if (a != 0) atomicMax(dst, a);
	}
}

// kq_block_atomic_max of two values into two destinations, one barrier.
KQ_DEV void kq_block_atomic_max2(u32 a, u32 *dst, u32 b, u32 *dst2) {
	__shared__ u32 red2[2][8];
	a = kq_warp_max(a);
	b = kq_warp_max(b);
	if ((threadIdx.x & 31) == 0) {
		red2[0][threadIdx.x >> 5] = a;
		red2[1][threadIdx.x >> 5] = b;
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		for (int w = 1; w < 8; w++) {
			a = max(a, red2[0][w]);
			b = max(b, red2[1][w]);
		}
		if (a != 0) atomicMax(dst, a);
		if (b != 0) atomicMax(dst2, b);
	}
}

// Vector amax helpers: the running maximum of |x| over 16-byte vectors,
// kept packed (two bf16 or f16 lanes, or one float32) with the hardware's
// NaN-ignoring max, and turned into float32 bits at the end.
KQ_DEV u32 kq_bmax2(u32 a, u32 b) {
	u32 d;
	asm("max.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
	return d;
}
KQ_DEV u32 kq_hmax2(u32 a, u32 b) {
	u32 d;
	asm("max.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
	return d;
}
KQ_DEV u32 kq_vmax(const kq_bf16 *, u32 acc, uint4 u) {
	const u32 m = kq_bmax2(kq_bmax2(u.x & 0x7FFF7FFFu, u.y & 0x7FFF7FFFu), kq_bmax2(u.z & 0x7FFF7FFFu, u.w & 0x7FFF7FFFu));
	return kq_bmax2(acc, m);
}
KQ_DEV u32 kq_vmax(const kq_f16 *, u32 acc, uint4 u) {
	const u32 m = kq_hmax2(kq_hmax2(u.x & 0x7FFF7FFFu, u.y & 0x7FFF7FFFu), kq_hmax2(u.z & 0x7FFF7FFFu, u.w & 0x7FFF7FFFu));
	return kq_hmax2(acc, m);
}
KQ_DEV u32 kq_vmax(const float *, u32 acc, uint4 u) {
	const float m = fmaxf(fmaxf(fabsf(__uint_as_float(u.x)), fabsf(__uint_as_float(u.y))),
		fmaxf(fabsf(__uint_as_float(u.z)), fabsf(__uint_as_float(u.w))));
	return __float_as_uint(fmaxf(__uint_as_float(acc), m));
}
KQ_DEV u32 kq_vkey(const kq_bf16 *, u32 acc) {
	u32 lo = acc & 0xFFFFu, hi = acc >> 16;
	lo = lo > 0x7F80u ? 0u : lo;
	hi = hi > 0x7F80u ? 0u : hi;
	return max(lo, hi) << 16;
}
KQ_DEV u32 kq_vkey(const kq_f16 *, u32 acc) {
	u32 lo = acc & 0xFFFFu, hi = acc >> 16;
	lo = lo > 0x7C00u ? 0u : lo;
	hi = hi > 0x7C00u ? 0u : hi;
	return __float_as_uint(kq_f16_to_f32(max(lo, hi)));
}
KQ_DEV u32 kq_vkey(const float *, u32 acc) { return kq_absbits(__uint_as_float(acc)); }

#include "nvfp4_general.cuh"

#include "nvfp4_fast.cuh"

#include "nvfp4_tile.cuh"

#include "nvfp4_2d.cuh"

#include "nvfp4_2dp.cuh"

// Kernels by input type. vec of the row kernel: 0 element loads, 1 vector
// loads, 2 the fast path; fast of the columnwise, RHT-amax and 2D kernels
// selects their tiled fast paths (the launchers check the shapes and
// alignments and size the grids). st of the columnwise kernel, when not
// NULL, is a tensor state whose NEXT and DONE words the ungrouped fast
// path's resident blocks take their tiles in order with (kq_sched_claim,
// kq_sched_done: left zero); NULL, they stride statically.
#define KQ_NVFP4_KERNELS(T, sfx) \
extern "C" __global__ void __launch_bounds__(256) kq_nvf4_amax_##sfx(const T *x, int rows, int cols, u32 *amax, \
		const int *offsets, int ngroups, const int *flag, int vec, const float *noop) { \
	if (kq_noop(noop)) return; \
	kq_nvf4_amax<T>(x, rows, cols, amax, offsets, ngroups, flag, vec); \
} \
extern "C" __global__ void __launch_bounds__(256, 4) kq_nvf4_amax_rht_##sfx(const T *x, int rows, int cols, u32 *amax, u32 signs, \
		int fast, const int *offsets, int ngroups, const int *flag, u32 *pamax, const float *noop) { \
	if (kq_noop(noop)) return; \
	if (offsets != 0) { \
		int o, n; \
		const int g = kq_grp_block(offsets, ngroups, flag, blockIdx.y * (fast ? 64 : 128), &o, &n); \
		if (g < 0) return; \
		amax += g; \
	} \
	if (fast) kq_nvf4_amax_rht_go<T>(x, rows, cols, amax, signs, offsets == 0 ? pamax : 0); \
	else kq_nvf4_amax_rht<T>(x, rows, cols, amax, signs); \
} \
extern "C" __global__ void __launch_bounds__(256, sizeof(T) == 2 ? 3 : 2) kq_nvf4_row_##sfx(const T *x, int rows, int cols, const u32 *amax, u8 *out, \
		u8 *scales, int srows, int scols, u8 *swz, int sr, u64 seed, int vec, const int *offsets, int ngroups, const int *flag, const float *noop) { \
	if (kq_noop(noop)) return; \
	if (vec == 2) { \
		if (flag != 0 && *flag != 0) return; \
		if (offsets != 0) { \
			if (sr) kq_nvf4_row_fast<T, true, true>(x, rows, cols, amax, out, scales, srows, scols, swz, seed, offsets, ngroups); \
			else kq_nvf4_row_fast<T, false, true>(x, rows, cols, amax, out, scales, srows, scols, swz, seed, offsets, ngroups); \
		} else if (sr) { \
			kq_nvf4_row_fast<T, true, false>(x, rows, cols, amax, out, scales, srows, scols, swz, seed, offsets, ngroups); \
		} else { \
			kq_nvf4_row_fast<T, false, false>(x, rows, cols, amax, out, scales, srows, scols, swz, seed, offsets, ngroups); \
		} \
		return; \
	} \
	kq_nvf4_row<T>(x, rows, cols, amax, out, scales, srows, scols, swz, sr, seed, vec, offsets, ngroups, flag); \
} \
extern "C" __global__ void __launch_bounds__(256, 4) kq_nvf4_col_##sfx(const T *x, int rows, int cols, const u32 *amax, u8 *out, \
		u8 *scales, int srows, int scols, u8 *swz, int rht, u32 signs, int sr, u64 seed, u32 group, int fast, \
		const int *offsets, int ngroups, const int *flag, u32 *st, const float *noop) { \
	if (kq_noop(noop)) return; \
	kq_tiles tl; \
	tl.ntx = srows >> 7; \
	tl.st = 0; \
	if (fast && offsets == 0) { \
		tl.t0 = blockIdx.y * gridDim.x + blockIdx.x; tl.step = gridDim.x * gridDim.y; tl.n = tl.ntx * (rows >> 6); \
		tl.st = st; \
		kq_nvf4_col_fast<T>(x, rows, cols, amax, out, scales, srows, scols, swz, rht, signs, sr, seed, group, tl); \
		return; \
	} \
	int by = blockIdx.y; \
	if (offsets != 0) { \
		const int tr = fast ? 64 : 128; \
		int o, n; \
		const int g = kq_grp_block(offsets, ngroups, flag, by * tr, &o, &n); \
		if (g < 0) return; \
		x += (long long)o * cols; \
		rows = n; \
		amax += g; \
		out += (long long)cols * (o >> 1); \
		scales += (long long)srows * (o >> 4); \
		if (swz != 0) swz += (long long)srows * (o >> 4); \
		scols = n >> 4; \
		group = (u32)g; \
		by -= o / tr; \
	} \
	if (fast) { \
		tl.t0 = by * tl.ntx + blockIdx.x; tl.step = 1; tl.n = tl.t0 + 1; \
		kq_nvf4_col_fast<T>(x, rows, cols, amax, out, scales, srows, scols, swz, rht, signs, sr, seed, group, tl); \
		return; \
	} \
	kq_nvf4_col<T>(x, rows, cols, amax, out, scales, srows, scols, swz, rht, signs, sr, seed, group, by); \
} \
extern "C" __global__ void __launch_bounds__(256) kq_nvf4_2dg_##sfx(const T *x, int rows, int cols, const u32 *amax, \
		u8 *out_row, u8 *scales_row, int scols_row, u8 *out_col, u8 *scales_col, int scols_col, int fast, \
		u8 *swz_row, u8 *swz_col, const int *offsets, int ngroups, const int *flag, const float *noop) { \
	if (kq_noop(noop)) return; \
	kq_nvf4_2d<T>(x, rows, cols, amax, out_row, scales_row, scols_row, swz_row, out_col, scales_col, scols_col, swz_col, \
		offsets, ngroups, flag); \
} \
extern "C" __global__ void __launch_bounds__(256, 4) kq_nvf4_2d_##sfx(const T *x, int rows, int cols, const u32 *amax, \
		u8 *out_row, u8 *scales_row, int scols_row, u8 *out_col, u8 *scales_col, int scols_col, int fast, \
		u8 *swz_row, u8 *swz_col, const int *offsets, int ngroups, const int *flag, const float *noop) { \
	if (kq_noop(noop)) return; \
	if (!fast) return; /* the general path is kq_nvf4_2dg_ */ \
	if (offsets == 0) { \
		kq_nvf4_2d_one<T>(x, rows, cols, amax, out_row, scales_row, scols_row, swz_row, out_col, scales_col, scols_col, swz_col, \
			blockIdx.y); \
		return; \
	} \
	int by = blockIdx.y; \
	int o, n; \
	const int g = kq_grp_block(offsets, ngroups, flag, by * 64, &o, &n); \
	if (g < 0) return; \
	const long long srows_c = (long long)((cols + 127) >> 7) << 7; \
	x += (long long)o * cols; \
	rows = n; \
	amax += g; \
	if (out_row != 0) out_row += (long long)o * (cols >> 1); \
	if (scales_row != 0) scales_row += (long long)o * scols_row; \
	if (swz_row != 0) swz_row += (long long)o * scols_row; \
	if (out_col != 0) out_col += (long long)cols * (o >> 1); \
	if (scales_col != 0) scales_col += srows_c * (o >> 4); \
	if (swz_col != 0) swz_col += srows_c * (o >> 4); \
	scols_col = n >> 4; \
	by -= o >> 6; \
	kq_nvf4_2d_one<T>(x, rows, cols, amax, out_row, scales_row, scols_row, swz_row, out_col, scales_col, scols_col, swz_col, by); \
}

KQ_NVFP4_KERNELS(float, f32)
KQ_NVFP4_KERNELS(kq_bf16, bf16)
KQ_NVFP4_KERNELS(kq_f16, f16)

// The pipelined 2D fast path of 16-bit inputs (NVFP42DEnv "pipe"; the
// ungrouped fast shapes only), with kq_nvf4_2d_'s parameters: two blocks
// per SM for the next piece's 32 registers; the launcher's grid is one
// block a piece (nvfp42DPipeGrid).
#define KQ_NVFP4_2DP_KERNEL(T, sfx) \
extern "C" __global__ void __launch_bounds__(256, 2) kq_nvf4_2dp_##sfx(const T *x, int rows, int cols, const u32 *amax, \
		u8 *out_row, u8 *scales_row, int scols_row, u8 *out_col, u8 *scales_col, int scols_col, int fast, \
		u8 *swz_row, u8 *swz_col, const int *offsets, int ngroups, const int *flag, const float *noop) { \
	if (kq_noop(noop)) return; \
	kq_nvf4_2dp<T>(x, rows, cols, amax, out_row, scales_row, scols_row, swz_row, out_col, scales_col, scols_col, swz_col); \
}
KQ_NVFP4_2DP_KERNEL(kq_bf16, bf16)
KQ_NVFP4_2DP_KERNEL(kq_f16, f16)

// Standalone GEMM swizzle of a row-major [rows, cols] scale matrix (rows a
// multiple of 128, cols of 4) into dst; with transpose, of its [cols, rows]
// transpose (MXFP8's columnwise scales). One thread per entry.
extern "C" __global__ void __launch_bounds__(256) kq_swizzle(const u8 *src, int rows, int cols, u8 *dst, int transpose, const float *noop) {
	if (kq_noop(noop))
		return;
	const int r = transpose ? cols : rows, c = transpose ? rows : cols;
	const long long n = (long long)r * c;
	for (long long it = (long long)blockIdx.x * blockDim.x + threadIdx.x; it < n; it += (long long)gridDim.x * blockDim.x) {
		const int i = (int)(it / c), j = (int)(it % c);
		const u8 v = transpose ? src[(long long)j * cols + i] : src[it];
		dst[kq_swz(i, j, c)] = v;
	}
}

// Zeroes n bytes (a tensor amax before kq_nvf4_amax's atomics, a padded
// scale matrix) in a step that takes a no-op flag, where a memset does
// otherwise: a memset cannot read the flag, and a skipped step must leave
// its amax and scales as they were.
extern "C" __global__ void __launch_bounds__(256) kq_nvf4_zero(u8 *p, long long n, const float *noop) {
	if (kq_noop(noop))
		return;
	const long long stride = (long long)gridDim.x * blockDim.x;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		p[i] = 0;
}

// NVFP4 dequantize of one operand as stored ([rows, cols] codes, rows of
// (cols + 1) / 2 bytes, scale entry (i, j / 16)): (E2M1 x E4M3) / S, the
// product exact and the division rounded, S from the operand's amax.
extern "C" __global__ void __launch_bounds__(256) kq_nvf4_dequant(const u8 *q, int rows, int cols, const u8 *scales, int scols,
		const u32 *amax, float *out) {
	const float s = kq_tensor_scale(__uint_as_float(amax[0]));
	const long long n = (long long)rows * cols;
	const int stride = (cols + 1) >> 1;
	for (long long it = (long long)blockIdx.x * blockDim.x + threadIdx.x; it < n; it += (long long)gridDim.x * blockDim.x) {
		const int i = (int)(it / cols), j = (int)(it % cols);
		const u32 b = q[(long long)i * stride + (j >> 1)];
		const u32 c = (j & 1) ? b >> 4 : b & 0xFu;
		const float d = kq_e4m3_val(scales[(long long)i * scols + (j >> 4)]);
		out[it] = __fdiv_rn(__fmul_rn(kq_e2m1_val(c), d), s);
	}
}
