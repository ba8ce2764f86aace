// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// kquant Float8BlockScaling kernels: FP8 with one float32 scale per 1x128
// block (rowwise operand), per 128x1 block (columnwise operand, stored
// transposed [cols, rows]) or per 128x128 tile (weights; both operands share
// the tile scales, the columnwise one being the transposed codes). Scales
// are laid out in TE's padded shapes (docs/quantization-formats.md), the
// padding written as zero by the kernels themselves, so a step needs no
// memset.
//
// Two kernel shapes, both memory bound, so both are built around 16-byte
// loads with several of them in flight per thread before the first use:
//   - kq_blk_row: rowwise 1x128 alone. A block of 256 threads takes 4 rows
//     x 2048 columns; each thread owns 8 consecutive elements of 4 rows
//     (four 16-byte loads of BF16 issued together), a half-warp one 1x128
//     block, the 4 rows' amaxes reduced together by 5 shuffles (a
//     reduce-scatter) and one scale division per lane; codes leave as 8-byte stores
//     (a half-warp writes the block's 128 bytes), and the 4 rows' scales of
//     a block as 16 contiguous bytes.
//   - kq_blk_tile: a 128x128 tile per block of 256 threads, read once into
//     registers (each thread 8 rows x 8 columns), for the columnwise 128x1
//     operand, the 1x128 rowwise + 128x1 columnwise pair in one pass (TE's
//     cast+transpose: one input read for both operands), and the 128x128
//     weights tile. Column amaxes meet in shared memory; the transposed
//     codes go through a swizzled shared-memory tile so that both its
//     writes and its reads are free of bank conflicts and the global
//     stores are 8-byte, 128-byte-per-row coalesced.
//
// The rowwise kernel and the tile kernels (1x128/128x1 and 128x128) also
// serve the grouped (MoE) quantize: given the device offsets made by
// kq_grp_offsets (grouped.cu) a block finds its rows' group by binary
// search (groups are multiples of 128 rows, so a block's rows never
// straddle two groups) and writes data and scales in the group's own
// layout.
//
// Numbers: the contract's per-block scale rule (scale = fp8_max / amax with
// epsilon, 1 for a zero or non-finite amax, float32 max on overflow,
// optional power-of-2 rounding down), then data = cvt.rn.satfinite(x *
// scale) and scale_inv = 1 / scale, each one float32 operation rounded to
// nearest even (the build keeps IEEE semantics: see hack/gen-kernels.sh).
// The paired conversion cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 converts each
// of its two inputs on its own, so converting two elements in one
// instruction gives the bytes of two single conversions.
//
// The shared prelude (types, kq_finite, kq_group) is kq_common.cuh; the
// tile kernel's body is a part of this file in block_tile.cuh. The stamp
// on block.ptx covers every kernels/*.cuh.

#include "kq_common.cuh"

// Rowwise kernel block: KQ_ROW_ROWS rows x KQ_ROW_COLS columns (16
// half-warps of one 1x128 block each). block.go sizes the grid from these.
#define KQ_ROW_ROWS 4
#define KQ_ROW_COLS 2048

// Occupancy and load-hint tunables (see the benchmark notes in
// docs/benchmarks.md): blocks per SM the register allocation must allow for
// the rowwise and the tile kernels, whether input loads carry the
// L1::no_allocate and L2::256B prefetch hints, and whether the 8-byte code
// stores are streaming (st.global.cs).
#ifndef KQ_ROW_MINB
#define KQ_ROW_MINB 1
#endif
#ifndef KQ_TILE_MINB
#define KQ_TILE_MINB 3
#endif
// Blocks per SM of the ungrouped 128x128 tile kernels and of the 1x128 /
// 128x1 one (also grouped) for 16-bit inputs: 4 (64 registers, no spills
// since the amaxes are taken as packed pairs; 128 KiB of loads in flight
// per SM); float32 inputs and the grouped 128x128 kernel keep
// KQ_TILE_MINB (they spill at 64 registers), as does the compute_80
// build (its software FP8 conversion needs more registers).
#ifndef KQ_TILE_MINB16
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
#define KQ_TILE_MINB16 KQ_TILE_MINB
#else
#define KQ_TILE_MINB16 4
#endif
#endif
#define KQ_TILE_BLOCKS(T) (sizeof(T) == 2 ? KQ_TILE_MINB16 : KQ_TILE_MINB)
#ifndef KQ_LDHINT
#define KQ_LDHINT 0
#endif
#ifndef KQ_STHINT
#define KQ_STHINT 0
#endif

// vec flags, set by block.go when the fast paths are safe for every access.
#define KQ_VEC_LOAD 1      // cols % 8 == 0 and x 16-byte aligned: 8-element loads
#define KQ_VEC_COL_STORE 2 // rows % 8 == 0 and the columnwise data 8-byte aligned
#define KQ_VEC_ROW_STORE 4 // cols % 8 == 0 and the rowwise data 8-byte aligned

// Eight consecutive input elements as loaded: one 16-byte word for the
// 16-bit types, two for float32.
struct kq_raw8 { uint4 a, b; };

KQ_DEV uint4 kq_ld16(const void *p) {
	uint4 q;
#if KQ_LDHINT
	asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(q.x), "=r"(q.y), "=r"(q.z), "=r"(q.w) : "l"(p));
#else
	asm("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(q.x), "=r"(q.y), "=r"(q.z), "=r"(q.w) : "l"(p));
#endif
	return q;
}

// Fast path: elements [i, i+8), i % 8 == 0, x 16-byte aligned.
KQ_DEV void kq_ldraw(const float *x, long long i, kq_raw8 &r) {
	r.a = kq_ld16(x + i);
	r.b = kq_ld16(x + i + 4);
}
KQ_DEV void kq_ldraw(const kq_bf16 *x, long long i, kq_raw8 &r) { r.a = kq_ld16(x + i); }
KQ_DEV void kq_ldraw(const kq_f16 *x, long long i, kq_raw8 &r) { r.a = kq_ld16(x + i); }

// Slow path: elements base+k0+j for j < 8 with ok and k0+j < cols, others
// zero (+0 in every input type, so they never raise an amax).
KQ_DEV void kq_ldraw_slow(const float *x, long long base, int k0, int cols, bool ok, kq_raw8 &r) {
	u32 w[8];
#pragma unroll
	for (int j = 0; j < 8; j++) w[j] = ok && k0 + j < cols ? __float_as_uint(x[base + k0 + j]) : 0u;
	r.a = make_uint4(w[0], w[1], w[2], w[3]);
	r.b = make_uint4(w[4], w[5], w[6], w[7]);
}
template <typename H>
KQ_DEV void kq_ldraw_slow16(const H *x, long long base, int k0, int cols, bool ok, kq_raw8 &r) {
	u32 w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
	for (int j = 0; j < 8; j++) {
		if (ok && k0 + j < cols) w[j >> 1] |= (u32)x[base + k0 + j].bits << (16 * (j & 1));
	}
	r.a = make_uint4(w[0], w[1], w[2], w[3]);
	r.b = make_uint4(0u, 0u, 0u, 0u);
}
KQ_DEV void kq_ldraw_slow(const kq_bf16 *x, long long base, int k0, int cols, bool ok, kq_raw8 &r) {
	kq_ldraw_slow16(x, base, k0, cols, ok, r);
}
KQ_DEV void kq_ldraw_slow(const kq_f16 *x, long long base, int k0, int cols, bool ok, kq_raw8 &r) {
	kq_ldraw_slow16(x, base, k0, cols, ok, r);
}

// Widening to float32 (exact); the pointer argument only picks the type.
KQ_DEV void kq_unpack(const float *, const kq_raw8 &r, float v[8]) {
	v[0] = __uint_as_float(r.a.x); v[1] = __uint_as_float(r.a.y);
	v[2] = __uint_as_float(r.a.z); v[3] = __uint_as_float(r.a.w);
	v[4] = __uint_as_float(r.b.x); v[5] = __uint_as_float(r.b.y);
	v[6] = __uint_as_float(r.b.z); v[7] = __uint_as_float(r.b.w);
}
template <typename H>
KQ_DEV void kq_unpack(const H *, const kq_raw8 &r, float v[8]) {
	kq_widen8<H>(r.a, v);
}

// max(a, |v|) that ignores a NaN v (max.f32 returns the non-NaN operand):
// NaN elements do not raise an amax.
KQ_DEV float kq_amax_acc(float a, float v) { return fmaxf(a, fabsf(v)); }

KQ_DEV float kq_amax8(const float v[8]) {
	float a = 0.0f;
#pragma unroll
	for (int j = 0; j < 8; j++) a = kq_amax_acc(a, v[j]);
	return a;
}

// Packed maxima of 16-bit |x| pairs (max.bf16x2, max.f16x2): exact, and
// like fmaxf they return the other operand when one is NaN (both NaN: NaN,
// which the final fmaxf with 0 drops), so NaN elements never raise an
// amax; without .ftz subnormals count. Two elements per instruction, on
// the raw bits, instead of widening every element before its max.
#define KQ_ABS2 0x7FFF7FFFu
KQ_DEV u32 kq_hmax2(const kq_bf16 *, u32 a, u32 b) {
	u32 r;
	asm("max.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
	return r;
}
KQ_DEV u32 kq_hmax2(const kq_f16 *, u32 a, u32 b) {
	u32 r;
	asm("max.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
	return r;
}
// The larger |x| of the two halves of a packed maximum, as float32 (0 if
// both are NaN).
template <typename H>
KQ_DEV float kq_hmax_f32(u32 p) {
	return fmaxf(0.0f, fmaxf(kq_plo(H(), p), kq_phi(H(), p)));
}
// The packed |x| maximum of the 8 elements of a 16-byte word.
template <typename H>
KQ_DEV u32 kq_habs8(uint4 q) {
	const H *t = 0;
	return kq_hmax2(t, kq_hmax2(t, q.x & KQ_ABS2, q.y & KQ_ABS2), kq_hmax2(t, q.z & KQ_ABS2, q.w & KQ_ABS2));
}
// kq_amax_raw8 is kq_amax8 of the unpacked elements, from the raw bits.
KQ_DEV float kq_amax_raw8(const float *, const kq_raw8 &r) {
	float v[8];
	kq_unpack((const float *)0, r, v);
	return kq_amax8(v);
}
template <typename H>
KQ_DEV float kq_amax_raw8(const H *, const kq_raw8 &r) {
	return kq_hmax_f32<H>(kq_habs8<H>(r.a));
}

KQ_DEV float kq_max32(float a) {
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) a = fmaxf(a, __shfl_xor_sync(0xFFFFFFFFu, a, o));
	return a;
}

// Codes of 8 elements times s, element j in byte j of the pair.
template <int FMT>
KQ_DEV uint2 kq_codes8(const float v[8], float s) {
	uint2 c;
	c.x = kq_cvt2<FMT>(__fmul_rn(v[0], s), __fmul_rn(v[1], s)) | kq_cvt2<FMT>(__fmul_rn(v[2], s), __fmul_rn(v[3], s)) << 16;
	c.y = kq_cvt2<FMT>(__fmul_rn(v[4], s), __fmul_rn(v[5], s)) | kq_cvt2<FMT>(__fmul_rn(v[6], s), __fmul_rn(v[7], s)) << 16;
	return c;
}

// Eight codes to dst: one 8-byte store when fast, else the bytes j < n.
KQ_DEV void kq_store8(u8 *dst, uint2 c, bool fast, int n) {
	if (fast) {
#if KQ_STHINT
		asm volatile("st.global.cs.v2.u32 [%0], {%1, %2};" : : "l"(dst), "r"(c.x), "r"(c.y) : "memory");
#else
		*reinterpret_cast<uint2 *>(dst) = c;
#endif
	} else {
#pragma unroll
		for (int j = 0; j < 8; j++) {
			if (j < n) dst[j] = (u8)((j < 4 ? c.x : c.y) >> (8 * (j & 3)));
		}
	}
}

// The contract's "per-tensor scale from an amax", applied per block.
KQ_DEV float kq_block_scale(float amax, float fp8max, float eps, int pow2) {
	if (amax < eps) amax = eps;
	if (amax == 0.0f || !kq_finite(amax)) return 1.0f;
	float s = __fdiv_rn(fp8max, amax);
	if (!kq_finite(s)) s = __uint_as_float(KQ_FLT_MAX_BITS);
	if (pow2) s = __uint_as_float(__float_as_uint(s) & 0xFF800000u);
	return s;
}

// kq_ldrows loads the 8 elements from column k0 of rows m0..m0+N-1 (all
// loads first, N 16-byte loads in flight per thread): the fast path where
// fast, else the slow one for the rows that exist when live; rows past the
// tensor are zero.
template <int N, typename T>
KQ_DEV void kq_ldrows(const T *x, int rows, int cols, int m0, int k0, bool fast, bool live, kq_raw8 (&raw)[N]) {
#pragma unroll
	for (int u = 0; u < N; u++) {
		const int m = m0 + u;
		raw[u].a = make_uint4(0u, 0u, 0u, 0u);
		raw[u].b = make_uint4(0u, 0u, 0u, 0u);
		if (fast && m < rows) {
			kq_ldraw(x, (long long)m * cols + k0, raw[u]);
		} else if (!fast) {
			kq_ldraw_slow(x, (long long)m * cols, k0, cols, live && m < rows, raw[u]);
		}
	}
}

// kq_row_amax: the N (4 or 8) rows' partial maxima of a half-warp's lanes
// meet in a reduce-scatter (each step over lanes ^8, ^4, ... keeps the half
// named by the lane's bit and takes the partner's copy of it), then the
// remaining steps are plain maxima: lane l ends with the amax of row
// l / (16 / N), with 2N - 2 + log2(16 / N) shuffles instead of 4N.
template <int N>
KQ_DEV float kq_row_amax(const float (&a)[N], int l) {
	float k[N];
#pragma unroll
	for (int i = 0; i < N; i++) k[i] = a[i];
	int s = 8;
#pragma unroll
	for (int n = N / 2; n >= 1; n >>= 1, s >>= 1) {
		const bool b = (l & s) != 0;
#pragma unroll
		for (int i = 0; i < n; i++) {
			const float send = b ? k[i] : k[n + i];
			k[i] = fmaxf(b ? k[n + i] : k[i], __shfl_xor_sync(0xFFFFFFFFu, send, s));
		}
	}
	float am = k[0];
#pragma unroll
	for (; s >= 1; s >>= 1) am = fmaxf(am, __shfl_xor_sync(0xFFFFFFFFu, am, s));
	return am;
}

// kq_put_row_sinv stores row m's scale_inv of block kb: grouped (offsets
// != NULL), in its group's [nkb, gn] matrix at nkb * goff; else in the
// [nkb, scols] matrix, zero in the padding rows.
KQ_DEV void kq_put_row_sinv(float *sinv, const int *offsets, int nkb, int kb, int goff, int gn, int m, int rows, int scols,
		float inv) {
	if (offsets != 0) {
		sinv[(long long)nkb * goff + (long long)kb * gn + (m - goff)] = inv;
	} else if (m < scols) {
		sinv[(long long)kb * scols + m] = m < rows ? inv : 0.0f;
	}
}

// Rowwise 1x128. Scales [ceil(cols/128), roundup(rows,4)], entry (kb, m);
// a block's KQ_ROW_ROWS rows start at a multiple of 4, so the block of the
// last rows also covers the padding entries [rows, roundup(rows,4)) and
// writes them as zero.
//
// Grouped (offsets != NULL): rows are split into ngroups groups at the
// device offsets; group g's scales are its own [nkb, n_g] matrix placed at
// nkb * offsets[g] (no padding: a group's row count is a multiple of 128,
// else kq_grp_offsets set *flag and every grouped kernel does nothing).
template <typename T, int FMT>
__device__ __forceinline__ void kq_blk_row(const T *x, int rows, int cols, u8 *out, float *sinv, int scols,
		float eps, int pow2, int vec, const int *offsets, int ngroups, const int *flag) {
	if (flag != 0 && *flag != 0) return;
	const float fp8max = FMT == 0 ? KQ_E4M3_MAX : KQ_E5M2_MAX;
	const int nkb = (cols + 127) >> 7;
	const int nct = (cols + KQ_ROW_COLS - 1) / KQ_ROW_COLS;
	const int mt = blockIdx.x / nct, ct = blockIdx.x - mt * nct;
	const int m0 = mt * KQ_ROW_ROWS;
	if (offsets != 0 && m0 >= offsets[ngroups]) return;
	const int l = threadIdx.x & 15;
	const int kb = ct * 16 + (threadIdx.x >> 4);
	const bool active = kb < nkb;
	const int k0 = kb * 128 + l * 8;
	const bool fast = (vec & KQ_VEC_LOAD) != 0 && active && k0 + 8 <= cols;
	const bool fastst = (vec & KQ_VEC_ROW_STORE) != 0 && k0 + 8 <= cols;
	kq_raw8 raw[KQ_ROW_ROWS];
	kq_ldrows(x, rows, cols, m0, k0, fast, active, raw);
	int goff = 0, gn = 0;
	if (offsets != 0) {
		const int g = kq_group(offsets, ngroups, m0);
		goff = offsets[g];
		gn = offsets[g + 1] - goff;
	}
	// Row amaxes: the 4 rows' partial maxima meet over the half-warp in a
	// reduce-scatter (5 shuffles instead of 16), after which lane l holds
	// row l/4's amax; one scale division per lane then serves all 4 rows,
	// and each lane fetches the 4 scales back by shuffles.
	float a[KQ_ROW_ROWS];
#pragma unroll
	for (int u = 0; u < KQ_ROW_ROWS; u++) a[u] = kq_amax_raw8((const T *)0, raw[u]);
	const float sl = kq_block_scale(kq_row_amax(a, l), fp8max, eps, pow2);
	const int lane = threadIdx.x & 31;
	float s[KQ_ROW_ROWS];
#pragma unroll
	for (int u = 0; u < KQ_ROW_ROWS; u++) s[u] = __shfl_sync(0xFFFFFFFFu, sl, (lane & 16) | (u << 2));
#pragma unroll
	for (int u = 0; u < KQ_ROW_ROWS; u++) {
		const int m = m0 + u;
		if (active && m < rows) {
			float v[8];
			kq_unpack((const T *)0, raw[u], v);
			kq_store8(out + (long long)m * cols + k0, kq_codes8<FMT>(v, s[u]), fastst, cols - k0);
		}
	}
	// Lanes 0, 4, 8, 12 of the half-warp store rows m0..m0+3's scale_inv:
	// the 4 rows' entries of block kb are contiguous.
	if (active && (l & 3) == 0) {
		const int m = m0 + (l >> 2);
		kq_put_row_sinv(sinv, offsets, nkb, kb, goff, gn, m, rows, scols, __fdiv_rn(1.0f, sl));
	}
}

#include "block_tile.cuh"


// The format is a template parameter of the bodies (no per-element branch);
// the kernels pick the instance once (kq_blk_tile_fmt for the tile body).
template <typename T, bool TILE2D>
__device__ __forceinline__ void kq_blk_tile_fmt(int fmt, kq_tile_smem &sm, const T *x, int rows, int cols, u8 *out_row,
		float *sinv_row, int scols_row, u8 *out_col, float *sinv_col, int scols_col, float eps, int pow2, int vec,
		const int *offsets, int ngroups, const int *flag) {
	if (fmt == 0) {
		kq_blk_tile<T, 0, TILE2D>(sm, x, rows, cols, out_row, sinv_row, scols_row, out_col, sinv_col, scols_col, eps, pow2, vec,
			offsets, ngroups, flag);
	} else {
		kq_blk_tile<T, 1, TILE2D>(sm, x, rows, cols, out_row, sinv_row, scols_row, out_col, sinv_col, scols_col, eps, pow2, vec,
			offsets, ngroups, flag);
	}
}

#define KQ_BLOCK_KERNELS(T, sfx) \
extern "C" __global__ void __launch_bounds__(256, KQ_ROW_MINB) kq_blk_row_##sfx(const T *x, int rows, int cols, u8 *out, float *sinv, \
		int scols, int fmt, float eps, int pow2, int vec, const int *offsets, int ngroups, const int *flag, const float *noop) { \
	if (kq_noop(noop)) return; \
	if (fmt == 0) { \
		kq_blk_row<T, 0>(x, rows, cols, out, sinv, scols, eps, pow2, vec, offsets, ngroups, flag); \
	} else { \
		kq_blk_row<T, 1>(x, rows, cols, out, sinv, scols, eps, pow2, vec, offsets, ngroups, flag); \
	} \
} \
extern "C" __global__ void __launch_bounds__(256, KQ_TILE_BLOCKS(T)) kq_blk_col_##sfx(const T *x, int rows, int cols, u8 *out_row, \
		float *sinv_row, int scols_row, u8 *out_col, float *sinv_col, int scols_col, int fmt, float eps, int pow2, int vec, \
		const int *offsets, int ngroups, const int *flag, const float *noop) { \
	if (kq_noop(noop)) return; \
	__shared__ kq_tile_smem sm; \
	kq_blk_tile_fmt<T, false>(fmt, sm, x, rows, cols, out_row, sinv_row, scols_row, out_col, sinv_col, scols_col, eps, pow2, \
		vec, offsets, ngroups, flag); \
} \
extern "C" __global__ void __launch_bounds__(256, KQ_TILE_BLOCKS(T)) kq_blk_2d_##sfx(const T *x, int rows, int cols, u8 *out_row, \
		float *sinv_row, int scols_row, u8 *out_col, float *sinv_col, int scols_col, int fmt, float eps, int pow2, int vec, \
		const int *offsets, int ngroups, const int *flag, const float *noop) { \
	if (kq_noop(noop)) return; \
	__shared__ kq_tile_smem sm; \
	/* Ungrouped: literal nulls, so the inlined body drops the grouped code. */ \
	kq_blk_tile_fmt<T, true>(fmt, sm, x, rows, cols, out_row, sinv_row, scols_row, out_col, sinv_col, scols_col, eps, \
		pow2, vec, 0, 0, 0); \
} \
extern "C" __global__ void __launch_bounds__(256, KQ_TILE_MINB) kq_blk_2dg_##sfx(const T *x, int rows, int cols, u8 *out_row, \
		float *sinv_row, int scols_row, u8 *out_col, float *sinv_col, int scols_col, int fmt, float eps, int pow2, int vec, \
		const int *offsets, int ngroups, const int *flag) { \
	__shared__ kq_tile_smem sm; \
	kq_blk_tile_fmt<T, true>(fmt, sm, x, rows, cols, out_row, sinv_row, scols_row, out_col, sinv_col, scols_col, eps, \
		pow2, vec, offsets, ngroups, flag); \
}

KQ_BLOCK_KERNELS(float, f32)
KQ_BLOCK_KERNELS(kq_bf16, bf16)
KQ_BLOCK_KERNELS(kq_f16, f16)
