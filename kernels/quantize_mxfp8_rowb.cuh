// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// quantize_mxfp8_rowb.cuh: part of quantize.cu (included once, after
// quantize_mxfp8_mxm.cuh, whose rowwise helpers it uses): the body of
// kq_mxfp8_rowb, the rowwise-only MXFP8 kernel for 16-bit inputs with cols
// % 8 == 0 and aligned buffers (mxfp8.go). Not a header of its own; the
// entry point is in quantize.cu.
//
// The tile of block.cu's kq_blk_row (block 1x128 rowwise), the resident
// blocks striding over the tiles so that the fused tensor amax
// (kq_mxfp8_finish, a fenced commit) commits once a block. It was
// measured against the other shapes in TestBenchmarkUsage (rowwise
// step, 8192^2 / 16384^2, docs/benchmarks.md): roww, warps striding over
// 4 x 512 units staged in shared memory by cp.async, was 1-3% faster at
// 8192^2 and 1-3.5% slower at 16384^2 on both GPUs, and was removed (it
// had 20 bytes of spill under CUDA 13). One block a tile (an earlier
// rowb, up to 32768 commits) was 10% slower on an H200; chunks of 2-8
// tiles a block, the next tile's loads issued before the current tile's
// work, 3 or 6 blocks per SM, and committing before the last tile's
// stores were level or slower on at least one GPU.
// A tile of 256 threads is 4 rows x 2048 columns (64 scale blocks a row) of the padded
// element space roundup(rows,128) x (32 scols); a thread the 8 columns
// 8 t.. of each of the 4 rows, as four 16-byte loads issued together; the
// 4 lanes 4 k.. of a warp share a 1x32 block of each row. A block's 4
// rows x 4 lanes meet in a reduce-scatter over the lanes ^ 1, ^ 2 (3
// shuffles for the 4 rows' amaxes instead of 8), after which lane j of the
// four holds the amax of one row (kq_mxb_row(j)), so a lane computes one
// exponent and one factor instead of four, and fetches the 4 rows' factors
// back by shuffles. The maxima per block are the macro tile's
// (quantize_mxfp8_mxm.cuh) in the same tree: own pairs, then the partner
// ^ 1's, then the pair ^ 2's, through the same helpers (kq_mxm_row_pmax,
// kq_pmax, kq_mxm_row_fin, kq_e8m0, kq_e8m0_encode_factor, kq_mxm_cvt8):
// the same bytes.
//
// Scales: a row's 4 consecutive blocks are 4 consecutive bytes both in the
// plain matrix (sc + r scols + 4 K) and in the swizzled one (byte 4 g of
// line q of 512-byte block (R, K), for r = 128 R + 32 g + q), so 8 lanes
// of a warp (lanes 16 h + j, j < 4: row kq_mxb_row(j), blocks 4 (2 w + h)
// ..) gather a word's 4 bytes from lanes + 0, 4, 8, 12 and store it in
// each layout. Blocks past the tensor load zeros (amax 0: exponent 0 under
// both roundings), so every padding byte of both layouts is written, as
// zero; codes are stored only for elements in the tensor; words past scols
// (the last column block's) are not stored.

// Rows and columns of a tile (mxfp8.go sizes the grid from these).
#define KQ_MXB_ROWS 4
#define KQ_MXB_COLS 2048

// kq_mxb_row is the row whose block amax lane j (of a block's 4 lanes)
// holds after the reduce-scatter: the first step keeps rows 0, 1 in the
// lanes with bit 0 clear, the second row 0 of those in the lanes with bit
// 1 clear. (It swaps the two bits, so it is its own inverse: row u is in
// lane kq_mxb_row(u).)
KQ_DEV int kq_mxb_row(int j) { return ((j & 1) << 1) | (j >> 1); }

template <typename T, int fmt, int ocp>
KQ_DEV void kq_mxb_impl(const T *x, int rows, int cols, u8 *out, u8 *sc, int srows, int scols, u32 *st, u8 *swz) {
	const T tag = {0};
	const u32 full = 0xFFFFFFFFu;
	const int lane = (int)(threadIdx.x & 31u), j = lane & 3;
	// Tile T = mt * nct + ct (row quad mt, column block ct), the resident
	// blocks striding over them in that order: the tiles' count and the
	// stride are the same for every thread of a block, so the shuffles
	// see every lane.
	const int nct = (scols + KQ_MXB_COLS / 32 - 1) / (KQ_MXB_COLS / 32);
	const int ntiles = (srows / KQ_MXB_ROWS) * nct;
	float tm = 0.0f;
	for (int T = (int)blockIdx.x; T < ntiles; T += (int)gridDim.x) {
		const int mt = T / nct, ct = T - mt * nct;
		const int m0 = mt * KQ_MXB_ROWS;
		// The thread's scale block (column) and first element column.
		const int kb = ct * (KQ_MXB_COLS / 32) + (int)(threadIdx.x >> 2);
		const int k0 = 32 * kb + 8 * j;
		const bool cin = k0 < cols; // cols % 8 == 0: all 8 columns or none
		const long long o0 = (long long)m0 * cols + k0;
		// Row u's 8 elements at p + u (cols / 8), its codes at o + u cols:
		// the addresses computed once, outside the loads' predicates.
		const uint4 *p = reinterpret_cast<const uint4 *>(x + o0);
		u8 *o = out + o0;
		uint4 q[KQ_MXB_ROWS];
#pragma unroll
		for (int u = 0; u < KQ_MXB_ROWS; u++) {
			q[u] = make_uint4(0u, 0u, 0u, 0u);
			if (cin && m0 + u < rows) q[u] = __ldg(p + (long long)u * (cols >> 3));
		}
		u32 m[KQ_MXB_ROWS];
#pragma unroll
		for (int u = 0; u < KQ_MXB_ROWS; u++) {
			const u32 a[4] = {q[u].x & KQ_MX2_ABS, q[u].y & KQ_MX2_ABS, q[u].z & KQ_MX2_ABS, q[u].w & KQ_MX2_ABS};
			m[u] = kq_mxm_row_pmax(tag, a);
		}
		// Reduce-scatter: each step keeps the half of the rows named by
		// the lane's bit and takes the partner's copy of it (own operand
		// first, as kq_mxm_row_exps's kq_pmax(m, shfl(m))).
		const bool b0 = (lane & 1) != 0, b1 = (lane & 2) != 0;
#pragma unroll
		for (int i = 0; i < 2; i++) {
			const u32 send = b0 ? m[i] : m[2 + i];
			m[i] = kq_pmax(tag, b0 ? m[2 + i] : m[i], __shfl_xor_sync(full, send, 1));
		}
		const u32 send = b1 ? m[0] : m[1];
		const u32 mr = kq_pmax(tag, b1 ? m[1] : m[0], __shfl_xor_sync(full, send, 2));
		const float am = kq_mxm_row_fin(tag, mr);
		tm = fmaxf(tm, am);
		const u32 e = kq_e8m0<fmt, ocp>(am);
		const float f = kq_e8m0_encode_factor(e);
#pragma unroll
		for (int u = 0; u < KQ_MXB_ROWS; u++) {
			const float fu = __shfl_sync(full, f, (lane & ~3) | kq_mxb_row(u));
			if (cin && m0 + u < rows) {
				const u32 v[4] = {q[u].x, q[u].y, q[u].z, q[u].w};
				const float fs[4] = {fu, fu, fu, fu};
				*reinterpret_cast<uint2 *>(o + (long long)u * cols) = kq_mxm_cvt8<fmt>(tag, v, fs, fs);
			}
		}
		// The word of 4 exponents: lane 16 h + j (j < 4) gathers blocks kb
		// .. kb + 3 of its row from itself and lanes + 4, + 8, + 12.
		const u32 w = e | __shfl_down_sync(full, e, 4) << 8 | __shfl_down_sync(full, e, 8) << 16 |
			__shfl_down_sync(full, e, 12) << 24;
		if ((lane & 12) == 0 && kb < scols) {
			const int r = m0 + kq_mxb_row(j);
			*reinterpret_cast<u32 *>(sc + (long long)r * scols + kb) = w;
			if (swz != 0)
				*reinterpret_cast<u32 *>(swz + ((long long)(r >> 7) * (scols >> 2) + (kb >> 2)) * 512 +
					16 * (r & 31) + 4 * ((r >> 5) & 3)) = w;
		}
	}
	kq_mxfp8_finish(tm, st);
}

// kq_mxfp8_rowb picks the instantiation of kq_mxb_impl for the format and
// the rounding.
template <typename T>
KQ_DEV void kq_mxfp8_rowb(const T *x, int rows, int cols, u8 *out, u8 *sc, int srows, int scols, int fmt, int ocp, u32 *st,
		u8 *swz) {
#define KQ_MXB_ARGS x, rows, cols, out, sc, srows, scols, st, swz
	if (fmt == KQ_E4M3 && !ocp) kq_mxb_impl<T, KQ_E4M3, 0>(KQ_MXB_ARGS);
	else if (fmt == KQ_E4M3) kq_mxb_impl<T, KQ_E4M3, 1>(KQ_MXB_ARGS);
	else if (!ocp) kq_mxb_impl<T, KQ_E5M2, 0>(KQ_MXB_ARGS);
	else kq_mxb_impl<T, KQ_E5M2, 1>(KQ_MXB_ARGS);
#undef KQ_MXB_ARGS
}
