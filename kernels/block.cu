// kquant Float8BlockScaling kernels: FP8 with one float32 scale per 1x128
// block (rowwise operand), per 128x1 block (columnwise operand, stored
// transposed [cols, rows]) or per 128x128 tile (weights; both operands share
// the tile scales, the columnwise one being the transposed codes). Scales
// are laid out in TE's padded shapes (docs/quantization-formats.md), the
// padding written as zero by the kernels themselves, so a step needs no
// memset.
//
// The rowwise 1x128 kernel also serves the grouped (MoE) quantize: given the
// device offsets made by kq_grp_offsets (grouped.cu) it finds each row's
// group by binary search and writes the scales in the group's own layout.
//
// Numbers: the contract's per-block scale rule (scale = fp8_max / amax with
// epsilon, 1 for a zero or non-finite amax, float32 max on overflow,
// optional power-of-2 rounding down), then data = cvt.rn.satfinite(x *
// scale) and scale_inv = 1 / scale, each one float32 operation rounded to
// nearest even (the build keeps IEEE semantics: see hack/gen-kernels.sh).
//
// Self-contained (no includes) so that the stamp on block.ptx covers
// everything it came from.

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define KQ_DEV static __device__ __forceinline__
#define KQ_FLT_MAX_BITS 0x7F7FFFFFu
#define KQ_E4M3 0
#define KQ_ROW_UNROLL 4

struct kq_bf16 { u16 bits; };
struct kq_f16 { u16 bits; };

KQ_DEV float kq_f16_to_f32(u32 bits) {
	float f;
	u16 h = (u16)bits;
	asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
	return f;
}
KQ_DEV float kq_ld(const float *x, long long i) { return x[i]; }
KQ_DEV float kq_ld(const kq_bf16 *x, long long i) { return __uint_as_float((u32)x[i].bits << 16); }
KQ_DEV float kq_ld(const kq_f16 *x, long long i) { return kq_f16_to_f32(x[i].bits); }

// Four consecutive elements starting at element i (i % 4 == 0, the base
// pointer aligned to 4 elements).
KQ_DEV void kq_ld4(const float *x, long long i, float v[4]) {
	float4 q = reinterpret_cast<const float4 *>(x)[i >> 2];
	v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
}
KQ_DEV void kq_ld4(const kq_bf16 *x, long long i, float v[4]) {
	uint2 q = reinterpret_cast<const uint2 *>(x)[i >> 2];
	v[0] = __uint_as_float(q.x << 16); v[1] = __uint_as_float(q.x & 0xFFFF0000u);
	v[2] = __uint_as_float(q.y << 16); v[3] = __uint_as_float(q.y & 0xFFFF0000u);
}
KQ_DEV void kq_ld4(const kq_f16 *x, long long i, float v[4]) {
	uint2 q = reinterpret_cast<const uint2 *>(x)[i >> 2];
	v[0] = kq_f16_to_f32(q.x & 0xFFFFu); v[1] = kq_f16_to_f32(q.x >> 16);
	v[2] = kq_f16_to_f32(q.y & 0xFFFFu); v[3] = kq_f16_to_f32(q.y >> 16);
}

KQ_DEV bool kq_finite(float x) { return (__float_as_uint(x) & 0x7FFFFFFFu) < 0x7F800000u; }

// |x| as bits, 0 for NaN: NaN elements do not raise an amax, and
// nonnegative floats order like their bit patterns.
KQ_DEV u32 kq_absbits(float x) {
	u32 a = __float_as_uint(x) & 0x7FFFFFFFu;
	return a > 0x7F800000u ? 0u : a;
}

// One saturating RNE conversion (cvt.rn.satfinite, the contract's rule).
KQ_DEV u32 kq_cvt1(float x, int fmt) {
	u16 r;
	float z = 0.0f;
	if (fmt == KQ_E4M3) {
		asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(z), "f"(x));
	} else {
		asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(z), "f"(x));
	}
	return r & 0xFFu;
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

KQ_DEV u32 kq_warp_max(u32 a) {
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) a = max(a, __shfl_xor_sync(0xFFFFFFFFu, a, o));
	return a;
}

// kq_group returns the group holding row m: the last g with offsets[g] <=
// m (empty groups, whose offset equals the next one's, are skipped).
KQ_DEV int kq_group(const int *offsets, int ngroups, int m) {
	int lo = 0, hi = ngroups - 1;
	while (lo < hi) {
		int mid = (lo + hi + 1) >> 1;
		if (offsets[mid] <= m) lo = mid; else hi = mid - 1;
	}
	return lo;
}

// Rowwise 1x128: one warp per block of 128 elements of a row, four
// consecutive elements per lane (a warp reads 128 contiguous elements and
// writes 128 contiguous bytes). Scales [ceil(cols/128), roundup(rows,4)],
// entry (kb, m); the warp of a row's last block also zeroes the padding
// entries of rows [rows, roundup(rows,4)).
//
// Grouped (offsets != NULL): rows are split into ngroups groups at the
// device offsets; group g's scales are its own [nkb, n_g] matrix placed at
// nkb * offsets[g] (no padding: a group's row count is a multiple of 128,
// else kq_grp_offsets set *flag and every grouped kernel does nothing).
template <typename T>
__device__ void kq_blk_row(const T *x, int rows, int cols, u8 *out, float *sinv, int scols, int fmt,
		float eps, int pow2, int vec, const int *offsets, int ngroups, const int *flag) {
	if (flag != 0 && *flag != 0) return;
	const float fp8max = fmt == KQ_E4M3 ? 448.0f : 57344.0f;
	const int nkb = (cols + 127) >> 7;
	// A warp takes KQ_ROW_UNROLL consecutive blocks of a row per step and
	// issues all their loads before the first reduction, so that enough
	// bytes are in flight per warp to approach the memory bandwidth.
	const int nsb = (nkb + KQ_ROW_UNROLL - 1) / KQ_ROW_UNROLL;
	const int lane = threadIdx.x & 31;
	const long long nsteps = (long long)rows * nsb;
	const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
	for (long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; w < nsteps; w += nwarps) {
		const int m = (int)(w / nsb), sb = (int)(w % nsb);
		if (offsets != 0 && m >= offsets[ngroups]) continue;
		const long long base = (long long)m * cols;
		float v[KQ_ROW_UNROLL][4];
#pragma unroll
		for (int u = 0; u < KQ_ROW_UNROLL; u++) {
			const int k0 = (sb * KQ_ROW_UNROLL + u) * 128 + lane * 4;
			if (vec && k0 + 4 <= cols) {
				kq_ld4(x, base + k0, v[u]);
			} else {
#pragma unroll
				for (int j = 0; j < 4; j++) v[u][j] = k0 + j < cols ? kq_ld(x, base + k0 + j) : 0.0f;
			}
		}
		int g = 0, off = 0, n = 0;
		if (offsets != 0 && lane == 0) {
			g = kq_group(offsets, ngroups, m);
			off = offsets[g];
			n = offsets[g + 1] - off;
		}
#pragma unroll
		for (int u = 0; u < KQ_ROW_UNROLL; u++) {
			const int kb = sb * KQ_ROW_UNROLL + u;
			if (kb >= nkb) break;
			const int k0 = kb * 128 + lane * 4;
			u32 a = max(max(kq_absbits(v[u][0]), kq_absbits(v[u][1])), max(kq_absbits(v[u][2]), kq_absbits(v[u][3])));
			a = kq_warp_max(a);
			const float s = kq_block_scale(__uint_as_float(a), fp8max, eps, pow2);
			if (lane == 0) {
				const float inv = __fdiv_rn(1.0f, s);
				if (offsets != 0) {
					sinv[(long long)nkb * off + (long long)kb * n + (m - off)] = inv;
				} else {
					sinv[(long long)kb * scols + m] = inv;
					if (m == rows - 1) {
						for (int p = rows; p < scols; p++) sinv[(long long)kb * scols + p] = 0.0f;
					}
				}
			}
			u32 c[4];
#pragma unroll
			for (int j = 0; j < 4; j++) c[j] = kq_cvt1(__fmul_rn(v[u][j], s), fmt);
			if (vec && k0 + 4 <= cols) {
				*reinterpret_cast<u32 *>(out + base + k0) = c[0] | c[1] << 8 | c[2] << 16 | c[3] << 24;
			} else {
				for (int j = 0; j < 4; j++) {
					if (k0 + j < cols) out[base + k0 + j] = (u8)c[j];
				}
			}
		}
	}
}

// Columnwise 128x1, stored transposed: a block of 256 threads takes a tile
// of 128 rows x 32 columns. Each column's 128 values are staged in shared
// memory (one read of the input), the column amax reduced there, and the
// codes written as 16-byte runs of the transposed rows (coalesced writes).
// Scales [ceil(rows/128), roundup(cols,4)], entry (mb, k); padding columns
// [cols, roundup(cols,4)) zeroed by the last tile column's block.
template <typename T>
__device__ void kq_blk_col(const T *x, int rows, int cols, u8 *out, float *sinv, int scols, int fmt,
		float eps, int pow2, int vec) {
	__shared__ float tile[128][33];
	__shared__ u32 part[8][32];
	__shared__ float scale[32];
	const float fp8max = fmt == KQ_E4M3 ? 448.0f : 57344.0f;
	const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
	const int k = blockIdx.x * 32 + tx;
	const int mb = blockIdx.y, m0 = mb * 128;
	u32 a = 0;
	for (int i = ty; i < 128; i += 8) {
		const int m = m0 + i;
		const float v = m < rows && k < cols ? kq_ld(x, (long long)m * cols + k) : 0.0f;
		tile[i][tx] = v;
		a = max(a, kq_absbits(v));
	}
	part[ty][tx] = a;
	__syncthreads();
	if (ty == 0) {
		for (int j = 1; j < 8; j++) a = max(a, part[j][tx]);
		const float s = kq_block_scale(__uint_as_float(a), fp8max, eps, pow2);
		scale[tx] = s;
		if (k < cols) {
			sinv[(long long)mb * scols + k] = __fdiv_rn(1.0f, s);
		} else if (k < scols) {
			sinv[(long long)mb * scols + k] = 0.0f;
		}
	}
	__syncthreads();
	const int c = threadIdx.x >> 3, seg = threadIdx.x & 7;
	const int kk = blockIdx.x * 32 + c;
	if (kk >= cols) return;
	const float s = scale[c];
	const int mm = m0 + seg * 16;
	if (mm >= rows) return;
	u32 w[4];
#pragma unroll
	for (int q = 0; q < 4; q++) {
		u32 word = 0;
#pragma unroll
		for (int j = 0; j < 4; j++) word |= kq_cvt1(__fmul_rn(tile[seg * 16 + q * 4 + j][c], s), fmt) << (8 * j);
		w[q] = word;
	}
	u8 *dst = out + (long long)kk * rows + mm;
	if (vec && mm + 16 <= rows) {
		uint4 q;
		q.x = w[0]; q.y = w[1]; q.z = w[2]; q.w = w[3];
		*reinterpret_cast<uint4 *>(dst) = q;
	} else {
		for (int j = 0; j < 16 && mm + j < rows; j++) dst[j] = (u8)(w[j >> 2] >> (8 * (j & 3)));
	}
}

// 128x128 tiles: one block of 256 threads per tile; each thread holds 16
// rows x 4 consecutive columns in registers, so the input is read once. The
// tile amax gives one scale; the rowwise codes go straight out, the
// columnwise ones through shared memory as 16-byte runs of the transposed
// rows. Scales: rowwise [ceil(rows/128), roundup(nkb,4)] entry (mb, kb),
// columnwise [nkb, roundup(nmb,4)] entry (kb, mb); either output may be NULL.
template <typename T>
__device__ void kq_blk_2d(const T *x, int rows, int cols, u8 *out_row, float *sinv_row, int scols_row,
		u8 *out_col, float *sinv_col, int scols_col, int fmt, float eps, int pow2, int vec) {
	__shared__ u32 red[8];
	__shared__ __align__(16) u8 tr[128][144];
	const float fp8max = fmt == KQ_E4M3 ? 448.0f : 57344.0f;
	const int lane = threadIdx.x & 31, ty = threadIdx.x >> 5;
	const int kb = blockIdx.x, mb = blockIdx.y;
	const int nkb = gridDim.x, nmb = gridDim.y;
	const int k0 = kb * 128 + lane * 4, m0 = mb * 128;
	const bool fullk = vec && k0 + 4 <= cols;
	float v[16][4];
	u32 a = 0;
#pragma unroll
	for (int r = 0; r < 16; r++) {
		const int m = m0 + ty + 8 * r;
		const long long base = (long long)m * cols;
		if (m < rows && fullk) {
			kq_ld4(x, base + k0, v[r]);
		} else {
#pragma unroll
			for (int j = 0; j < 4; j++) v[r][j] = m < rows && k0 + j < cols ? kq_ld(x, base + k0 + j) : 0.0f;
		}
#pragma unroll
		for (int j = 0; j < 4; j++) a = max(a, kq_absbits(v[r][j]));
	}
	a = kq_warp_max(a);
	if (lane == 0) red[ty] = a;
	__syncthreads();
	a = red[0];
#pragma unroll
	for (int j = 1; j < 8; j++) a = max(a, red[j]);
	const float s = kq_block_scale(__uint_as_float(a), fp8max, eps, pow2);
	if (threadIdx.x == 0) {
		const float inv = __fdiv_rn(1.0f, s);
		if (sinv_row != 0) {
			sinv_row[(long long)mb * scols_row + kb] = inv;
			if (kb == nkb - 1) {
				for (int p = nkb; p < scols_row; p++) sinv_row[(long long)mb * scols_row + p] = 0.0f;
			}
		}
		if (sinv_col != 0) {
			sinv_col[(long long)kb * scols_col + mb] = inv;
			if (mb == nmb - 1) {
				for (int p = nmb; p < scols_col; p++) sinv_col[(long long)kb * scols_col + p] = 0.0f;
			}
		}
	}
#pragma unroll
	for (int r = 0; r < 16; r++) {
		const int i = ty + 8 * r, m = m0 + i;
		u32 c[4];
#pragma unroll
		for (int j = 0; j < 4; j++) {
			c[j] = kq_cvt1(__fmul_rn(v[r][j], s), fmt);
			tr[lane * 4 + j][i] = (u8)c[j];
		}
		if (out_row != 0 && m < rows) {
			const long long base = (long long)m * cols;
			if (fullk) {
				*reinterpret_cast<u32 *>(out_row + base + k0) = c[0] | c[1] << 8 | c[2] << 16 | c[3] << 24;
			} else {
				for (int j = 0; j < 4; j++) {
					if (k0 + j < cols) out_row[base + k0 + j] = (u8)c[j];
				}
			}
		}
	}
	if (out_col == 0) return;
	__syncthreads();
	// Thread t writes transposed row kc = t/2, bytes [64*(t%2), +64).
	const int kc = threadIdx.x >> 1, half = threadIdx.x & 1;
	const int k = kb * 128 + kc;
	if (k >= cols) return;
	u8 *dst = out_col + (long long)k * rows + m0;
#pragma unroll
	for (int q = 0; q < 4; q++) {
		const int i = half * 64 + q * 16;
		if (m0 + i >= rows) break;
		if (vec && m0 + i + 16 <= rows) {
			*reinterpret_cast<uint4 *>(dst + i) = *reinterpret_cast<const uint4 *>(&tr[kc][i]);
		} else {
			for (int j = 0; j < 16 && m0 + i + j < rows; j++) dst[i + j] = tr[kc][i + j];
		}
	}
}

#define KQ_BLOCK_KERNELS(T, sfx) \
extern "C" __global__ void __launch_bounds__(256) kq_blk_row_##sfx(const T *x, int rows, int cols, u8 *out, float *sinv, \
		int scols, int fmt, float eps, int pow2, int vec, const int *offsets, int ngroups, const int *flag) { \
	kq_blk_row<T>(x, rows, cols, out, sinv, scols, fmt, eps, pow2, vec, offsets, ngroups, flag); \
} \
extern "C" __global__ void __launch_bounds__(256) kq_blk_col_##sfx(const T *x, int rows, int cols, u8 *out, float *sinv, \
		int scols, int fmt, float eps, int pow2, int vec) { \
	kq_blk_col<T>(x, rows, cols, out, sinv, scols, fmt, eps, pow2, vec); \
} \
extern "C" __global__ void __launch_bounds__(256) kq_blk_2d_##sfx(const T *x, int rows, int cols, u8 *out_row, \
		float *sinv_row, int scols_row, u8 *out_col, float *sinv_col, int scols_col, int fmt, float eps, int pow2, int vec) { \
	kq_blk_2d<T>(x, rows, cols, out_row, sinv_row, scols_row, out_col, sinv_col, scols_col, fmt, eps, pow2, vec); \
}

KQ_BLOCK_KERNELS(float, f32)
KQ_BLOCK_KERNELS(kq_bf16, bf16)
KQ_BLOCK_KERNELS(kq_f16, f16)
