// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// quantize_fp8_trw.cuh: part of quantize.cu (included once, after
// quantize_fp8.cuh): the per-tensor FP8 cast + transpose (the 32x32 kernel
// and the 128x128-tile kernel, whose tile is also the grouped kernels').
// Not a header of its own: it uses what quantize.cu and quantize_fp8.cuh
// define before it.

// Fused cast + transpose over 32x32 tiles with a (32, 8) block: out_row is
// [rows, cols] (may be 0), out_col is the transpose [cols, rows].
template <typename T>
KQ_DEV void kq_cast_tr_impl(const T *x, int rows, int cols, u32 *st, u8 *out_row, u8 *out_col,
		float *scale_inv, float *history, int fmt, kq_upd u) {
	__shared__ u32 tile[32][33];
	float scale = reinterpret_cast<const float *>(st)[KQ_ST_SCALE];
	kq_hist_prefetch(history, u);
	int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
	float m = 0.0f;
	for (int j = 0; j < 32; j += 8) {
		int r = r0 + (int)threadIdx.y + j, c = c0 + (int)threadIdx.x;
		if (r < rows && c < cols) {
			long long i = (long long)r * cols + c;
			float v = kq_f32(x[i]);
			m = fmaxf(m, fabsf(v));
			u32 q = kq_cvt1(__fmul_rn(v, scale), fmt);
			if (out_row != 0) out_row[i] = (u8)q;
			tile[threadIdx.y + j][threadIdx.x] = q;
		}
	}
	__syncthreads();
	for (int j = 0; j < 32; j += 8) {
		int c = c0 + (int)threadIdx.y + j, r = r0 + (int)threadIdx.x;
		if (r < rows && c < cols) out_col[(long long)c * rows + r] = (u8)tile[threadIdx.x][threadIdx.y + j];
	}
	kq_cast_finish(m, scale, st, scale_inv, history, u);
}

// Fused cast + transpose over 128x128 tiles with 256 threads, for rows % 16
// == 0 and cols % 8 == 0 with a 16-byte aligned input and out_col and an
// 8-byte aligned out_row. Thread (rg, cg) = (tid / 16, tid % 16) loads the
// 8x8 patch of tile rows 8rg..8rg+7 and columns 8cg..8cg+7: eight 16-byte
// loads issued together (128 bytes in flight per thread; a warp's load
// covers two whole 256-byte row segments). It writes each row's 8 codes to
// out_row (8-byte stores) and transposes each 4x8 half of its codes in
// registers with byte permutes into 8 words, one per column holding 4 rows.
// Through shared memory as words, each thread then writes four runs of 16
// consecutive codes of a transposed row with 16-byte stores (a warp covers
// 4 whole 128-byte column segments). Word (w, c) of the shared tile holds
// tile column c, rows 4w..4w+3; the odd pitch of 129 words makes the column
// reads conflict free (the word stores meet four to a bank, a small part
// of the shared-memory pipe at this tile rate). The first version (64x64
// byte tiles, two loads in flight per thread) stalled on its loads and ran
// at 74-77% of copy bandwidth on an H200.
//
// Tiles are taken from the last to the first: in current scaling the amax
// pass has just read the tensor front to back, so the first tiles read here
// still sit in L2. For delayed scaling the launcher gives a grid of the
// resident blocks, which take the tiles in kq_sched_claim's order: the
// fused amax commits once per block (one same-address atomic per tile cost
// more than the cast at 16384^2), and for 16-bit inputs a block's next
// tile is in flight while it stores the current one (kq_cast_trw_body). Current scaling, with no amax
// to commit, gets one block per tile, which measured faster (launch.go). It
// computes the same bytes as the 32x32 kernel above. The tile itself
// (kq_trw_tile) is also the grouped kernels' cast + transpose.
#define KQ_TRW 128
#define KQ_TRW_PITCH 129

// kq_trw_half casts half hr of a thread's 8x8 patch (rows r + 4hr ..
// r + 4hr + 3, columns c..c + 7; unpack(j, v) widens row 4hr + j into v):
// with AMAX m rises to the max |x|, each row's 8 codes go to out_row (when
// in and out_row is not NULL), and the 4x8 codes, byte-permuted into 8
// column words (byte j: row j's code), to the shared tile's word row
// 2rg + hr, columns 8cg..8cg + 7. The one cast of kq_trw_tile and
// kq_trw_conv16 (the software-pipelined 16-bit tile). FMT is the format
// fixed at compile time (kq_cvt8f, the factors all fs[0]), or -1 for the
// run-time fmt (the grouped kernels' kq_trw_tile): the same bytes.
template <bool AMAX, int FMT = -1, typename U>
KQ_DEV void kq_trw_half(U unpack, bool in, int hr, int r, int c, int rg, int cg, int cols, const float (&fs)[8],
		u8 *out_row, int fmt, u32 *tile, float &m) {
	u32 w[4][2];
#pragma unroll
	for (int j = 0; j < 4; j++) {
		float vj[8];
		unpack(j, vj);
		if (AMAX) {
#pragma unroll
			for (int e = 0; e < 8; e++) m = fmaxf(m, fabsf(vj[e]));
		}
		uint2 qq;
		if constexpr (FMT < 0) qq = kq_cvt8(vj, fs, fmt);
		else qq = kq_cvt8f<FMT>(vj, fs[0]);
		w[j][0] = qq.x;
		w[j][1] = qq.y;
		if (in && out_row != 0) *reinterpret_cast<uint2 *>(out_row + (long long)(r + 4 * hr + j) * cols + c) = qq;
	}
	u32 *t = tile + (2 * rg + hr) * KQ_TRW_PITCH + 8 * cg;
#pragma unroll
	for (int h = 0; h < 2; h++) {
		u32 a0 = __byte_perm(w[0][h], w[1][h], 0x5140), b0 = __byte_perm(w[2][h], w[3][h], 0x5140);
		u32 a1 = __byte_perm(w[0][h], w[1][h], 0x7362), b1 = __byte_perm(w[2][h], w[3][h], 0x7362);
		t[4 * h + 0] = __byte_perm(a0, b0, 0x5410);
		t[4 * h + 1] = __byte_perm(a0, b0, 0x7632);
		t[4 * h + 2] = __byte_perm(a1, b1, 0x5410);
		t[4 * h + 3] = __byte_perm(a1, b1, 0x7632);
	}
}

// kq_trw_runs writes thread tid's four 16-row column runs of the shared
// tile (rows rr..rr + 15: word rows 4q..4q + 3, q = tid % 8; columns
// c0 + (tid + 256h) / 8) with 16-byte stores, column cc's run at
// ob + cc * stride (ob: row rr of the transposed matrix). The one store
// phase of kq_trw_tile and kq_trw_store16.
KQ_DEV void kq_trw_runs(const u32 *tile, u32 tid, int q, int c0, int cols, int rr, int rows, u8 *ob, int stride) {
#pragma unroll
	for (int h = 0; h < 4; h++) {
		const int tc = ((int)tid + 256 * h) >> 3;
		const int cc = c0 + tc;
		if (cc < cols && rr < rows) {
			const u32 *sp = tile + 4 * q * KQ_TRW_PITCH + tc;
			*reinterpret_cast<uint4 *>(ob + (long long)cc * stride) =
				make_uint4(sp[0], sp[KQ_TRW_PITCH], sp[2 * KQ_TRW_PITCH], sp[3 * KQ_TRW_PITCH]);
		}
	}
}

// kq_trw_tile: the 128x128 tile at (r0, c0) of cast + transpose, for
// rows % 8 == 0 and cols % 8 == 0 with a 16-byte aligned input and out_col
// and an 8-byte aligned out_row (the patches are wholly in or out):
// thread (rg, cg) = (tid/16, tid%16) loads its 8x8 patch at rows r0 + 8rg,
// columns c0 + 8cg as raw bits (32 registers for 16-bit inputs, all 8
// loads in flight at once; float32 ones 4 rows at a time: held as float32
// values, the 8 rows spilled), casts it with its scale s, stores the
// rowwise codes (when out_row is not NULL), byte-permutes them into the
// shared tile (column word: byte j is row j's code of that column), and
// the 16-row column runs go to the transposed [cols, rows] matrix, or with
// offsets (grouped) to the transposed [cols, n_g] matrix of their group at
// cols * offsets[g] (16-byte aligned: offsets and sizes are multiples of
// 16; a tile may span groups, but its 8-row patches and 16-row runs never
// do). With AMAX m rises to the max |x| of the patch. FMT as in
// kq_trw_half.
template <typename T, bool AMAX, int FMT = -1>
KQ_DEV void kq_trw_tile(const T *x, int rows, int cols, const int *offsets, int ngroups, int r0, int c0, float s,
		u8 *out_row, u8 *out_col, int fmt, u32 *tile, float &m) {
	const u32 tid = threadIdx.x;
	const int cg = (int)(tid & 15u), rg = (int)(tid >> 4);
	const int q = (int)(tid & 7u); // the 16-row run of the store phase
	const int c = c0 + 8 * cg, r = r0 + 8 * rg;
	const bool in = r < rows && c < cols;
	const float fs[8] = {s, s, s, s, s, s, s, s};
	uint4 raw[8][2];
#pragma unroll
	for (int hr = 0; hr < 2; hr++) {
		if (hr == 0 || sizeof(T) == 4) {
#pragma unroll
			for (int j = 0; j < 8; j++) {
				if (sizeof(T) == 4 && j / 4 != hr) continue;
				raw[j][0] = raw[j][1] = make_uint4(0u, 0u, 0u, 0u);
				if (in) kq_ldraw8(x, ((long long)(r + j) * cols + c) / 8, raw[j]);
			}
		}
		kq_trw_half<AMAX, FMT>([&](int j, float (&vj)[8]) { kq_unpack8(x, raw[4 * hr + j], vj); }, in, hr, r, c, rg, cg,
			cols, fs, out_row, fmt, tile, m);
	}
	__syncthreads();
	const int rr = r0 + 16 * q;
	int goff = 0, gn = rows;
	if (offsets != 0 && rr < rows) {
		const int g = kq_group(offsets, ngroups, rr);
		goff = offsets[g];
		gn = offsets[g + 1] - goff;
	}
	kq_trw_runs(tile, tid, q, c0, cols, rr, rows, out_col + (long long)cols * goff + (rr - goff), gn);
	// The next tile overwrites the shared tile.
	__syncthreads();
}

// Blocks per SM of kq_cast_trw (its __launch_bounds__; CastTranspose sizes
// the delayed-scaling grid to it).
#define KQ_TRW_BLOCKS 4

// The 16-bit tile of kq_cast_trw in three phases, for a software pipeline:
// kq_trw_load16 issues the patch's eight 16-byte loads (raw bits),
// kq_trw_conv16 casts them, stores the rowwise codes and writes the shared
// tile, kq_trw_store16 writes the 16-row column runs from it; together the
// same bytes as kq_trw_tile (offsets NULL). kq_cast_trw_impl issues the
// next tile's loads right after kq_trw_conv16, so that they are in flight
// through the barrier and the transposed stores (kq_trw_tile has no load in
// flight there), and alternates two shared tiles, so that one barrier per
// tile suffices: a thread writes tile b again only after the next tile's
// barrier, which every thread reaches after its stores from tile b.
template <typename T>
KQ_DEV void kq_trw_load16(const T *x, int rows, int cols, int r0, int c0, uint4 (&raw)[8]) {
	const u32 tid = threadIdx.x;
	const int c = c0 + 8 * (int)(tid & 15u), r = r0 + 8 * (int)(tid >> 4);
	const bool in = r < rows && c < cols;
	const uint4 *xv = reinterpret_cast<const uint4 *>(x);
#pragma unroll
	for (int j = 0; j < 8; j++) {
		raw[j] = make_uint4(0u, 0u, 0u, 0u);
		if (in) raw[j] = xv[((long long)(r + j) * cols + c) / 8];
	}
}
template <typename T, bool AMAX, int FMT>
KQ_DEV void kq_trw_conv16(const uint4 (&raw)[8], int rows, int cols, int r0, int c0, float s, u8 *out_row, int fmt,
		u32 *tile, float &m) {
	const u32 tid = threadIdx.x;
	const int cg = (int)(tid & 15u), rg = (int)(tid >> 4);
	const int c = c0 + 8 * cg, r = r0 + 8 * rg;
	const bool in = r < rows && c < cols;
	const float fs[8] = {s, s, s, s, s, s, s, s};
#pragma unroll
	for (int hr = 0; hr < 2; hr++) {
		kq_trw_half<AMAX, FMT>([&](int j, float (&vj)[8]) { kq_widen8<T>(raw[4 * hr + j], vj); }, in, hr, r, c, rg, cg,
			cols, fs, out_row, fmt, tile, m);
	}
}
KQ_DEV void kq_trw_store16(int rows, int cols, int r0, int c0, u8 *out_col, const u32 *tile) {
	const u32 tid = threadIdx.x;
	const int q = (int)(tid & 7u);
	const int rr = r0 + 16 * q;
	kq_trw_runs(tile, tid, q, c0, cols, rr, rows, out_col + rr, rows);
}

template <typename T, bool AMAX, int FMT>
KQ_DEV void kq_cast_trw_body(const T *x, int rows, int cols, u32 *st, u8 *out_row, u8 *out_col,
		float *scale_inv, float *history, int fmt, kq_upd u, u32 (*tile)[(KQ_TRW / 4) * KQ_TRW_PITCH]) {
	const float scale = reinterpret_cast<const float *>(st)[KQ_ST_SCALE];
	kq_hist_prefetch(history, u);
	const int ntx = (cols + KQ_TRW - 1) / KQ_TRW;
	const long long ntiles = (long long)ntx * ((rows + KQ_TRW - 1) / KQ_TRW);
	float m = 0.0f;
	if constexpr (sizeof(T) == 2) {
		// The block's tiles of rounds j and j + 1 (k, kn), in
		// kq_sched_claim's order when the amax is fused (the last block's
		// commit resets the counter; without one the grid is a block a
		// tile), the round j + 2 tile claimed before the round's barrier.
		// ntiles < 2^31: 2^45 elements.
		kq_tile_order<2> order(AMAX ? st : 0, (int)blockIdx.x, (int)gridDim.x);
		uint4 raw[8];
		if (order.tile(0) < ntiles) {
			const long long tl = ntiles - 1 - order.tile(0);
			kq_trw_load16(x, rows, cols, (int)(tl / ntx) * KQ_TRW, (int)(tl % ntx) * KQ_TRW, raw);
		}
		for (int b = 0; order.tile(0) < ntiles; b ^= 1) {
			order.claim();
			const int k = order.tile(0), kn = order.tile(1);
			const long long tl = ntiles - 1 - k;
			const int r0 = (int)(tl / ntx) * KQ_TRW, c0 = (int)(tl % ntx) * KQ_TRW;
			kq_trw_conv16<T, AMAX, FMT>(raw, rows, cols, r0, c0, scale, out_row, fmt, tile[b], m);
			if (kn < ntiles) {
				const long long tn = ntiles - 1 - kn;
				kq_trw_load16(x, rows, cols, (int)(tn / ntx) * KQ_TRW, (int)(tn % ntx) * KQ_TRW, raw);
			}
			__syncthreads();
			kq_trw_store16(rows, cols, r0, c0, out_col, tile[b]);
			order.advance();
		}
	} else {
		for (long long k = blockIdx.x; k < ntiles; k += gridDim.x) {
			const long long tl = ntiles - 1 - k;
			kq_trw_tile<T, AMAX, FMT>(x, rows, cols, 0, 1, (int)(tl / ntx) * KQ_TRW, (int)(tl % ntx) * KQ_TRW, scale, out_row, out_col, fmt, tile[0], m);
		}
	}
	kq_cast_finish(m, scale, st, scale_inv, history, u);
}

// kq_cast_trw_impl: the amax is reduced only with a history (delayed
// scaling), and the format picked once, as in kq_cast_impl.
template <typename T>
KQ_DEV void kq_cast_trw_impl(const T *x, int rows, int cols, u32 *st, u8 *out_row, u8 *out_col,
		float *scale_inv, float *history, int fmt, kq_upd u) {
	__shared__ u32 tile[2][(KQ_TRW / 4) * KQ_TRW_PITCH];
	if (history != 0) {
		if (fmt == KQ_E4M3)
			kq_cast_trw_body<T, true, KQ_E4M3>(x, rows, cols, st, out_row, out_col, scale_inv, history, fmt, u, tile);
		else
			kq_cast_trw_body<T, true, KQ_E5M2>(x, rows, cols, st, out_row, out_col, scale_inv, history, fmt, u, tile);
	} else {
		if (fmt == KQ_E4M3)
			kq_cast_trw_body<T, false, KQ_E4M3>(x, rows, cols, st, out_row, out_col, scale_inv, history, fmt, u, tile);
		else
			kq_cast_trw_body<T, false, KQ_E5M2>(x, rows, cols, st, out_row, out_col, scale_inv, history, fmt, u, tile);
	}
}
