// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// quantize_grouped.cuh: part of quantize.cu (included once, after its entry
// points): the grouped (MoE) quantize kernels of current scaling and MXFP8.
// Not a header of its own: it uses what quantize.cu defines before it.

// ---- grouped (MoE) quantize: current scaling and MXFP8 ----------------------
//
// One [rows, cols] input split along its rows into ngroups groups whose
// sizes live in device memory: offsets[G+1] and *flag come from
// kq_grp_offsets (grouped.cu), which runs first in the same stream. Every
// kernel here reads *flag first and does nothing when it is set (a
// misaligned group, or sizes that do not add up to rows), so a bad split
// vector never makes a kernel index out of bounds. Grids are sized on the
// host for the largest case; each warp or block finds the group of its rows
// by binary search over the offsets. The results are the per-group results
// of the reference (internal/quant/reference, QuantizeGrouped) concatenated.

// kq_scale_from_amax (quantize.cu) gives each group's scale.

KQ_DEV u32 kq_bits(float v) { return __float_as_uint(v); }
KQ_DEV u32 kq_bits(kq_bf16 v) { return v.bits; }
KQ_DEV u32 kq_bits(kq_f16 v) { return v.bits; }

// kq_grp_ld8 loads the 8 elements at columns c..c+7 of the row starting at
// element rowoff as raw bits (kq_unpack8 widens them), zero past cols. vec:
// cols % 8 == 0 and x 16-byte aligned (one or two 16-byte loads); else
// element by element.
template <typename T>
KQ_DEV void kq_grp_ld8(const T *x, long long rowoff, int c, int cols, int vec, uint4 q[2]) {
	if (vec) {
		q[0] = q[1] = make_uint4(0u, 0u, 0u, 0u);
		if (c < cols) kq_ldraw8(x, (rowoff + c) / 8, q);
		return;
	}
	u32 w[8] = {0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u};
#pragma unroll
	for (int k = 0; k < 8; k++) {
		u32 b = c + k < cols ? kq_bits(x[rowoff + c + k]) : 0u;
		if (sizeof(T) == 4) w[k] = b;
		else w[k >> 1] |= b << (16 * (k & 1));
	}
	q[0] = make_uint4(w[0], w[1], w[2], w[3]);
	q[1] = make_uint4(w[4], w[5], w[6], w[7]);
}

// kq_grp_st8 stores 8 codes at columns c..c+7 of the row starting at byte
// off, none past cols (vec: cols % 8 == 0 and out 8-byte aligned).
KQ_DEV void kq_grp_st8(u8 *out, long long off, int c, int cols, int vec, uint2 q) {
	if (vec) {
		if (c < cols) *reinterpret_cast<uint2 *>(out + off + c) = q;
		return;
	}
#pragma unroll
	for (int k = 0; k < 8; k++)
		if (c + k < cols) out[off + c + k] = (u8)((k < 4 ? q.x : q.y) >> (8 * (k & 3)));
}

// kq_grp_scales writes every group's scale and 1/scale (block 0 only), empty
// groups included (their amax is 0: scale 1).
KQ_DEV void kq_grp_scales(const u32 *amax, int ngroups, float *scale, float *scale_inv, float fp8max, float eps, int pow2) {
	if (blockIdx.x != 0) return;
	for (int g = (int)threadIdx.x; g < ngroups; g += (int)blockDim.x) {
		float s = kq_scale_from_amax(__uint_as_float(amax[g]), fp8max, eps, pow2);
		if (scale != 0) scale[g] = s;
		if (scale_inv != 0) scale_inv[g] = __fdiv_rn(1.0f, s);
	}
}

// Rows of a 16-row band a lane loads before it uses the first (8 x 16 bytes
// in flight for 16-bit inputs, 4 x 32 for float32).
template <typename T>
struct kq_grp_rows { static const int n = sizeof(T) == 4 ? 4 : 8; };

// The grouped per-tensor FP8 kernels below, current scaling and delayed
// scaling alike, share three work items: kq_grp_band (a 16-row band of one
// group, rowwise), kq_trw_tile (a 128x128 tile, cast + transpose, as the
// ungrouped kq_cast_trw) and
// kq_grp_tr_tile (a 16x32 tile of one group, any shape). The two schemes
// differ only in where a group's scale comes from (its amax, or its state)
// and whether the cast also reduces the amax (AMAX: delayed scaling
// records it), so each kernel is its walk over the items around them.

// kq_grp_band: a warp's 16-row band r0.. x 8 columns c.. per lane, with
// the band's scale s: with STORE its codes go to out, with AMAX m rises to
// the band's max |x| (NaN ignored).
template <typename T, bool AMAX, bool STORE>
KQ_DEV void kq_grp_band(const T *x, int cols, int r0, int c, float s, u8 *out, int fmt, int vec, float &m) {
	const int R = kq_grp_rows<T>::n;
	const float fs[8] = {s, s, s, s, s, s, s, s};
#pragma unroll
	for (int h = 0; h < 16; h += R) {
		uint4 q[R][2];
#pragma unroll
		for (int j = 0; j < R; j++) kq_grp_ld8(x, (long long)(r0 + h + j) * cols, c, cols, vec, q[j]);
#pragma unroll
		for (int j = 0; j < R; j++) {
			float v[8];
			kq_unpack8(x, q[j], v);
			if (AMAX) {
#pragma unroll
				for (int k = 0; k < 8; k++) m = fmaxf(m, fabsf(v[k]));
			}
			if (STORE) kq_grp_st8(out, (long long)(r0 + h + j) * cols, c, cols, vec, kq_cvt8(v, fs, fmt));
		}
	}
}

// kq_grp_band_walk: warp w's items (band, 256-column chunk) of the
// rowwise kernels, in order; fn(it, r0, c) each.
template <typename F>
KQ_DEV void kq_grp_band_walk(int rows, int cols, bool contiguous, F fn) {
	const int lane = (int)(threadIdx.x & 31u);
	const int nch = (cols + 255) / 256;
	const long long items = (long long)(rows / 16) * nch;
	const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
	const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	const long long i0 = contiguous ? items * w / nwarps : w, i1 = contiguous ? items * (w + 1) / nwarps : items;
	const long long step = contiguous ? 1 : nwarps;
	for (long long it = i0; it < i1; it += step) fn((int)(it / nch) * 16, (int)(it % nch) * 256 + 8 * lane);
}

// kq_grp_tr_tile: the 16x32 tile at (r0, c0), in group [goff, goff + gn),
// of cast + transpose for any shape and alignment, element by element
// with the group's scale s (256 threads); with AMAX m rises to the max |x|
// of the thread's elements.
template <typename T, bool AMAX>
KQ_DEV void kq_grp_tr_tile(const T *x, int cols, int r0, int c0, int goff, int gn, float s, u8 *out_row, u8 *out_col, int fmt,
		u8 (*tile)[33], float &m) {
	const int tx = (int)(threadIdx.x & 31u), ty = (int)(threadIdx.x >> 5);
#pragma unroll
	for (int j = 0; j < 16; j += 8) {
		const int r = r0 + ty + j, cc = c0 + tx;
		if (cc < cols) {
			const long long i = (long long)r * cols + cc;
			const float v = kq_f32(x[i]);
			if (AMAX) m = fmaxf(m, fabsf(v));
			const u32 code = kq_cvt1(__fmul_rn(v, s), fmt);
			if (out_row != 0) out_row[i] = (u8)code;
			tile[ty + j][tx] = (u8)code;
		}
	}
	__syncthreads();
#pragma unroll
	for (int j = 0; j < 2; j++) {
		const int e = (int)threadIdx.x + 256 * j;
		const int tc = e >> 4, tr = e & 15;
		const int cc = c0 + tc;
		if (cc < cols) out_col[(long long)cols * goff + (long long)cc * gn + (r0 + tr - goff)] = tile[tr][tc];
	}
	__syncthreads();
}

// Per-group amax (current scaling). Work items are 16-row bands x 256
// columns, one per warp (groups are multiples of 16 rows, so a band lies in
// one group); a lane reads 8 columns of the 16 rows. The warp's maximum goes
// into amax[g] by one atomicMax on the float's bits (amaxes are >= 0, where
// the bits order as the values; NaN elements never raise a maximum). amax
// is zeroed by kq_grp_offsets.
template <typename T>
KQ_DEV void kq_grp_amax_impl(const T *x, int rows, int cols, const int *offsets, int ngroups, const int *flag, u32 *amax, int vec) {
	if (*flag != 0) return;
	kq_grp_band_walk(rows, cols, false, [&](int r0, int c) {
		float m = 0.0f;
		kq_grp_band<T, true, false>(x, cols, r0, c, 1.0f, 0, 0, vec, m);
		m = kq_warp_max(m);
		if ((threadIdx.x & 31u) == 0u && m > 0.0f) atomicMax(&amax[kq_group(offsets, ngroups, r0)], __float_as_uint(m));
	});
}

// Rowwise cast (current scaling), the items of kq_grp_amax: each band's
// codes with its group's scale, computed from amax[g] (warp-uniform).
template <typename T>
KQ_DEV void kq_grp_cast_impl(const T *x, int rows, int cols, const int *offsets, int ngroups, const int *flag, const u32 *amax,
		u8 *out, float *scale, float *scale_inv, int fmt, float fp8max, float eps, int pow2, int vec) {
	if (*flag != 0) return;
	kq_grp_scales(amax, ngroups, scale, scale_inv, fp8max, eps, pow2);
	kq_grp_band_walk(rows, cols, false, [&](int r0, int c) {
		const float s = kq_scale_from_amax(__uint_as_float(amax[kq_group(offsets, ngroups, r0)]), fp8max, eps, pow2);
		float m = 0.0f;
		kq_grp_band<T, false, true>(x, cols, r0, c, s, out, fmt, vec, m);
	});
}

// Cast + transpose (current scaling) over the 128x128 tiles of the whole
// tensor (kq_trw_tile), strided over the blocks from the last tile;
// a thread takes the scale of its patch's group.
template <typename T>
KQ_DEV void kq_grp_cast_trw_impl(const T *x, int rows, int cols, const int *offsets, int ngroups, const int *flag, const u32 *amax,
		u8 *out_row, u8 *out_col, float *scale, float *scale_inv, int fmt, float fp8max, float eps, int pow2) {
	if (*flag != 0) return;
	kq_grp_scales(amax, ngroups, scale, scale_inv, fp8max, eps, pow2);
	__shared__ u32 tile[(KQ_TRW / 4) * KQ_TRW_PITCH];
	const int ntx = (cols + KQ_TRW - 1) / KQ_TRW;
	const long long ntiles = (long long)ntx * ((rows + KQ_TRW - 1) / KQ_TRW);
	for (long long k = blockIdx.x; k < ntiles; k += gridDim.x) {
		const long long tl = ntiles - 1 - k;
		const int c0 = (int)(tl % ntx) * KQ_TRW, r0 = (int)(tl / ntx) * KQ_TRW;
		const int r = r0 + 8 * (int)(threadIdx.x >> 4), c = c0 + 8 * (int)(threadIdx.x & 15u);
		float s = 1.0f, m = 0.0f;
		if (r < rows && c < cols) s = kq_scale_from_amax(__uint_as_float(amax[kq_group(offsets, ngroups, r)]), fp8max, eps, pow2);
		kq_trw_tile<T, false>(x, rows, cols, offsets, ngroups, r0, c0, s, out_row, out_col, fmt, tile, m);
	}
}

// Cast + transpose (current scaling) for any shape and alignment: the
// 16x32 tiles of kq_grp_tr_tile (16 rows lie in one group), strided over
// the blocks.
template <typename T>
KQ_DEV void kq_grp_cast_tr_impl(const T *x, int rows, int cols, const int *offsets, int ngroups, const int *flag, const u32 *amax,
		u8 *out_row, u8 *out_col, float *scale, float *scale_inv, int fmt, float fp8max, float eps, int pow2) {
	if (*flag != 0) return;
	kq_grp_scales(amax, ngroups, scale, scale_inv, fp8max, eps, pow2);
	__shared__ u8 tile[16][33];
	const int ntx = (cols + 31) / 32;
	const long long ntiles = (long long)ntx * (rows / 16);
	for (long long tl = blockIdx.x; tl < ntiles; tl += gridDim.x) {
		const int c0 = (int)(tl % ntx) * 32, r0 = (int)(tl / ntx) * 16;
		const int g = kq_group(offsets, ngroups, r0);
		const int goff = offsets[g], gn = offsets[g + 1] - goff;
		const float s = kq_scale_from_amax(__uint_as_float(amax[g]), fp8max, eps, pow2);
		float m = 0.0f;
		kq_grp_tr_tile<T, false>(x, cols, r0, c0, goff, gn, s, out_row, out_col, fmt, tile, m);
	}
}

// kq_grp_tiles: tiles[g] = sum over h < g of ceil(n_h / 128), the 128-row
// units of the groups' padded MXFP8 scale matrices before group g (TE's
// rowwise scales have roundup(n_g, 128) rows, the columnwise
// roundup(n_g/32, 4)). One block; chunks of 1024 groups, each one scan of
// warp scans.
extern "C" __global__ void __launch_bounds__(1024) kq_grp_tiles(const int *offsets, int ngroups, int *tiles) {
	__shared__ int wsum[32];
	__shared__ int carry;
	const u32 full = 0xFFFFFFFFu;
	const int t = (int)threadIdx.x, lane = t & 31, w = t >> 5;
	if (t == 0) {
		carry = 0;
		tiles[0] = 0;
	}
	__syncthreads();
	for (int c0 = 0; c0 < ngroups; c0 += 1024) {
		const int g = c0 + t;
		int v = g < ngroups ? (offsets[g + 1] - offsets[g] + 127) / 128 : 0;
		for (int d = 1; d < 32; d <<= 1) {
			int y = __shfl_up_sync(full, v, d);
			if (lane >= d) v += y;
		}
		if (lane == 31) wsum[w] = v;
		__syncthreads();
		if (w == 0) {
			int sv = wsum[lane];
			for (int d = 1; d < 32; d <<= 1) {
				int y = __shfl_up_sync(full, sv, d);
				if (lane >= d) sv += y;
			}
			wsum[lane] = sv;
		}
		__syncthreads();
		const int incl = v + (w > 0 ? wsum[w - 1] : 0) + carry;
		if (g < ngroups) tiles[g + 1] = incl;
		__syncthreads();
		if (t == 1023) carry = incl;
		__syncthreads();
	}
}

// Grouped MXFP8 (1x32 rowwise, 32x1 columnwise; groups of 32-row
// multiples). The data of both operands keeps the input's layout, so it is
// the ungrouped data; only the scales are per group: group g's rowwise
// [roundup(n_g,128), scols_row] matrix at row 128*tiles[g] of sc_row, its
// columnwise [roundup(n_g/32,4), scols_col] one at row 4*tiles[g] of sc_col,
// padding zero. A warp takes one 32x64 tile of the padded row space (the
// concatenated padded matrices: band vb of 32 rows, columns 64ct..): the
// band belongs to the group g with 4*tiles[g] <= vb < 4*tiles[g+1]; band vb
// - 4*tiles[g] of the group holds data rows when it is below n_g/32, else
// it is padding (zero scales, no data). Lane (rq, cg) = (lane/8, lane%8)
// holds rows rq + 4i (i = 0..7) and columns 8cg..8cg+7, as kq_mxfp8_both.
// Optionally the swizzled scales (swz_row: the rowwise matrix's rows are
// 128-aligned per group, so one swizzle of the whole; swz_col: each group's
// transposed columnwise matrix [roundup(cols,128), roundup(n_g/32,4)]
// swizzled at the group's place) and the per-group amax (atomicMax on the
// bits into amax[g], zeroed by kq_grp_offsets). ops: KQ_MX_ROW, KQ_MX_COL or
// both.
template <typename T>
KQ_DEV void kq_grp_mx_impl(const T *x, int rows, int cols, const int *offsets, const int *tiles, int ngroups, const int *flag,
		u8 *out_row, u8 *sc_row, u8 *swz_row, int scols_row, u8 *out_col, u8 *sc_col, u8 *swz_col, int scols_col,
		int fmt, int ocp, u32 *amax, int vec, int ops) {
	if (*flag != 0) return;
	const u32 full = 0xFFFFFFFFu;
	const int lane = (int)(threadIdx.x & 31u);
	const int cg = lane & 7, rq = lane >> 3;
	const int nct = scols_col / 64;
	const int nblk = (cols + 31) / 32;
	const long long ntot = 4LL * tiles[ngroups] * nct;
	const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
	for (long long t = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; t < ntot; t += nwarps) {
		const int vb = (int)(t / nct), ct = (int)(t % nct);
		const int g = kq_group(tiles, ngroups, vb >> 2);
		const int goff = offsets[g], gn = offsets[g + 1] - goff;
		const int tg = tiles[g];
		const int lb = vb - 4 * tg;       // the band within the group's padded rows
		const bool data = lb < gn / 32;   // else padding
		const int c = ct * 64 + cg * 8;
		const int r0 = goff + 32 * lb + rq; // the lane's first data row
		uint4 q[8][2];
#pragma unroll
		for (int i = 0; i < 8; i++) {
			q[i][0] = q[i][1] = make_uint4(0u, 0u, 0u, 0u);
			if (data) kq_grp_ld8(x, (long long)(r0 + 4 * i) * cols, c, cols, vec, q[i]);
		}
		float tm = 0.0f;
		float cm[8] = {0, 0, 0, 0, 0, 0, 0, 0};
		const int blk = ct * 2 + (cg >> 2);
#pragma unroll
		for (int i = 0; i < 8; i++) {
			float v[8];
			kq_unpack8(x, q[i], v);
			float m = 0.0f;
#pragma unroll
			for (int k = 0; k < 8; k++) {
				float a = fabsf(v[k]);
				m = fmaxf(m, a);
				cm[k] = fmaxf(cm[k], a);
			}
			if (!(ops & KQ_MX_ROW)) continue;
			m = fmaxf(m, __shfl_xor_sync(full, m, 1));
			m = fmaxf(m, __shfl_xor_sync(full, m, 2));
			tm = fmaxf(tm, m);
			u32 e = ocp ? kq_e8m0_ocp(m, fmt) : kq_e8m0_te(m, fmt);
			if ((cg & 3) == 0) {
				const long long sr = 128LL * tg + 32 * lb + rq + 4 * i;
				const u8 val = (data && blk < nblk) ? (u8)e : (u8)0;
				sc_row[sr * scols_row + blk] = val;
				if (swz_row != 0) swz_row[kq_swz(sr, blk, scols_row)] = val;
			}
			if (data) {
				float f = kq_e8m0_encode_factor(e);
				float fs[8] = {f, f, f, f, f, f, f, f};
				kq_grp_st8(out_row, (long long)(r0 + 4 * i) * cols, c, cols, vec, kq_cvt8(v, fs, fmt));
			}
		}
		if (ops & KQ_MX_COL) {
			float f[8];
			u32 e[8];
#pragma unroll
			for (int k = 0; k < 8; k++) {
				cm[k] = fmaxf(cm[k], __shfl_xor_sync(full, cm[k], 8));
				cm[k] = fmaxf(cm[k], __shfl_xor_sync(full, cm[k], 16));
				if (!(ops & KQ_MX_ROW)) tm = fmaxf(tm, cm[k]);
				e[k] = ocp ? kq_e8m0_ocp(cm[k], fmt) : kq_e8m0_te(cm[k], fmt);
				f[k] = kq_e8m0_encode_factor(e[k]);
			}
			// Lane rq writes the scale bytes of columns c + 2rq, c + 2rq + 1.
			const long long scr = 4LL * tg + lb;
			const int ncg = 4 * (tiles[g + 1] - tg); // the group's columnwise scale rows
#pragma unroll
			for (int k = 0; k < 8; k++) {
				if ((k >> 1) != rq) continue;
				const int cc = c + k;
				const u8 val = (data && cc < cols) ? (u8)e[k] : (u8)0;
				sc_col[scr * scols_col + cc] = val;
				if (swz_col != 0) swz_col[4LL * tg * scols_col + kq_swz(cc, lb, ncg)] = val;
			}
			if (data) {
#pragma unroll
				for (int i = 0; i < 8; i++) {
					float v[8];
					kq_unpack8(x, q[i], v);
					kq_grp_st8(out_col, (long long)(r0 + 4 * i) * cols, c, cols, vec, kq_cvt8(v, f, fmt));
				}
			}
		}
		if (amax != 0) {
			tm = kq_warp_max(tm);
			if (lane == 0 && data && tm > 0.0f) atomicMax(&amax[g], __float_as_uint(tm));
		}
	}
}

#define KQ_GROUPED_KERNELS(SUF, T)                                                                      \
	extern "C" __global__ void __launch_bounds__(256, 4) kq_grp_amax_##SUF(const T *x, int rows, int cols, \
			const int *offsets, int ngroups, const int *flag, u32 *amax, int vec) {                  \
		kq_grp_amax_impl<T>(x, rows, cols, offsets, ngroups, flag, amax, vec);                          \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 4) kq_grp_cast_##SUF(const T *x, int rows, int cols, \
			const int *offsets, int ngroups, const int *flag, const u32 *amax, u8 *out, float *scale,   \
			float *scale_inv, int fmt, float fp8max, float eps, int pow2, int vec) {                    \
		kq_grp_cast_impl<T>(x, rows, cols, offsets, ngroups, flag, amax, out, scale, scale_inv, fmt,     \
			fp8max, eps, pow2, vec);                                                                \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 3) kq_grp_cast_trw_##SUF(const T *x, int rows,    \
			int cols, const int *offsets, int ngroups, const int *flag, const u32 *amax, u8 *out_row,   \
			u8 *out_col, float *scale, float *scale_inv, int fmt, float fp8max, float eps, int pow2) {  \
		kq_grp_cast_trw_impl<T>(x, rows, cols, offsets, ngroups, flag, amax, out_row, out_col, scale,   \
			scale_inv, fmt, fp8max, eps, pow2);                                                     \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256) kq_grp_cast_tr_##SUF(const T *x, int rows, int cols, \
			const int *offsets, int ngroups, const int *flag, const u32 *amax, u8 *out_row, u8 *out_col, \
			float *scale, float *scale_inv, int fmt, float fp8max, float eps, int pow2) {               \
		kq_grp_cast_tr_impl<T>(x, rows, cols, offsets, ngroups, flag, amax, out_row, out_col, scale,    \
			scale_inv, fmt, fp8max, eps, pow2);                                                     \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 2) kq_grp_mx_##SUF(const T *x, int rows, int cols,  \
			const int *offsets, const int *tiles, int ngroups, const int *flag, u8 *out_row, u8 *sc_row, \
			u8 *swz_row, int scols_row, u8 *out_col, u8 *sc_col, u8 *swz_col, int scols_col, int fmt,   \
			int ocp, u32 *amax, int vec, int ops) {                                                     \
		kq_grp_mx_impl<T>(x, rows, cols, offsets, tiles, ngroups, flag, out_row, sc_row, swz_row,       \
			scols_row, out_col, sc_col, swz_col, scols_col, fmt, ocp, amax, vec, ops);              \
	}

KQ_GROUPED_KERNELS(f32, float)
KQ_GROUPED_KERNELS(bf16, kq_bf16)
KQ_GROUPED_KERNELS(f16, kq_f16)

// Grouped MXFP8 for 16-bit inputs in the register tiles of kq_mxfp8_both
// (the input pairs held as raw bits, paired-max amaxes, the column
// reduce-scatter; see there), for cols % 8 == 0 with a 16-byte aligned
// input, 8-byte aligned data outputs and 2-byte aligned scale matrices.
// The tiles are those of kq_grp_mx: the 32x64 tiles of the padded row
// space, each mapped to its group's data band or padding by one search.
// No prefetch: 3 blocks per SM (the both3 layout, as fast as the
// prefetching one on an H200). Same bytes as kq_grp_mx.
template <typename T, int fmt, int ocp, int ops>
KQ_DEV void kq_grp_mx2_impl(const T *x, int rows, int cols, const int *offsets, const int *tiles, int ngroups,
		u8 *out_row, u8 *sc_row, u8 *swz_row, int scols_row, u8 *out_col, u8 *sc_col, u8 *swz_col, int scols_col, u32 *amax) {
	const u32 lane = threadIdx.x & 31u;
	const int cg = (int)(lane & 7u), rq = (int)(lane >> 3);
	const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
	const int nct = scols_col / 64;
	const long long ntiles = 4LL * tiles[ngroups] * nct;
	const int nblk = (cols + 31) / 32;
	const long long stride4 = 4LL * cols;
	for (long long t = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; t < ntiles; t += nwarps) {
		const int vb = (int)(t / nct), ct = (int)(t % nct);
		const int g = kq_group(tiles, ngroups, vb >> 2);
		const int tg = tiles[g];
		const int goff = offsets[g];
		const int lb = vb - 4 * tg;
		const bool data = lb < (offsets[g + 1] - goff) / 32;
		const int c0 = ct * 64;
		const int c = c0 + cg * 8;
		const int r0 = goff + 32 * lb + rq; // the lane's first data row
		const bool cin = c < cols;
		const long long o0 = (long long)r0 * cols + c;
		u32 v[8][4];
		{
			uint4 cur[8];
			kq_mx_load_tile(x, rows, cols, goff / 32 + lb, ct, rq, cg, data, cur);
			kq_mx_words(cur, v);
		}
		float tm = 0.0f;
		const int blk = c0 / 32 + (cg >> 2);
		kq_mx_tile<T, fmt, ocp, ops>(v, cg, rq, c, cols, cin, blk < nblk, data, out_row, out_col, o0, stride4, tm,
			[&](int) { return data; },
			[&](int i, u8 sv) {
				const long long sr = 128LL * tg + 32 * lb + rq + 4 * i;
				sc_row[sr * scols_row + blk] = sv;
				if (swz_row != 0) swz_row[kq_swz(sr, blk, scols_row)] = sv;
			},
			[&](int cc, u32 w) {
				*reinterpret_cast<u16 *>(sc_col + (4LL * tg + lb) * scols_col + cc) = (u16)w;
				if (swz_col != 0) {
					const int ncg = 4 * (tiles[g + 1] - tg);
					u8 *base = swz_col + 4LL * tg * scols_col;
					base[kq_swz(cc, lb, ncg)] = (u8)w;
					base[kq_swz(cc + 1, lb, ncg)] = (u8)(w >> 8);
				}
			});
		if (amax != 0) {
			tm = kq_warp_max(tm);
			if (lane == 0u && data && tm > 0.0f) atomicMax(&amax[g], __float_as_uint(tm));
		}
	}
}

// kq_grp_mx2_pick picks the instantiation of kq_grp_mx2_impl.
template <typename T, int ops>
KQ_DEV void kq_grp_mx2_pick(const T *x, int rows, int cols, const int *offsets, const int *tiles, int ngroups, u8 *out_row,
		u8 *sc_row, u8 *swz_row, int scols_row, u8 *out_col, u8 *sc_col, u8 *swz_col, int scols_col, int fmt, int ocp, u32 *amax) {
	if (fmt == KQ_E4M3 && !ocp)
		kq_grp_mx2_impl<T, KQ_E4M3, 0, ops>(x, rows, cols, offsets, tiles, ngroups, out_row, sc_row, swz_row, scols_row, out_col, sc_col, swz_col, scols_col, amax);
	else if (fmt == KQ_E4M3)
		kq_grp_mx2_impl<T, KQ_E4M3, 1, ops>(x, rows, cols, offsets, tiles, ngroups, out_row, sc_row, swz_row, scols_row, out_col, sc_col, swz_col, scols_col, amax);
	else if (!ocp)
		kq_grp_mx2_impl<T, KQ_E5M2, 0, ops>(x, rows, cols, offsets, tiles, ngroups, out_row, sc_row, swz_row, scols_row, out_col, sc_col, swz_col, scols_col, amax);
	else
		kq_grp_mx2_impl<T, KQ_E5M2, 1, ops>(x, rows, cols, offsets, tiles, ngroups, out_row, sc_row, swz_row, scols_row, out_col, sc_col, swz_col, scols_col, amax);
}

#define KQ_GROUPED_HALF_KERNELS(SUF, T)                                                                 \
	extern "C" __global__ void __launch_bounds__(256, 3) kq_grp_mx2_##SUF(const T *x, int rows, int cols, \
			const int *offsets, const int *tiles, int ngroups, const int *flag, u8 *out_row, u8 *sc_row, \
			u8 *swz_row, int scols_row, u8 *out_col, u8 *sc_col, u8 *swz_col, int scols_col, int fmt,   \
			int ocp, u32 *amax, int ops) {                                                              \
		if (*flag != 0) return;                                                                     \
		if (ops == (KQ_MX_ROW | KQ_MX_COL))                                                         \
			kq_grp_mx2_pick<T, KQ_MX_ROW | KQ_MX_COL>(x, rows, cols, offsets, tiles, ngroups, out_row, \
				sc_row, swz_row, scols_row, out_col, sc_col, swz_col, scols_col, fmt, ocp, amax);  \
		else if (ops == KQ_MX_ROW)                                                                  \
			kq_grp_mx2_pick<T, KQ_MX_ROW>(x, rows, cols, offsets, tiles, ngroups, out_row, sc_row,    \
				swz_row, scols_row, out_col, sc_col, swz_col, scols_col, fmt, ocp, amax);          \
		else                                                                                        \
			kq_grp_mx2_pick<T, KQ_MX_COL>(x, rows, cols, offsets, tiles, ngroups, out_row, sc_row,    \
				swz_row, scols_row, out_col, sc_col, swz_col, scols_col, fmt, ocp, amax);          \
	}

KQ_GROUPED_HALF_KERNELS(bf16, kq_bf16)
KQ_GROUPED_HALF_KERNELS(f16, kq_f16)
