// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// nvfp4_2dp.cuh: part of nvfp4.cu (included once, after nvfp4_2d.cuh):
// the persistent form of the 2D fast path of 16-bit inputs (kernel
// kq_nvf4_2dp_, NVFP42DEnv "pipe"), for A/B runs against kq_nvf4_2d_.
//
// kq_nvf4_2d_reg's blocks each take one 64 x 256 piece: they load, then
// compute, and nothing loads while they compute; and each warp's rowwise
// code store writes 16 bytes to each of 8 rows, half of a 32-byte sector
// (the other half is the next warp's), doubling the L2's write
// transactions. Here the rowwise codes go through shared memory, so that
// each thread stores 16 bytes and a warp 4 whole rows of 128 bytes; and a
// block that takes several pieces (row bands of ceil(cols / 256) pieces,
// in the one-shot grid's order, stepping by the grid) issues the next
// piece's loads before the current one's work. The launcher gives one
// block a piece (nvfp42DPipeGrid: resident blocks striding drifted apart
// over the tensor); blocks stride under the tests' grid cap. Per element the
// operations are kq_nvf4_2d_reg's (its parts, nvfp4_2d.cuh), on the same
// lane layout; the columnwise codes (whole sectors already) and the
// scales leave as there.

// kq_nvf4_2dp_stage is the word of the staging buffer (64 rows of 32
// words) holding row R's word c: the 16-byte groups of a row are permuted
// by R / 8 (a lane of group ry writes row 8 ry + i), so that the eight
// rows a warp's 32-bit store covers, and a quarter warp's 16-byte reads
// of one row, fall in distinct banks.
KQ_DEV int kq_nvf4_2dp_stage(int R, int c) { return 32 * R + (c ^ (((R >> 3) & 7) << 2)); }

template <typename T>
__device__ void kq_nvf4_2dp(const T *x, int rows, int cols, const u32 *amax, u8 *out_row, u8 *scales_row, int scols_row,
		u8 *swz_row, u8 *out_col, u8 *scales_col, int scols_col, u8 *swz_col) {
	__shared__ float tab[128];
	__shared__ __align__(4) u8 sd[2][4][16];     // kq_nvf4_2d_reg's sd, by piece parity
	__shared__ __align__(16) u32 stg[2][64 * 32]; // rowwise codes, by piece parity
	const int ntx = (cols + 255) >> 8, nty = rows >> 6;
	// Piece p = by * ntx + bx; a block steps by gridDim.x pieces.
	int bx = blockIdx.x % ntx, by = blockIdx.x / ntx;
	const int sx = gridDim.x % ntx, sy = gridDim.x / ntx;
	if (by >= nty) return; // (block-uniform; the launcher's grid has no such block)
	const int t = threadIdx.x, w = t >> 5, lane = t & 31, cx = lane & 3, ry = lane >> 2;
	uint4 A[8], B[8];
	kq_nvf4_2d_load(x, cols, 64 * by + 8 * ry, 256 * bx + 32 * w + 8 * cx, cx, 256 * bx + 32 * w < cols, A);
	const kq_tscale ts = kq_tscale_of(amax);
	kq_fill_tab(tab, ts.sinv);
	__syncthreads();
	// piece quantizes the piece (bx, by) from L, after issuing the next
	// piece's loads into N, and moves (bx, by) on; false when there is no
	// next piece. The loop calls it with A and B in turn (no register
	// copies: the loads of the piece after next go out before the next
	// piece's data is waited for) and with the parity of sd and stg.
	auto piece = [&](const uint4(&L)[8], uint4(&N)[8], const int par) {
		const int k0 = 256 * bx, m0 = 64 * by;
		const int kc = k0 + 32 * w + 8 * cx, mr = m0 + 8 * ry;
		const bool live = k0 + 32 * w < cols; // (warp-uniform)
		int nx = bx + sx, ny = by + sy;
		if (nx >= ntx) {
			nx -= ntx;
			ny++;
		}
		const bool more = ny < nty; // (block-uniform)
		if (more) kq_nvf4_2d_load(x, cols, 64 * ny + 8 * ry, 256 * nx + 32 * w + 8 * cx, cx, 256 * nx + 32 * w < cols, N);
		if (live) {
			u32 key[4], am;
			const u32 d = kq_nvf4_2d_code(x, L, key, ts.s6, &am);
			if ((lane & 5) == 0) sd[par][ry >> 1][2 * w + (cx >> 1)] = (u8)d;
			u32 r[8];
			kq_nvf4_2d_quant<T>(L, key, am, tab[d], r);
			if (out_row != 0) {
#pragma unroll
				for (int i = 0; i < 8; i++) stg[par][kq_nvf4_2dp_stage(8 * ry + i, 4 * w + cx)] = r[i];
			}
			if (out_col != 0) kq_nvf4_2d_colst(r, out_col, rows, kc, mr);
		}
		// One barrier a piece: the next piece writes the other parity's
		// sd and stg, and the one after this parity's only past the next
		// barrier, when every thread has read them here.
		__syncthreads();
		if (out_row != 0) {
			// Thread t stores row R's 16 bytes q (warp q's columns).
#pragma unroll
			for (int h = 0; h < 2; h++) {
				const int R = (t >> 3) + 32 * h, q = t & 7;
				if (k0 + 32 * q < cols) {
					const uint4 v = *reinterpret_cast<const uint4 *>(&stg[par][kq_nvf4_2dp_stage(R, 4 * q)]);
					*reinterpret_cast<uint4 *>(out_row + (long long)(m0 + R) * (cols >> 1) + (k0 >> 1) + 16 * q) = v;
				}
			}
		}
		kq_nvf4_2d_scst(sd[par], cols, scales_row, scols_row, swz_row, out_col, scales_col, scols_col, swz_col, k0, m0);
		bx = nx;
		by = ny;
		return more;
	};
	while (piece(A, B, 0) && piece(B, A, 1)) {
	}
}
