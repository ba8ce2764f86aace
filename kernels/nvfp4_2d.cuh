// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// nvfp4_2d.cuh: part of nvfp4.cu (included once, after nvfp4_tile.cuh):
// the 2D (16x16 tile) fast path for 16-bit inputs, straight from
// registers. Not a header of its own: it uses what nvfp4.cu,
// nvfp4_fast.cuh and nvfp4_tile.cuh define before it; the entry point is
// in nvfp4.cu.

// kq_nvf4_2d_reg: a block of 256 threads quantizes rows m0..m0+63 and
// columns k0..k0+255 (k0 % 256 == 0; rows % 64 == 0, cols % 64 == 0,
// input and codes 16-byte aligned, scale matrices 4-byte aligned). Warp
// w takes the 32 columns from k0 + 32w (none when they lie beyond cols:
// cols % 32 == 0, so a warp's columns are all inside or all outside),
// lane cx + 4 ry (cx < 4, ry < 8) the 8 x 8 elements at rows
// m0 + 8ry + i (i < 8) and columns k0 + 32w + 8cx + c (c < 8): eight
// independent 16-byte loads issued before their first use (no shared
// memory staging), so that 32 KiB per block are in flight at once.
//
// A 16x16 tile is the 8x8 pieces of the four lanes {cx, cx ^ 1} x
// {ry, ry ^ 1}: its amax is two shuffles. Each pair of rows of a piece is
// one 16-value block of kq_block16p's fast path (kq_key16, kq_q16p; a pair
// holding a NaN takes the reference path: kq_block_amax for the amax and
// kq_quant16, element by element, for the codes), and every code is the
// same function of its element and its tile's scale as in the general
// path (kq_nvf4_2dg_) and the float32 staged kernel (kq_nvf4_2d_tile):
// the rowwise codes of a piece are eight words (row i: nibble c = column
// c), stored as they are; kq_tr8 turns them into the columnwise codes
// (column c: nibble i = row i), stored as eight words, the four lanes ry,
// ry + 2, ... of a column filling 32 contiguous bytes. The tile scale codes meet in shared memory (one barrier, which
// also publishes the factor table) and leave as 4-byte words: a row's
// four adjacent tile columns, a column's four tile rows (as the float32
// staged kernel writes them), in both layouts.
// The parts of kq_nvf4_2d_reg, shared with its persistent form
// kq_nvf4_2dp (nvfp4_2dp.cuh): the same operations on the same lane
// layout, only the loop and the rowwise codes' path to memory differ.

// kq_nvf4_2d_load issues the lane's eight 16-byte loads (rows mr + i,
// columns kc..kc + 7). They are unconditional (a warp beyond cols reads
// columns 0..31 and discards them): no branch ahead of them, so that
// nothing (the amax's tensor scale) is scheduled before their issue.
template <typename T>
KQ_DEV void kq_nvf4_2d_load(const T *x, int cols, int mr, int kc, int cx, bool live, uint4 L[8]) {
	const uint4 *p = reinterpret_cast<const uint4 *>(x + (long long)mr * cols + (live ? kc : 8 * cx));
	const int vs = cols >> 3; // 16-byte vectors per row
#pragma unroll
	for (int i = 0; i < 8; i++) L[i] = p[i * vs];
}

// kq_nvf4_2d_code is the scale code of the lane's 16x16 tile (the whole
// warp calls it: two shuffles), with the keys of the piece's four
// 16-value blocks (rows 2j and 2j + 1 are the block j; kq_rkey16: for
// BF16 kq_bkey16, the same bits as kq_key16 for a NaN-free block, above
// 0x7F800000 for one holding a NaN, which is all that is asked of it
// here) and the tile's amax bits in *am.
template <typename T>
KQ_DEV u32 kq_nvf4_2d_code(const T *x, const uint4 L[8], u32 key[4], float s6, u32 *am) {
	u32 a = 0;
#pragma unroll
	for (int j = 0; j < 4; j++) {
		const u32 P[8] = {L[2 * j].x, L[2 * j].y, L[2 * j].z, L[2 * j].w, L[2 * j + 1].x, L[2 * j + 1].y, L[2 * j + 1].z, L[2 * j + 1].w};
		key[j] = kq_rkey16(T(), P);
		u32 aj = key[j];
		if (aj > 0x7F800000u) {
			float v[16];
			kq_unpack16(x, &L[2 * j], v);
			aj = __float_as_uint(kq_block_amax(v, 16));
		}
		a = max(a, aj);
	}
	a = max(a, __shfl_xor_sync(0xFFFFFFFFu, a, 1));
	a = max(a, __shfl_xor_sync(0xFFFFFFFFu, a, 4));
	*am = a;
	return kq_e4m3(__fmul_rn(__uint_as_float(a), s6));
}

// kq_nvf4_2d_q gives the rowwise codes of the piece with the tile's
// factor f: word i is row i (nibble c = column c). NaN-free blocks take
// kq_q16w (kq_q16p's codes, by kq_rne_code2<CL>), a block holding a NaN
// the reference path.
template <typename T, bool CL>
KQ_DEV void kq_nvf4_2d_q(const uint4 L[8], const u32 key[4], float f, u32 r[8]) {
#pragma unroll
	for (int j = 0; j < 4; j++) {
		const u32 P[8] = {L[2 * j].x, L[2 * j].y, L[2 * j].z, L[2 * j].w, L[2 * j + 1].x, L[2 * j + 1].y, L[2 * j + 1].z, L[2 * j + 1].w};
		u64 p;
		if (key[j] > 0x7F800000u) {
			float v[16];
			kq_widen<T, 8>(P, v);
			p = kq_quant16(v, 16, f, 0, 0, 0u, 0u, 0);
		} else {
			p = kq_q16w<T, false, CL>(P, f, make_uint4(0u, 0u, 0u, 0u));
		}
		r[2 * j] = (u32)p;
		r[2 * j + 1] = (u32)(p >> 32);
	}
}

// kq_nvf4_2d_quant is kq_nvf4_2d_q with the tile's amax bits a: without
// the clamp to 6 (kq_rne_code2<false>) when fl(a f) < 7. Every NaN-free
// element x of the tile has |x| <= a (a is the largest of the blocks'
// keys and the NaN blocks' amaxes), so by monotonic rounding every
// |y| = fl(|x| f) <= fl(a f) < 7, and no y is a NaN (fl(a f) < 7 has f
// finite, and 0 * f = 0); where the test fails (an infinite a, or a
// coarse or zero scale code) the clamp stays. As the rowwise path's
// per-block test, but once a tile.
template <typename T>
KQ_DEV void kq_nvf4_2d_quant(const uint4 L[8], const u32 key[4], u32 a, float f, u32 r[8]) {
	if (__fmul_rn(__uint_as_float(a), f) < 7.0f) kq_nvf4_2d_q<T, false>(L, key, f, r);
	else kq_nvf4_2d_q<T, true>(L, key, f, r);
}

// kq_nvf4_2d_colst transposes the rowwise codes r (kq_tr8: column c,
// nibble i = row i) and stores them as eight words, the four lanes ry,
// ry + 2, ... of a column filling 32 contiguous bytes.
KQ_DEV void kq_nvf4_2d_colst(u32 r[8], u8 *out_col, int rows, int kc, int mr) {
	kq_tr8(r);
	u8 *o = out_col + (long long)kc * (rows >> 1) + (mr >> 1);
#pragma unroll
	for (int c = 0; c < 8; c++) *reinterpret_cast<u32 *>(o + (long long)c * (rows >> 1)) = r[c];
}

// kq_nvf4_2d_scst stores the tile scale codes sd (by tile row and tile
// column, published by a barrier) of the piece at rows m0.., columns
// k0..: thread t writes row t / 4's tile columns 4(t % 4) .. + 3 (64
// columns, all inside or all outside) and column t's four tile rows.
KQ_DEV void kq_nvf4_2d_scst(const u8 (*sd)[16], int cols, u8 *scales_row, int scols_row, u8 *swz_row, u8 *out_col,
		u8 *scales_col, int scols_col, u8 *swz_col, int k0, int m0) {
	const int t = threadIdx.x;
	const int sr = t >> 2, sq = t & 3;
	if (k0 + 64 * sq < cols) {
		const u32 dw = *reinterpret_cast<const u32 *>(&sd[sr >> 4][4 * sq]);
		const int j = (k0 >> 4) + 4 * sq;
		if (scales_row != 0) *reinterpret_cast<u32 *>(scales_row + (long long)(m0 + sr) * scols_row + j) = dw;
		if (swz_row != 0) *reinterpret_cast<u32 *>(swz_row + kq_swz(m0 + sr, j, scols_row)) = dw;
	}
	if (out_col != 0 && k0 + t < cols) {
		const int k = k0 + t, tc = t >> 4;
		const u32 dw = (u32)sd[0][tc] | ((u32)sd[1][tc] << 8) | ((u32)sd[2][tc] << 16) | ((u32)sd[3][tc] << 24);
		*reinterpret_cast<u32 *>(scales_col + (long long)k * scols_col + (m0 >> 4)) = dw;
		if (swz_col != 0) *reinterpret_cast<u32 *>(swz_col + kq_swz(k, m0 >> 4, scols_col)) = dw;
	}
}

template <typename T>
__device__ void kq_nvf4_2d_reg(const T *x, int rows, int cols, const u32 *amax, u8 *out_row, u8 *scales_row,
		int scols_row, u8 *swz_row, u8 *out_col, u8 *scales_col, int scols_col, u8 *swz_col, int k0, int m0) {
	__shared__ float tab[128];
	__shared__ __align__(4) u8 sd[4][16]; // tile scale codes by tile row and tile column
	const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, cx = lane & 3, ry = lane >> 2;
	const int kc = k0 + 32 * w + 8 * cx, mr = m0 + 8 * ry;
	const bool live = k0 + 32 * w < cols; // (warp-uniform)
	uint4 L[8];
	kq_nvf4_2d_load(x, cols, mr, kc, cx, live, L);
	const kq_tscale ts = kq_tscale_of(amax);
	kq_fill_tab(tab, ts.sinv);
	u32 key[4], d = 0, am = 0;
	if (live) {
		d = kq_nvf4_2d_code(x, L, key, ts.s6, &am);
		if ((lane & 5) == 0) sd[ry >> 1][2 * w + (cx >> 1)] = (u8)d;
	}
	__syncthreads();
	if (live) {
		u32 r[8];
		kq_nvf4_2d_quant<T>(L, key, am, tab[d], r);
		if (out_row != 0) {
			u8 *o = out_row + (long long)mr * (cols >> 1) + (kc >> 1);
#pragma unroll
			for (int i = 0; i < 8; i++) *reinterpret_cast<u32 *>(o + (long long)i * (cols >> 1)) = r[i];
		}
		if (out_col != 0) kq_nvf4_2d_colst(r, out_col, rows, kc, mr);
	}
	kq_nvf4_2d_scst(sd, cols, scales_row, scols_row, swz_row, out_col, scales_col, scols_col, swz_col, k0, m0);
}

// kq_nvf4_2d_one is the 2D fast path of the block's tile at row tile by
// (the grid's y, moved into the group's tensor when grouped) and column
// tile blockIdx.x: for 16-bit inputs kq_nvf4_2d_reg over 64 x 256 (grid
// ceil(cols / 256) by rows / 64), for float32 kq_nvf4_2d_fast over one
// 64 x 128 tile (grid ceil(cols / 128) by rows / 64).
template <typename T>
KQ_DEV void kq_nvf4_2d_one(const T *x, int rows, int cols, const u32 *amax, u8 *out_row, u8 *scales_row, int scols_row,
		u8 *swz_row, u8 *out_col, u8 *scales_col, int scols_col, u8 *swz_col, int by) {
	if constexpr (sizeof(T) == 2) {
		kq_nvf4_2d_reg<T>(x, rows, cols, amax, out_row, scales_row, scols_row, swz_row, out_col, scales_col, scols_col, swz_col,
			blockIdx.x * 256, by * 64);
	} else {
		kq_nvf4_2d_fast(x, rows, cols, amax, out_row, scales_row, scols_row, swz_row, out_col, scales_col, scols_col, swz_col,
			blockIdx.x * 128, by * 64);
	}
}
