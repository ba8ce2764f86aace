// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// kquant quantize kernels: amax, per-tensor scales (current and delayed
// scaling), per-tensor FP8 cast (rowwise, and fused cast+transpose for the
// columnwise operand), MXFP8 rowwise and columnwise (TE and OCP scale
// rounding), and the matching dequantize kernels.
//
// The numbers these kernels produce are fixed by
// docs/quantization-formats.md and must equal the pure-Go reference
// (internal/quant) bit for bit. Hence the build flags in hack/gen-kernels.sh
// keep IEEE float32 semantics (no fast math, no flush to zero, correctly
// rounded division, no FMA contraction), and every arithmetic step that the
// contract names is written with an explicitly rounded intrinsic.
//
// Graph safety: every kernel reads its scale from device memory and writes
// its results there; reductions finish in the last block to arrive (a ticket
// counter) and reset their own accumulators, so a step is a fixed sequence
// of launches that can be captured once and replayed.
//
// The shared prelude (types, formats, state words) is kq_common.cuh, the
// E8M0 rules kq_mx.cuh; the per-tensor FP8 bodies (quantize_fp8.cuh: amax,
// cast, delayed update; quantize_fp8_trw.cuh: cast + transpose), the MXFP8
// bodies (quantize_mxfp8.cuh) and the grouped kernels (quantize_grouped.cuh,
// quantize_grouped_delayed.cuh) are parts of this file in headers of their
// own. The hash stamped on quantize.ptx covers every kernels/*.cuh.

#include "kq_common.cuh"

// Four consecutive float32 elements from a 4-element-aligned group g.
KQ_DEV void kq_load4(const float *x, long long g, float v[4]) {
	float4 q = reinterpret_cast<const float4 *>(x)[g];
	v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
}
KQ_DEV float kq_fp8_max(int fmt) { return fmt == KQ_E4M3 ? KQ_E4M3_MAX : KQ_E5M2_MAX; }

// kq_cvt2 converts two floats with one rounding, round to nearest even,
// saturating (satfinite: finite overflow and +-inf become +-max, NaN becomes
// 0x7F). lo lands in the low byte: the lower-index element goes first in
// memory. PTX puts its first source operand in the upper half.
KQ_DEV u32 kq_cvt2(float lo, float hi, int fmt) { return kq_fp8x2(lo, hi, fmt == KQ_E4M3); }
KQ_DEV u32 kq_cvt1(float x, int fmt) { return kq_cvt2(x, 0.0f, fmt) & 0xFFu; }

// kq_cvt1_sw is the same conversion in integer arithmetic, written from the
// contract (kq_fp8_sw.cuh); kq_cvt_check compares it with the hardware over
// every float32 bit pattern, which pins down the contract's rules exactly.
KQ_DEV u32 kq_cvt1_sw(float x, int fmt) { return kq_fp8_sw(x, fmt == KQ_E4M3); }

// kq_fp8_decode widens an FP8 byte to float32 exactly; NaN bytes become a
// quiet NaN with the byte's sign.
KQ_DEV float kq_fp8_decode(u32 b, int fmt) {
	u32 s = (b & 0x80u) << 24;
	if (fmt == KQ_E4M3) {
		u32 e = (b >> 3) & 0xFu, m = b & 7u;
		if (e == 15u && m == 7u) return __uint_as_float(s | KQ_QNAN_BITS);
		if (e == 0u) return __uint_as_float(s | __float_as_uint(__fmul_rn((float)m, 0.001953125f)));
		return __uint_as_float(s | ((e + 120u) << 23) | (m << 20));
	}
	u32 e = (b >> 2) & 0x1Fu, m = b & 3u;
	if (e == 31u) return __uint_as_float(s | (m ? KQ_QNAN_BITS : 0x7F800000u));
	if (e == 0u) return __uint_as_float(s | __float_as_uint(__fmul_rn((float)m, 1.52587890625e-05f)));
	return __uint_as_float(s | ((e + 112u) << 23) | (m << 21));
}

// Eight consecutive elements from an 8-element-aligned group g (16-byte
// loads for 16-bit inputs, two for float32), and their conversion with one
// factor each into 8 bytes (one 8-byte store). The vectorised kernels use
// them where the shape and alignment allow; the scalar paths compute the
// same bytes.
KQ_DEV void kq_load8(const float *x, long long g, float v[8]) {
	kq_load4(x, 2 * g, v);
	kq_load4(x, 2 * g + 1, v + 4);
}
template <typename H>
KQ_DEV void kq_load8(const H *x, long long g, float v[8]) {
	kq_widen8<H>(reinterpret_cast<const uint4 *>(x)[g], v);
}
KQ_DEV void kq_zero8(float v[8]) {
#pragma unroll
	for (int k = 0; k < 8; k++) v[k] = 0.0f;
}
// An 8-element group as raw bits (one 16-byte word for 16-bit inputs, two
// for float32), so that a thread can hold several loads in flight in half
// the registers of their float32 values, and its widening to float32.
KQ_DEV void kq_ldraw8(const float *x, long long g, uint4 q[2]) {
	q[0] = reinterpret_cast<const uint4 *>(x)[2 * g];
	q[1] = reinterpret_cast<const uint4 *>(x)[2 * g + 1];
}
template <typename T>
KQ_DEV void kq_ldraw8(const T *x, long long g, uint4 q[2]) {
	q[0] = reinterpret_cast<const uint4 *>(x)[g];
	q[1] = q[0];
}
KQ_DEV void kq_unpack8(const float *, const uint4 q[2], float v[8]) {
	u32 w[8] = {q[0].x, q[0].y, q[0].z, q[0].w, q[1].x, q[1].y, q[1].z, q[1].w};
#pragma unroll
	for (int k = 0; k < 8; k++) v[k] = __uint_as_float(w[k]);
}
template <typename H>
KQ_DEV void kq_unpack8(const H *, const uint4 q[2], float v[8]) {
	kq_widen8<H>(q[0], v);
}
// Independent 8-element groups a thread loads before it uses the first, in
// the grid-stride kernels (amax, cast, MXFP8 rowwise).
#define KQ_UNROLL 4
KQ_DEV uint2 kq_cvt8(const float v[8], const float f[8], int fmt) {
	uint2 o;
	o.x = kq_cvt2(__fmul_rn(v[0], f[0]), __fmul_rn(v[1], f[1]), fmt) |
	      (kq_cvt2(__fmul_rn(v[2], f[2]), __fmul_rn(v[3], f[3]), fmt) << 16);
	o.y = kq_cvt2(__fmul_rn(v[4], f[4]), __fmul_rn(v[5], f[5]), fmt) |
	      (kq_cvt2(__fmul_rn(v[6], f[6]), __fmul_rn(v[7], f[7]), fmt) << 16);
	return o;
}

#include "kq_mx.cuh"

#include "quantize_fp8.cuh"

#include "quantize_fp8_trw.cuh"

#include "quantize_mxfp8.cuh"
#include "quantize_mxfp8_mxm.cuh"
#include "quantize_mxfp8_rowb.cuh"

// ---- entry points -----------------------------------------------------------

#define KQ_TYPED_KERNELS(SUF, T)                                                                        \
	extern "C" __global__ void __launch_bounds__(256, 4) kq_amax_##SUF(const T *x, long long n, u32 *st, \
			float fp8max, float eps, int pow2, const float *noop) {                              \
		if (kq_noop(noop)) return;                                                                   \
		kq_amax_impl<T>(x, n, st, fp8max, eps, pow2);                                               \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 4) kq_cast_##SUF(const T *x, long long n, u32 *st, \
			u8 *out, float *scale_inv, float *history, int fmt, int ulen, float fp8max, int margin,  \
			int most_recent, const float *noop) {                                                    \
		if (kq_noop(noop)) return;                                                                       \
		kq_cast_impl<T>(x, n, st, out, scale_inv, history, fmt, kq_upd{ulen, fp8max, margin, most_recent}); \
	}                                                                                                   \
	extern "C" __global__ void kq_cast_tr_##SUF(const T *x, int rows, int cols, u32 *st, u8 *out_row,   \
			u8 *out_col, float *scale_inv, float *history, int fmt, int ulen, float fp8max,          \
			int margin, int most_recent, const float *noop) {                                        \
		if (kq_noop(noop)) return;                                                                       \
		kq_cast_tr_impl<T>(x, rows, cols, st, out_row, out_col, scale_inv, history, fmt,            \
			kq_upd{ulen, fp8max, margin, most_recent});                                         \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, KQ_TRW_BLOCKS) kq_cast_trw_##SUF(const T *x, int rows,        \
			int cols, u32 *st, u8 *out_row, u8 *out_col, float *scale_inv, float *history, int fmt, \
			int ulen, float fp8max, int margin, int most_recent, const float *noop) {               \
		if (kq_noop(noop)) return;                                                                      \
		kq_cast_trw_impl<T>(x, rows, cols, st, out_row, out_col, scale_inv, history, fmt,           \
			kq_upd{ulen, fp8max, margin, most_recent});                                         \
	}                                                                                                   \
	extern "C" __global__ void kq_mxfp8_row_##SUF(const T *x, int rows, int cols, u8 *out, u8 *scales,  \
			int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz, const float *noop) {      \
		if (kq_noop(noop)) return;                                                                  \
		kq_mxfp8_row_impl<T>(x, rows, cols, out, scales, srows, scols, fmt, ocp, st, swz);              \
	}                                                                                                   \
	extern "C" __global__ void kq_mxfp8_col_##SUF(const T *x, int rows, int cols, u8 *out, u8 *scales,  \
			int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz, const float *noop) {      \
		if (kq_noop(noop)) return;                                                                  \
		kq_mxfp8_col_impl<T>(x, rows, cols, out, scales, srows, scols, fmt, ocp, st, swz);              \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 4) kq_mxfp8_row8_##SUF(const T *x, int rows,      \
			int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz, const float *noop) { \
		if (kq_noop(noop)) return;                                                                  \
		kq_mxfp8_row8_impl<T>(x, rows, cols, out, scales, srows, scols, fmt, ocp, st, swz);             \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256) kq_mxfp8_colt_##SUF(const T *x, int rows, int cols,     \
			u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz, const float *noop) { \
		if (kq_noop(noop)) return;                                                                        \
		kq_mxfp8_colt_impl<T>(x, rows, cols, out, scales, srows, scols, fmt, ocp, st, swz);         \
	}                                                                                                   \
	extern "C" __global__ void kq_mxfp8_col8_##SUF(const T *x, int rows, int cols, u8 *out, u8 *scales, \
			int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz, const float *noop) {      \
		if (kq_noop(noop)) return;                                                                  \
		kq_mxfp8_col8_impl<T>(x, rows, cols, out, scales, srows, scols, fmt, ocp, st, swz);             \
	}

KQ_TYPED_KERNELS(f32, float)
KQ_TYPED_KERNELS(bf16, kq_bf16)
KQ_TYPED_KERNELS(f16, kq_f16)

// The MXFP8 macro-tile kernels (quantize_mxfp8.cuh, kq_mxm_impl) are for
// 16-bit inputs only (their tiles live in registers as pairs); float32
// inputs take the other kernels. kq_mxfp8_both writes both operands, or
// one of them when the other's data pointer is NULL; kq_mxfp8_colw is the
// columnwise-only entry with the one-operand signature. With the
// prefetch, at most 128 registers, 2 blocks (16 warps, each with 8 KiB of
// loads in flight: registers and shared-memory staging, KQ_MXM_STAGE) per
// SM; the launcher sizes their grids to that (mxfp8MacroPerSM,
// mxfp8Macro). The rowwise-only kernel is kq_mxfp8_rowb
// (quantize_mxfp8_rowb.cuh: kq_blk_row's tiles of 4 rows x 2048 columns,
// the resident blocks striding over them, at most 64 registers, 4 blocks
// per SM). The exponent buffers and staging slots are the kernel's
// shared array, one for every instantiation.
#define KQ_HALF_KERNELS(SUF, T)                                                                         \
	extern "C" __global__ void __launch_bounds__(256, 2) kq_mxfp8_both_##SUF(const T *x, int rows,      \
			int cols, u8 *out_row, u8 *sc_row, int scols_row, u8 *out_col, u8 *sc_col, int srows_col, \
			int scols_col, int fmt, int ocp, u32 *st, u8 *swz_row, u8 *swz_col, const float *noop) {  \
		if (kq_noop(noop)) return;                                                                        \
		__shared__ __align__(16) u8 esm[KQ_MXM_SMEM];                                                  \
		if (out_col == 0)                                                                           \
			kq_mxfp8_tiles<T, KQ_MX_ROW>(x, rows, cols, out_row, sc_row, swz_row, scols_row, 0, 0, 0, \
				srows_col, scols_col, fmt, ocp, st, esm);                                        \
		else if (out_row == 0)                                                                      \
			kq_mxfp8_tiles<T, KQ_MX_COL>(x, rows, cols, 0, 0, 0, scols_row, out_col, sc_col, swz_col, \
				srows_col, scols_col, fmt, ocp, st, esm);                                        \
		else                                                                                        \
			kq_mxfp8_tiles<T, KQ_MX_ROW | KQ_MX_COL>(x, rows, cols, out_row, sc_row, swz_row, scols_row, \
				out_col, sc_col, swz_col, srows_col, scols_col, fmt, ocp, st, esm);              \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 2) kq_mxfp8_colw_##SUF(const T *x, int rows,      \
			int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz, const float *noop) { \
		if (kq_noop(noop)) return;                                                                  \
		__shared__ __align__(16) u8 esm[KQ_MXM_SMEM];                                                  \
		kq_mxfp8_tiles<T, KQ_MX_COL>(x, rows, cols, 0, 0, 0, 0, out, scales, swz, srows, scols, fmt, ocp, st, esm); \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 4) kq_mxfp8_rowb_##SUF(const T *x, int rows,      \
			int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz, const float *noop) { \
		if (kq_noop(noop)) return;                                                                  \
		kq_mxfp8_rowb<T>(x, rows, cols, out, scales, srows, scols, fmt, ocp, st, swz);                \
	}

KQ_HALF_KERNELS(bf16, kq_bf16)
KQ_HALF_KERNELS(f16, kq_f16)

// Delayed scaling update, after a step: one block. Contract, "Delayed
// scaling". The history roll runs in chunks of blockDim.x entries; each
// chunk reads entries i+1 (never yet written) before any thread writes.
// scale (and scale_inv, unless 0) receive the new scale. Every thread of
// the block must call it.
KQ_DEV void kq_delayed_update_impl(float *history, int len, float *scale, float *scale_inv, float fp8max, int margin,
		int most_recent) {
	__shared__ float s_amax;
	float m = 0.0f;
	if (most_recent) {
		if (threadIdx.x == 0) m = history[0];
	} else {
		for (int i = threadIdx.x; i < len; i += blockDim.x) m = fmaxf(m, history[i]);
	}
	m = kq_block_max(m);
	if (threadIdx.x == 0) s_amax = most_recent ? history[0] : m;
	__syncthreads();
	float amax = s_amax;
	if (amax == 0.0f) return;
	if (threadIdx.x == 0 && kq_finite(amax) && amax > 0.0f) {
		float num = __fmul_rn(fp8max, __uint_as_float((u32)(127 - margin) << 23));
		float sc = __fdiv_rn(num, amax);
		if (!kq_finite(sc)) sc = __uint_as_float(KQ_FLT_MAX_BITS);
		*scale = sc;
		if (scale_inv != 0) *scale_inv = __fdiv_rn(1.0f, sc);
	}
	float first = history[0];
	__syncthreads();
	for (int base = 0; base < len; base += blockDim.x) {
		int i = base + (int)threadIdx.x;
		float v = 0.0f;
		if (i < len) v = i + 1 < len ? history[i + 1] : first;
		__syncthreads();
		if (i < len) history[i] = i == 0 ? 0.0f : v;
		__syncthreads();
	}
}

// The update alone (a step whose casts did not run it), with
// kq_delayed_update_block: the same bytes as kq_delayed_update_impl.
extern "C" __global__ void kq_delayed_update(float *history, int len, u32 *st, float fp8max, int margin, int most_recent, const float *noop) {
	if (kq_noop(noop))
		return;
	float *stf = reinterpret_cast<float *>(st);
	kq_delayed_update_block(history, len, stf + KQ_ST_SCALE, stf + KQ_ST_SCALE_INV, fp8max, margin, most_recent);
}

// out = decode(q) * scale_inv, float32.
extern "C" __global__ void kq_dequant_fp8(const u8 *q, long long n, const float *scale_inv, float *out, int fmt) {
	float s = *scale_inv;
	long long nthreads = (long long)gridDim.x * blockDim.x;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += nthreads)
		out[i] = __fmul_rn(kq_fp8_decode(q[i], fmt), s);
}

// out = decode(q) * 2^(e-127) with e the element's block scale.
extern "C" __global__ void kq_mxfp8_dequant(const u8 *q, int rows, int cols, const u8 *scales, int scols, int colwise,
		float *out, int fmt) {
	long long n = (long long)rows * cols;
	long long nthreads = (long long)gridDim.x * blockDim.x;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += nthreads) {
		int r = (int)(i / cols), c = (int)(i % cols);
		long long si = colwise ? (long long)(r / 32) * scols + c : (long long)r * scols + c / 32;
		out[i] = __fmul_rn(kq_fp8_decode(q[i], fmt), kq_e8m0_decode_factor(scales[si]));
	}
}

// ---- self tests -------------------------------------------------------------

// Raw conversion of float32 values, as the hardware does it.
extern "C" __global__ void kq_cvt_f32(const float *x, long long n, u8 *out, int fmt) {
	long long nthreads = (long long)gridDim.x * blockDim.x;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += nthreads)
		out[i] = (u8)kq_cvt1(x[i], fmt);
}

// Hardware against kq_cvt1_sw for bit patterns [start, start+count):
// res[0] counts mismatches, res[1..8] keep some mismatching patterns.
extern "C" __global__ void kq_cvt_check(u64 start, u64 count, u64 *res, int fmt) {
	u64 nthreads = (u64)gridDim.x * blockDim.x;
	for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += nthreads) {
		u32 bits = (u32)(start + i);
		float x = __uint_as_float(bits);
		u32 hw = kq_cvt1(x, fmt), sw = kq_cvt1_sw(x, fmt);
		if (hw != sw) {
			u64 k = atomicAdd(&res[0], 1ull);
			if (k < 8ull) res[1 + k] = ((u64)hw << 40) | ((u64)sw << 32) | bits;
		}
	}
}

#include "quantize_grouped.cuh"

#include "quantize_grouped_delayed.cuh"

