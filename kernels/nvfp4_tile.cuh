// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// nvfp4_tile.cuh: part of nvfp4.cu (included once, after nvfp4_fast.cuh):
// the tiled fast paths (columnwise and RHT amax; 2D of float32 inputs)
// over 64-row x 128-column tiles, staged in shared memory (the RHT amax of
// 16-bit inputs reads its words directly). Not a header of
// its own: it uses what nvfp4.cu and nvfp4_fast.cuh define before it; the
// entry points are in nvfp4.cu.

// Tiles of 64 rows x 128 columns staged in shared memory with 16-byte
// loads (columns at or beyond cols read as zero; cols % 64 == 0, so a
// vector never straddles the edge). Rows are padded by 16 bytes so that
// 16-byte reads of one column range from consecutive rows hit different
// banks. Row stride KQ_TILE_ROW(T) words.
#define KQ_TILE_ROW(T) (32 * (int)sizeof(T) + 4)
#define KQ_TILE_WORDS(T) (64 * KQ_TILE_ROW(T))
template <typename T>
KQ_DEV void kq_load_tile(const T *x, int cols, int m0, int k0, u32 *tile) {
	constexpr int VPR = 8 * (int)sizeof(T); // 16-byte vectors per tile row
	constexpr int EV = 16 / (int)sizeof(T);
	constexpr int NV = 64 * VPR / 256;
	uint4 r[NV];
#pragma unroll
	for (int i = 0; i < NV; i++) {
		const int idx = threadIdx.x + 256 * i, row = idx / VPR, k = k0 + (idx % VPR) * EV;
		r[i] = k < cols ? *reinterpret_cast<const uint4 *>(x + (long long)(m0 + row) * cols + k) : make_uint4(0u, 0u, 0u, 0u);
	}
#pragma unroll
	for (int i = 0; i < NV; i++) {
		const int idx = threadIdx.x + 256 * i;
		reinterpret_cast<uint4 *>(tile)[(idx / VPR) * (VPR + 1) + idx % VPR] = r[i];
	}
}

// cp.async of 16 bytes from g to shared memory at s, or 16 zero bytes
// when !in (g is then not read: src-size 0).
KQ_DEV void kq_cp16(void *s, const void *g, bool in) {
	const u32 sa = (u32)__cvta_generic_to_shared(s);
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(sa), "l"(g), "r"(in ? 16 : 0) : "memory");
}
KQ_DEV void kq_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
KQ_DEV void kq_cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// kq_tile_async is kq_load_tile with cp.async (the same bytes in the same
// places, zeros beyond cols): the caller commits, waits and synchronises.
template <typename T>
KQ_DEV void kq_tile_async(const T *x, int cols, int m0, int k0, u32 *tile) {
	constexpr int VPR = 8 * (int)sizeof(T);
	constexpr int EV = 16 / (int)sizeof(T);
	constexpr int NV = 64 * VPR / 256;
#pragma unroll
	for (int i = 0; i < NV; i++) {
		const int idx = threadIdx.x + 256 * i, row = idx / VPR, k = k0 + (idx % VPR) * EV;
		const bool in = k < cols;
		kq_cp16(reinterpret_cast<uint4 *>(tile) + row * (VPR + 1) + idx % VPR, in ? x + (long long)(m0 + row) * cols + k : x, in);
	}
}

// Element (row, c) of a float32 tile (the 16-bit paths read the packed
// words of the tile themselves).
KQ_DEV float kq_tile_at(const float *, const u32 *tile, int row, int c) { return __uint_as_float(tile[row * KQ_TILE_ROW(float) + c]); }

// Sixteen elements of a tile row from column c0 (c0 % 16 == 0), as 16-byte
// vectors.
template <typename T>
KQ_DEV const uint4 *kq_tile_seg(const u32 *tile, int row, int c0) {
	return reinterpret_cast<const uint4 *>(tile + row * KQ_TILE_ROW(T) + c0 * (int)sizeof(T) / 4);
}

// kq_tile_key unpacks the sixteen elements of a float32 tile row from
// column c0 into v and returns their largest |v| (kq_rawkey).
KQ_DEV u32 kq_tile_key(const float *x, const u32 *tile, int row, int c0, float v[16]) {
	const uint4 *s = kq_tile_seg<float>(tile, row, c0);
	uint4 L[4];
#pragma unroll
	for (int i = 0; i < 4; i++) L[i] = s[i];
	kq_unpack16(x, L, v);
	return kq_rawkey(v);
}

#include "nvfp4_rhtcol.cuh"

// kq_col_nan is the columnwise RHT body's block holding a NaN: column 2j
// + H of run run (j, run from the thread as in kq_nvf4_col_body), Philox
// counter b, by the reference path (kq_block16_ref): its packed codes (x,
// y: low, high word) and scale code (z). Called, rather than inlined,
// after the body's fast path (whose junk for the block it replaces), from
// the tile's words and rk rather than from the body's registers: NaN
// blocks are rare, and an inlined reference path, or a call in the
// middle of the body passing the block's words, cost the hot path
// registers, spills and moves. It takes the RHT again (kq_rht16x2c: the
// same words, factors and bits as the body; T the input type).
template <typename T, bool SR, u32 SG, int H>
__device__ __noinline__ uint4 kq_col_nan(const u32 *tile, u32 signs, u64 b, const u32 *rk) {
	const int j = threadIdx.x & 63, run = threadIdx.x >> 6;
	u32 W[16];
#pragma unroll
	for (int i = 0; i < 16; i++) W[i] = tile[(run * 16 + i) * KQ_TILE_ROW(T) + j];
	float rc[16];
	kq_rhtf<SG>(signs, rc);
	u32 P[2][8];
	kq_rht16x2c<T>(W, rc, P[0], P[1]);
	float v[16];
#pragma unroll
	for (int t = 0; t < 16; t++) v[t] = kq_pel(P[H], t);
	u32 d;
	const u64 seed = (u64)rk[20] | ((u64)rk[21] << 32);
	const u64 q = kq_block16_ref<SR>(v, __uint_as_float(rk[24]), __uint_as_float(rk[23]), b << 4, 1u, rk[22], seed, &d);
	return make_uint4((u32)q, (u32)(q >> 32), d, 0u);
}

// Columnwise fast path (rows % 64 == 0, cols % 64 == 0, aligned): a block
// stages a 64 x 128 tile, each thread transforms and quantizes the 16-row
// runs of two columns, and the packed runs leave through shared memory as
// 16-byte stores (32 contiguous bytes per transposed row and tile). A
// block takes the tiles of its kq_tiles (ntx = srows / 128 column tiles
// by rows / 64 row tiles; a grouped block, the one tile of its group's
// tensor); columns in [cols, srows) get zero scales.
// For 16-bit inputs a thread's two columns share each tile word, so the
// RHT takes the sixteen words of its run once (kq_rht16x2c, the signs as
// the factors rc), rounds to BF16 two values per instruction and
// quantizes from the packed words (kq_block16r; without the RHT, the
// words split by column, kq_block16p); RHT and SR are template parameters
// (kq_nvf4_col_body). rk: the loop's per-launch words in shared memory
// (kq_philox_keys). F14: tab holds the factors times 2^-14 (kq_tab14; 16-bit
// inputs with RHT and SR). SG: the sign mask as kq_rhtf's (for kq_col_nan).
template <typename T, bool RHT, bool SR, bool F14 = false, u32 SG = 0>
KQ_DEV void kq_nvf4_col_body(const T *x, int rows, int cols, const u32 *tile, const float *tab, const kq_tscale &ts,
		u64 (*stage)[4], u32 *dstage, int k0, int m0, u32 signs, u64 seed, u32 group, const float *rc, const u32 *rk) {
	const int j = threadIdx.x & 63, run = threadIdx.x >> 6;
	if constexpr (sizeof(T) == 2) {
		u32 W[16];
#pragma unroll
		for (int i = 0; i < 16; i++) W[i] = tile[(run * 16 + i) * KQ_TILE_ROW(T) + j];
		u32 P[2][8];
		if constexpr (RHT) {
			kq_rht16x2c<T>(W, rc, P[0], P[1]);
		} else {
#pragma unroll
			for (int k = 0; k < 8; k++) {
				P[0][k] = __byte_perm(W[2 * k], W[2 * k + 1], 0x5410u);
				P[1][k] = __byte_perm(W[2 * k], W[2 * k + 1], 0x7632u);
			}
		}
		// Column 2j + h (a call per column: the compiler would not unroll
		// a loop over these bodies, and indexing P by a loop variable then
		// put it in local memory). The run's first element is n0 = k rows
		// + m0 + 16 run; kq_block16r takes its Philox block n0 / 16 = k
		// (rows / 16) + m0 / 16 + run (rows and m0 are multiples of 64):
		// one 32 x 32 -> 64-bit multiply-add of non-negative ints. With RHT
		// a block holding a NaN sets its bit of nan, and the reference
		// path replaces its codes after both columns (kq_col_nan).
		u32 nan = 0;
		auto pb = [&](int k) { return (u64)(u32)k * (u32)(rows >> 4) + (u32)((m0 >> 4) + run); };
		auto put = [&](int c, u32 lo, u32 hi, u32 d) {
			// Two 32-bit stores: ptxas computes the halves into
			// registers that a 64-bit store would first have to pair up
			// (moves or an xor swap).
			reinterpret_cast<u32 *>(&stage[c][run])[0] = lo;
			reinterpret_cast<u32 *>(&stage[c][run])[1] = hi;
			reinterpret_cast<u8 *>(dstage)[c * 4 + run] = (u8)d;
		};
		// With RHT the stores are in both arms of the column test, the
		// zeros as values of their own, where one store after the test
		// has them set up in the codes' registers first (without, the
		// one store compiles shorter).
		auto quant = [&](int h) {
			const int c = 2 * j + h, k = k0 + c;
			if constexpr (RHT) {
				if (k < cols) {
					u32 d;
					const u32 key = kq_bkey16(P[h]);
					if (key > 0x7F800000u) nan |= 1u << h;
					const u64 p = kq_block16r<SR, F14>(P[h], key, ts.s6, tab, pb(k), rk, &d);
					put(c, (u32)p, (u32)(p >> 32), d);
				} else {
					put(c, 0u, 0u, 0u);
				}
			} else {
				u64 p = 0;
				u32 d = 0;
				if (k < cols) {
					const u64 n0 = (u64)k * (u64)rows + (u64)(m0 + run * 16);
					p = kq_block16p<T, SR>(P[h], kq_pkey16<T>(P[h]), ts.s6, ts.sinv, tab, n0, 1u, group, seed, &d);
				}
				put(c, (u32)p, (u32)(p >> 32), d);
			}
		};
		quant(0);
		quant(1);
		if constexpr (RHT) {
			if (nan != 0) {
				auto redo = [&](int h, uint4 r) { put(2 * j + h, r.x, r.y, r.z); };
				if (nan & 1u) redo(0, kq_col_nan<T, SR, SG, 0>(tile, signs, pb(k0 + 2 * j), rk));
				if (nan & 2u) redo(1, kq_col_nan<T, SR, SG, 1>(tile, signs, pb(k0 + 2 * j + 1), rk));
			}
		}
	} else {
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const int c = 2 * j + h, k = k0 + c;
			float v[16];
#pragma unroll
			for (int i = 0; i < 16; i++) v[i] = kq_tile_at(x, tile, run * 16 + i, c);
			if (RHT) kq_rht16(v, signs);
			u64 p = 0;
			u32 d = 0;
			if (k < cols) {
				const u64 n0 = (u64)k * (u64)rows + (u64)(m0 + run * 16);
				p = kq_block16<SR>(v, kq_rawkey(v), ts.s6, ts.sinv, tab, n0, 1u, group, seed, &d);
			}
			stage[c][run] = p;
			reinterpret_cast<u8 *>(dstage)[c * 4 + run] = (u8)d;
		}
	}
}

// Tiles a block of the columnwise fast path takes (the one persistent
// tiled path: ungrouped, its resident blocks take the tiles; grouped, one
// tile per block): t0, then t0 + step, ... below n (step: the grid's
// blocks), or with a state st the later ones in kq_sched_claim's order;
// tile t covers columns (t % ntx) * 128 and rows (t / ntx) * 64.
struct kq_tiles {
	int t0, step, n, ntx;
	u32 *st;
};

// A tile of the columnwise fast path with its coordinates, column tile tx
// and row tile ty of index ix (kq_tile_order's Dec: thread 0 divides by
// ntx once a claim, where every thread divided twice a round).
struct __align__(16) kq_col_tile {
	int ix, tx, ty, unused;
};
struct kq_col_dec {
	int ntx;
	__device__ __forceinline__ kq_col_tile operator()(int t) const { return kq_col_tile{t, t % ntx, t / ntx, 0}; }
};

// The tile loop of the columnwise fast path (shared memory from
// kq_nvf4_col_fast): for 16-bit inputs the next tile's cp.async loads
// are in flight while the block quantizes the current one (two tile
// buffers); float32 inputs (one buffer, the 48 KiB static limit) load
// the next tile once the current one is consumed. Each tile's work and
// stores are those of one block of the one-tile-per-block kernel. With
// RHT, SR and a compile-time mask (16-bit inputs) tab holds the factors
// times 2^-14 (kq_fill_tab14; kq_nvf4_col_fast checks kq_tab14).
template <typename T, bool RHT, bool SR, int NB, u32 SG>
KQ_DEV void kq_nvf4_col_loop(const T *x, int rows, int cols, u8 *out, u8 *scales, int srows, int scols, u8 *swz,
		u32 signs, u64 seed, u32 group, kq_tiles tl, u32 (*tile)[KQ_TILE_WORDS(T)], u64 (*stage)[4], u32 *dstage,
		const float *tab, const kq_tscale &ts) {
	float rc[16];
	kq_rhtf<SG>(signs, rc);
	__shared__ __align__(16) u32 rk[KQ_RK];
	kq_philox_keys(seed, group, ts, rk);
	// kq_tile_async's vectors, loop-invariant parts hoisted: vector i of a
	// thread is idx = threadIdx.x + 256 i, and 256 % VPR == 0, so its
	// column kk is the same for every i and its row is r0 + i * 256 / VPR.
	constexpr int VPR = 8 * (int)sizeof(T), EV = 16 / (int)sizeof(T), NV = 64 * VPR / 256;
	const int kk = ((int)threadIdx.x % VPR) * EV, r0 = (int)threadIdx.x / VPR;
	const u64 goff = (u64)(u32)r0 * (u32)cols + (u32)kk, gstep = (u64)(256 / VPR) * (u32)cols;
	const int soff = r0 * (VPR + 1) + (int)threadIdx.x % VPR;
	// A vector beyond cols (the same column for all of a thread's NV)
	// reads nothing (kq_cp16 with !in), so its address needs no clamp.
	// The element offsets are sums of products of non-negative ints, taken
	// unsigned (no sign extensions to 64 bits).
	auto issue = [&](int tx, int ty, u32 *dst) {
		const int k0 = tx * 128;
		const bool in = k0 + kk < cols;
		const T *g = x + ((u64)(u32)(ty * 64) * (u32)cols + (u32)k0 + goff);
#pragma unroll
		for (int i = 0; i < NV; i++) kq_cp16(reinterpret_cast<uint4 *>(dst) + soff + i * (256 / VPR) * (VPR + 1), g + i * gstep, in);
	};
	// The store side's per-thread parts: column cc of the tile, half of
	// its 32 code bytes. The tile's swizzled scales are one whole 512-byte
	// block, (k0 >> 7, m0 >> 6)'s, where column cc's 4 bytes are at (cc &
	// 31) * 16 + (cc >> 5) * 4 (kq_swz; k0 % 128 == 0, m0 % 64 == 0): lane
	// l of warp 0 writes its 16 bytes l * 16.., the scale words of columns
	// l, l + 32, l + 64, l + 96, in one store.
	const int cc = threadIdx.x >> 1, half = threadIdx.x & 1;
	// The block's tiles of rounds k and k + 1 (t, tn), the round k + 2
	// tile claimed before the round's first barrier.
	kq_tile_order<2, kq_col_dec> order(tl.st, tl.t0, tl.step, kq_col_dec{tl.ntx});
	if (order.tile(0).ix < tl.n) issue(order.tile(0).tx, order.tile(0).ty, tile[0]);
	kq_cp_commit();
	int buf = 0;
	while (order.tile(0).ix < tl.n) {
		order.claim();
		const kq_col_tile t = order.tile(0), tn = order.tile(1);
		const int tx = t.tx, k0 = tx * 128, m0 = t.ty * 64;
		if (NB == 2) {
			if (tn.ix < tl.n) issue(tn.tx, tn.ty, tile[buf ^ 1]);
			kq_cp_commit();
			kq_cp_wait<1>();
		} else {
			kq_cp_wait<0>();
		}
		__syncthreads();
		kq_nvf4_col_body<T, RHT, SR, RHT && SR && SG != 0 && sizeof(T) == 2, SG>(x, rows, cols, tile[buf], tab, ts, stage, dstage, k0, m0, signs, seed, group, rc, rk);
		__syncthreads();
		// The offsets are products of non-negative ints, taken unsigned
		// (no sign extensions to 64 bits).
		const int k = k0 + cc;
		if (k < cols) {
			*reinterpret_cast<uint4 *>(out + (u64)(u32)k * (u32)(rows >> 1) + (u32)((m0 >> 1) + half * 16)) =
				*reinterpret_cast<const uint4 *>(&stage[cc][2 * half]);
		}
		if (half == 0 && k < srows) *reinterpret_cast<u32 *>(scales + (u64)(u32)k * (u32)scols + (u32)(m0 >> 4)) = dstage[cc];
		if (swz != 0 && threadIdx.x < 32) {
			const u32 l = threadIdx.x;
			*reinterpret_cast<uint4 *>(swz + ((u64)(u32)tx * (u32)(scols >> 2) + (u32)(m0 >> 6)) * 512u + l * 16u) =
				make_uint4(dstage[l], dstage[l + 32], dstage[l + 64], dstage[l + 96]);
		}
		if (NB == 1) {
			if (tn.ix < tl.n) issue(tn.tx, tn.ty, tile[0]);
			kq_cp_commit();
		}
		buf ^= NB - 1;
		order.advance();
	}
	if (threadIdx.x == 0) kq_sched_done(tl.st, tl.step);
}

// kq_nvf4_col_fast runs kq_nvf4_col_loop's instantiation for rht, sr and
// the sign mask: TransformerEngine's (KQ_TE_SIGNS) as a compile-time
// constant for 16-bit inputs, any other at run time (kq_rhtf). The
// compile-time mask's SR loop takes the factors times 2^-14; where they
// are not exact (kq_tab14: tensor amaxes above about 2^114) the mask goes
// the run-time way, with the plain factors.
template <typename T>
__device__ void kq_nvf4_col_fast(const T *x, int rows, int cols, const u32 *amax, u8 *out, u8 *scales,
		int srows, int scols, u8 *swz, int rht, u32 signs, int sr, u64 seed, u32 group, kq_tiles tl) {
	constexpr int NB = sizeof(T) == 2 ? 2 : 1;
	constexpr u32 TE = sizeof(T) == 2 ? KQ_TE_SIGNS : 0u;
	__shared__ __align__(16) u32 tile[NB][KQ_TILE_WORDS(T)];
	__shared__ __align__(16) u64 stage[128][4];
	__shared__ u32 dstage[128];
	__shared__ float tab[128];
	const kq_tscale ts = kq_tscale_of(amax);
	const bool te = rht && TE != 0 && signs == TE && (!sr || kq_tab14(ts.sinv));
	if (te && sr) kq_fill_tab14(tab, ts.sinv);
	else kq_fill_tab(tab, ts.sinv);
#define KQ_COL_LOOP(R, S, G) kq_nvf4_col_loop<T, R, S, NB, G>(x, rows, cols, out, scales, srows, scols, swz, signs, seed, group, tl, \
		tile, stage, dstage, tab, ts)
	if (te) {
		if (sr) KQ_COL_LOOP(true, true, TE);
		else KQ_COL_LOOP(true, false, TE);
	} else if (rht) {
		if (sr) KQ_COL_LOOP(true, true, 0u);
		else KQ_COL_LOOP(true, false, 0u);
	} else {
		if (sr) KQ_COL_LOOP(false, true, 0u);
		else KQ_COL_LOOP(false, false, 0u);
	}
#undef KQ_COL_LOOP
}

// Amax of the RHT of the columnwise operand, fast path (shapes as
// kq_nvf4_col_fast): a block takes the 128 columns from blockIdx.x * 128
// of the 64-row tiles blockIdx.y, blockIdx.y + gridDim.y, ... (one tile
// per block when grouped: the grid is then rows / 64 high). For 16-bit
// inputs each thread reads the sixteen words of its two columns and run
// straight from global memory (a warp reads 128 contiguous bytes per
// row; no staging, no barrier per tile), takes kq_rht_amax2c per tile and
// rounds its running maximum to BF16 once; the result is the largest
// BF16-rounded |y| as before. With PA it also reduces the input's own
// amax into pamax, the value kq_nvf4_amax gives (the largest non-NaN
// |x|, kq_vmax/kq_vkey on the same words: the packed maximum over more
// words is the maximum of their keys), so that a step with both operands
// reads the input once for both amaxes. SG as kq_rhtf.
// The float32 path's tile, one per input type (a __shared__ array in
// kq_nvf4_amax_rht_fast would be one per instantiation).
template <typename T>
KQ_DEV u32 *kq_amax_tile() {
	__shared__ __align__(16) u32 tile[KQ_TILE_WORDS(T)];
	return tile;
}

template <typename T, u32 SG, bool PA>
KQ_DEV void kq_nvf4_amax_rht_fast(const T *x, int rows, int cols, u32 *amax, u32 signs, u32 *pamax) {
	const int j = threadIdx.x & 63, run = threadIdx.x >> 6, k0 = blockIdx.x * 128, nty = rows >> 6;
	float a = 0.0f;
	u32 pa = 0;
	if constexpr (sizeof(T) == 2) {
		const int k = k0 + 2 * j;
		// Columns at or beyond cols (a multiple of 64) would add zeros.
		if (k < cols) {
			const long long wr = cols >> 1;
			const u32 *p = reinterpret_cast<const u32 *>(x + ((long long)blockIdx.y * 64 + run * 16) * cols + k);
			float m = 0.0f;
			u32 acc = 0;
			for (int by = blockIdx.y; by < nty; by += gridDim.y) {
				u32 W[16];
#pragma unroll
				for (int i = 0; i < 16; i++) W[i] = p[i * wr];
				if (PA) {
#pragma unroll
					for (int q = 0; q < 4; q++) acc = kq_vmax(x, acc, make_uint4(W[4 * q], W[4 * q + 1], W[4 * q + 2], W[4 * q + 3]));
				}
				// A run-time mask's factors are rebuilt per tile from an
				// opaque copy of signs: hoisted, their sixteen registers
				// would cost the kernel's occupancy.
				u32 sg = signs;
				if (SG == 0) asm volatile("" : "+r"(sg));
				float rc[16];
				kq_rhtf<SG>(sg, rc);
				m = kq_rht_amax2c<T>(W, rc, m);
				p += 64 * wr * gridDim.y;
			}
			a = kq_bf16_rne(m);
			pa = kq_vkey(x, acc);
		}
	} else {
		u32 *tile = kq_amax_tile<T>();
		for (int by = blockIdx.y; by < nty; by += gridDim.y) {
			kq_load_tile(x, cols, by * 64, k0, tile);
			__syncthreads();
#pragma unroll
			for (int h = 0; h < 2; h++) {
				float v[16];
#pragma unroll
				for (int i = 0; i < 16; i++) v[i] = kq_tile_at(x, tile, run * 16 + i, 2 * j + h);
#pragma unroll
				for (int t = 0; t < 16; t++) pa = max(pa, kq_absbits(v[t]));
				kq_rht16(v, signs);
#pragma unroll
				for (int t = 0; t < 16; t++) a = fmaxf(a, fabsf(v[t]));
			}
			__syncthreads();
		}
	}
	if (PA) kq_block_atomic_max2(__float_as_uint(a), amax, pa, pamax);
	else kq_block_atomic_max(__float_as_uint(a), amax);
}

// kq_nvf4_amax_rht_go runs kq_nvf4_amax_rht_fast's instantiation for the
// sign mask (as kq_nvf4_col_fast) and pamax.
template <typename T>
__device__ void kq_nvf4_amax_rht_go(const T *x, int rows, int cols, u32 *amax, u32 signs, u32 *pamax) {
	constexpr u32 TE = sizeof(T) == 2 ? KQ_TE_SIGNS : 0u;
	if (TE != 0 && signs == TE) {
		if (pamax != 0) kq_nvf4_amax_rht_fast<T, TE, true>(x, rows, cols, amax, signs, pamax);
		else kq_nvf4_amax_rht_fast<T, TE, false>(x, rows, cols, amax, signs, pamax);
	} else {
		if (pamax != 0) kq_nvf4_amax_rht_fast<T, 0u, true>(x, rows, cols, amax, signs, pamax);
		else kq_nvf4_amax_rht_fast<T, 0u, false>(x, rows, cols, amax, signs, pamax);
	}
}

// 8x8 nibble transpose: afterwards nibble i of a[c] is what nibble c of
// a[i] was (swap the off-diagonal 4x4, 2x2 and 1x1 blocks).
KQ_DEV void kq_tr8(u32 a[8]) {
#pragma unroll
	for (int i = 0; i < 4; i++) {
		const u32 x = a[i], y = a[i + 4];
		a[i] = __byte_perm(x, y, 0x5410u);
		a[i + 4] = __byte_perm(x, y, 0x7632u);
	}
#pragma unroll
	for (int i = 0; i < 8; i++) {
		if (i & 2) continue;
		const u32 x = a[i], y = a[i + 2];
		a[i] = __byte_perm(x, y, 0x6240u);
		a[i + 2] = __byte_perm(x, y, 0x7351u);
	}
#pragma unroll
	for (int i = 0; i < 8; i += 2) {
		const u32 x = a[i], y = a[i + 1];
		a[i] = (x & 0x0F0F0F0Fu) | ((y & 0x0F0F0F0Fu) << 4);
		a[i + 1] = ((x >> 4) & 0x0F0F0F0Fu) | (y & 0xF0F0F0F0u);
	}
}

// One tile of the 2D fast path (kq_nvf4_2d_fast, float32 inputs): the
// tile staged and the amaxes zeroed, behind a barrier.
KQ_DEV void kq_nvf4_2d_tile(const float *x, int rows, int cols, u8 *out_row, u8 *scales_row, int scols_row, u8 *swz_row,
		u8 *out_col, u8 *scales_col, int scols_col, u8 *swz_col, const u32 *tile, u32 *tam, u32 (*rc)[17], u64 (*stage)[4],
		const float *tab, const kq_tscale &ts, int k0, int m0) {
	// Thread (m, sp) takes the row segments kb = sp and sp + 4 of tile row
	// m: four threads read 256 contiguous bytes, and the padded rows put
	// the next row's reads on the other banks.
	const int m = threadIdx.x >> 2, sp = threadIdx.x & 3;
	u32 key[2];
	u64 p[2];
	u32 d[2];
#pragma unroll
	for (int h = 0; h < 2; h++) {
		const int kb = sp + 4 * h;
		float v[16];
		key[h] = kq_tile_key(x, tile, m, kb * 16, v);
		const u32 a = key[h] > 0x7F800000u ? __float_as_uint(kq_block_amax(v, 16)) : key[h];
		if (a != 0) atomicMax(&tam[(m >> 4) * 8 + kb], a);
	}
	__syncthreads();
#pragma unroll
	for (int h = 0; h < 2; h++) {
		const int kb = sp + 4 * h;
		float v[16];
		kq_tile_key(x, tile, m, kb * 16, v);
		d[h] = kq_e4m3(__fmul_rn(__uint_as_float(tam[(m >> 4) * 8 + kb]), ts.s6));
		const float f = tab[d[h]];
		p[h] = key[h] > 0x7F800000u ? kq_quant16(v, 16, f, 0, 0, 0u, 0u, 0) : kq_q16f<false>(v, f, make_uint4(0u, 0u, 0u, 0u));
		rc[m][2 * kb] = (u32)p[h];
		rc[m][2 * kb + 1] = (u32)(p[h] >> 32);
	}
	const int stride_r = cols >> 1, stride_c = rows >> 1;
#pragma unroll
	for (int h = 0; h < 2; h++) {
		const int kb = sp + 4 * h;
		if (k0 + kb * 16 >= cols) continue;
		if (out_row != 0) *reinterpret_cast<u64 *>(out_row + (long long)(m0 + m) * stride_r + (k0 >> 1) + kb * 8) = p[h];
		if (scales_row != 0) scales_row[(long long)(m0 + m) * scols_row + (k0 >> 4) + kb] = (u8)d[h];
		if (swz_row != 0) swz_row[kq_swz(m0 + m, (k0 >> 4) + kb, scols_row)] = (u8)d[h];
	}
	if (out_col == 0) return; // (uniform)
	__syncthreads();
	if (threadIdx.x < 64) {
		const int wc = threadIdx.x & 15, run = threadIdx.x >> 4;
		u32 lo[8], hi[8];
#pragma unroll
		for (int i = 0; i < 8; i++) {
			lo[i] = rc[run * 16 + i][wc];
			hi[i] = rc[run * 16 + 8 + i][wc];
		}
		kq_tr8(lo);
		kq_tr8(hi);
#pragma unroll
		for (int c = 0; c < 8; c++) stage[wc * 8 + c][run] = (u64)lo[c] | ((u64)hi[c] << 32);
	}
	__syncthreads();
	const int cc = threadIdx.x >> 1, half = threadIdx.x & 1, k = k0 + cc;
	if (k >= cols) return; // no barrier follows
	*reinterpret_cast<uint4 *>(out_col + (long long)k * stride_c + (m0 >> 1) + half * 16) =
		*reinterpret_cast<const uint4 *>(&stage[cc][2 * half]);
	if (half == 0) {
		const int kb = cc >> 4;
		u32 dw = 0;
#pragma unroll
		for (int r = 0; r < 4; r++) dw |= kq_e4m3(__fmul_rn(__uint_as_float(tam[r * 8 + kb]), ts.s6)) << (8 * r);
		*reinterpret_cast<u32 *>(scales_col + (long long)k * scols_col + (m0 >> 4)) = dw;
		if (swz_col != 0) *reinterpret_cast<u32 *>(swz_col + kq_swz(k, m0 >> 4, scols_col)) = dw;
	}
}

// 2D fast path (rows % 64 == 0, cols % 64 == 0, aligned) of float32
// inputs (16-bit inputs take kq_nvf4_2d_reg, nvfp4_2d.cuh): a block
// stages the 64 x 128 tile at rows m0 and columns k0 (4 x 8 tiles of
// 16 x 16); each thread reduces and quantizes two 16-element row
// segments, the tile amaxes meet in shared memory, the rowwise codes go
// out as 8-byte stores and, for the columnwise operand, are transposed
// nibble-wise in registers and leave through shared memory as 16-byte
// stores. The caller zeroes both scale matrices (their padding) first;
// swz_row and swz_col, when not NULL, also receive the scales in the GEMM
// layout (four columnwise entries adjacent there). One tile per block
// (kq_nvf4_2d_one).
__device__ void kq_nvf4_2d_fast(const float *x, int rows, int cols, const u32 *amax, u8 *out_row, u8 *scales_row,
		int scols_row, u8 *swz_row, u8 *out_col, u8 *scales_col, int scols_col, u8 *swz_col, int k0, int m0) {
	__shared__ __align__(16) u32 tile[KQ_TILE_WORDS(float)];
	__shared__ u32 tam[32];
	__shared__ u32 rc[64][17];
	__shared__ __align__(16) u64 stage[128][4];
	__shared__ float tab[128];
	const kq_tscale ts = kq_tscale_of(amax);
	kq_fill_tab(tab, ts.sinv);
	kq_tile_async(x, cols, m0, k0, tile);
	kq_cp_commit();
	kq_cp_wait<0>();
	if (threadIdx.x < 32) tam[threadIdx.x] = 0;
	__syncthreads();
	kq_nvf4_2d_tile(x, rows, cols, out_row, scales_row, scols_row, swz_row, out_col, scales_col, scols_col, swz_col,
		tile, tam, rc, stage, tab, ts, k0, m0);
}
