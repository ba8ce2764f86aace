// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// kquant MXFP8BlockScaling with 32x32 two-dimensional weight tiles: one
// E8M0 exponent per 32x32 tile of a [rows, cols] tensor, shared by the
// rowwise and the columnwise operand, in one pass over the input.
//
// The contract (docs/quantization-formats.md, MXFP8 row: "optional 32x32 2D
// blocks for weights") and the pure-Go reference (internal/quant/reference,
// quantizeMXFP82D) fix the bytes: the tile's amax (NaN ignored), its E8M0
// exponent with TE's or OCP's rounding, the codes convert(x * 2^(127-e)) in
// the input's [rows, cols] layout for both operands (MXFP8's columnwise data
// is not transposed, and with one exponent per tile both operands get the
// same codes), the rowwise scale matrix [roundup(rows,128),
// roundup(ceil(cols/32),4)] with entry (r, kb) = the exponent of tile
// (r/32, kb), the columnwise one [roundup(ceil(rows/32),4), roundup(cols,128)]
// with entry (rb, c) = the exponent of tile (rb, c/32), padding zero, and
// optionally both in the GEMM swizzled layout. The arithmetic per tile (the
// E8M0 rules, the factor, the rounded products and the saturating
// conversions) is quantize.cu's, through the same helpers (kq_mx.cuh,
// kq_common.cuh): the same bits.
//
// The build flags (hack/gen-kernels.sh) keep IEEE float32 semantics: no fast
// math, no flush to zero, no FMA contraction. The hash stamped on mx2d.ptx
// covers the headers it includes (every kernels/*.cuh).
//
// Graph safety: the kernel reads nothing from the host and finishes the
// fused tensor amax with a ticket counter in the per-tensor state that
// resets its own scratch, so a step can be captured once and replayed.

#include "kq_common.cuh"
#include "kq_mx.cuh"

// ---- input types --------------------------------------------------------------
//
// A lane holds 8 consecutive elements of each of its rows as raw words: W =
// 4 words (pairs, the lower-index element in the low half) for 16-bit
// inputs, 8 for float32. The amax accumulator is a word too: for 16-bit
// inputs a pair of |x| maxima taken with the paired max instruction (the
// largest |x| over values held exactly in the input type is such a value,
// so it is exact; without the .NaN modifier it returns the other operand
// when one is NaN, and the accumulator starts at zero, so NaN never raises
// an amax; without .ftz subnormals count), for float32 the float maximum
// (fmaxf also ignores NaN).
template <typename T> struct kq2_words { enum { W = 4 }; };
template <> struct kq2_words<float> { enum { W = 8 }; };

template <typename T>
KQ_DEV u32 kq2_acc(T tag, u32 acc, u32 w) { return kq_pmax(tag, acc, w & 0x7FFF7FFFu); }
KQ_DEV u32 kq2_acc(float, u32 acc, u32 w) {
	return __float_as_uint(fmaxf(__uint_as_float(acc), fabsf(__uint_as_float(w))));
}
KQ_DEV float kq2_acc_value(kq_bf16, u32 acc) { return fmaxf(kq_bf16_to_f32(acc & 0xFFFFu), kq_bf16_to_f32(acc >> 16)); }
KQ_DEV float kq2_acc_value(kq_f16, u32 acc) { return fmaxf(kq_f16_to_f32(acc & 0xFFFFu), kq_f16_to_f32(acc >> 16)); }
KQ_DEV float kq2_acc_value(float, u32 acc) { return __uint_as_float(acc); }

// Element k (0..7) of a row's words, widened to float32.
KQ_DEV float kq2_elem(kq_bf16, const u32 *w, int k) { return kq_bf16_to_f32((k & 1) ? (w[k >> 1] >> 16) : (w[k >> 1] & 0xFFFFu)); }
KQ_DEV float kq2_elem(kq_f16, const u32 *w, int k) { return kq_f16_to_f32((k & 1) ? (w[k >> 1] >> 16) : (w[k >> 1] & 0xFFFFu)); }
KQ_DEV float kq2_elem(float, const u32 *w, int k) { return __uint_as_float(w[k]); }

// The raw bits of one element, widened to a word.
KQ_DEV u32 kq2_bits(const kq_bf16 *x, long long i) { return x[i].bits; }
KQ_DEV u32 kq2_bits(const kq_f16 *x, long long i) { return x[i].bits; }
KQ_DEV u32 kq2_bits(const float *x, long long i) { return __float_as_uint(x[i]); }

// kq2_load_row loads the 8 elements at x[i .. i+8) of a row, n of which
// (0..8) lie in the tensor, zero for the others: with vec (n == 8 or 0 and
// x + i 16-byte aligned) as 16-byte loads, else element by element.
template <typename T>
KQ_DEV void kq2_load_row(const T *x, long long i, int n, bool vec, u32 w[kq2_words<T>::W]) {
	const int W = kq2_words<T>::W;
#pragma unroll
	for (int k = 0; k < W; k++) w[k] = 0u;
	if (n <= 0) return;
	if (vec) {
#pragma unroll
		for (int k = 0; k < W; k += 4) {
			uint4 q = *reinterpret_cast<const uint4 *>(x + i + (k * 8) / W);
			w[k] = q.x; w[k + 1] = q.y; w[k + 2] = q.z; w[k + 3] = q.w;
		}
		return;
	}
#pragma unroll
	for (int k = 0; k < 8; k++) {
		if (k < n) {
			u32 b = kq2_bits(x, i + k);
			if (W == 8) w[k & (W - 1)] = b;
			else w[(k >> 1) & (W - 1)] |= (k & 1) ? (b << 16) : b;
		}
	}
}

// ---- the tensor amax ----------------------------------------------------------

// kq_mxfp8_finish (kq_mx.cuh) reduces the tile amaxes the block saw into
// the state's amax word, as the one-operand MXFP8 kernels do.

// ---- the 2D kernel --------------------------------------------------------------
//
// A block of 8 warps owns a 128x128 macro tile of the padded element space
// (4 bands of 32 rows x 4 tiles of 32 columns): warp w the 32x64 piece of
// band w / 2, tiles 2 (w % 2) and 2 (w % 2) + 1. The blocks stride over the
// macro tiles. The padded space, roundup(rows,128) x roundup(cols,128), is
// what both padded scale matrices span (the rowwise [32 srows_col,
// scols_col / 32], the columnwise [srows_col, scols_col]), so the macro
// tiles cover every scale byte, padding included, exactly once; pieces past
// the tensor load nothing and get exponent 0 (amax 0).
//
// In a piece, lane (rq, cg) = (lane / 8, lane % 8) holds rows rq + 4i (i =
// 0..7) and columns 8cg..8cg+7 (one 16-byte load per row for 16-bit inputs,
// two for float32): a warp load covers four whole 128-byte row segments
// (16-bit). Lanes cg < 4 hold the first tile, cg >= 4 the second; four
// shuffles give each lane its tile's amax. Each row's 8 codes are converted
// once and stored (8 bytes) to both operands' data.
//
// Scales: a 128x128 macro tile is exactly one 512-byte block of each
// swizzled matrix (the rowwise one: 128 rows x 4 blocks; the columnwise one,
// swizzled as its transpose: 128 columns x 4 row blocks). So each warp puts
// its two exponents in shared memory, the block meets once, and warps 0-3
// write the macro tile's scales with wide stores: the rowwise matrix (128
// rows x 4 bytes), its swizzled block (32 lanes x 16 bytes), the columnwise
// matrix (4 rows x 128 bytes) and its swizzled block. (The first version let
// each warp write its own scale bytes: 16 scattered byte stores per piece,
// about half as many memory transactions again as the data's, at 62-63% of
// copy bandwidth on an H200.) The exponents are double-buffered, so one
// barrier per macro tile suffices.
//
// pf: prefetch. The warp issues the next macro tile's loads as soon as it
// has the current one's, so that they stay in flight while it converts (as
// quantize.cu's fused MXFP8 kernel does; 32 more registers for 16-bit
// inputs). The float32 kernel, with twice the words, does without.
//
// vec: bit 0, cols % 8 == 0 with a 16-byte aligned input and 8-byte aligned
// data outputs (16-byte loads, 8-byte stores); bit 1, the scale buffers are
// 16-byte aligned (the wide scale stores).
#define KQ2_VEC_DATA 1
#define KQ2_VEC_SCALES 2

// kq2_put16 and kq2_put4 store the 16 or 4 bytes of w at p (byte k of
// word j at p + 4j + k): one store when wide, else byte by byte.
KQ_DEV void kq2_put16(u8 *p, uint4 w, bool wide) {
	if (wide) {
		*reinterpret_cast<uint4 *>(p) = w;
		return;
	}
	u32 a[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
	for (int k = 0; k < 16; k++) p[k] = (u8)(a[k >> 2] >> (8 * (k & 3)));
}
KQ_DEV void kq2_put4(u8 *p, u32 w, bool wide) {
	if (wide) {
		*reinterpret_cast<u32 *>(p) = w;
		return;
	}
#pragma unroll
	for (int k = 0; k < 4; k++) p[k] = (u8)(w >> (8 * k));
}
// Byte k of w.
KQ_DEV u32 kq2_byte(u32 w, int k) { return (w >> (8 * k)) & 0xFFu; }

// ---- grouped (MoE) placement ---------------------------------------------------
//
// The grouped kernel (GRP) quantizes one [rows, cols] input split along its
// rows into groups of 32-row multiples (offsets[g] .. offsets[g+1], from
// the grouped module's kq_grp_offsets), each group a tensor of its own, the
// results concatenated as the reference's QuantizeGrouped gives them: the
// codes of both operands keep the input's layout (a 32x32 tile never
// straddles a group), group g's rowwise scales [roundup(n_g,128),
// scols_row] start at row P_g = 128 tiles[g] of sc_row and its columnwise
// [roundup(n_g/32,4), scols_col] at row P_g/32 = 4 tiles[g] of sc_col
// (tiles: quantize.cu's kq_grp_tiles, the groups' 128-row units before
// g), padding zero; swz_row is the swizzle of the whole rowwise matrix (its
// groups start at 128-row boundaries, so that is each group's swizzled
// matrix concatenated), swz_col each group's transposed columnwise matrix
// [scols_col, 4 (tiles[g+1] - tiles[g])] swizzled at byte 4 tiles[g]
// scols_col. The kernel walks the macro tiles of this padded row space
// (128 tiles[ngroups] rows): macro row Mr belongs to the group with
// tiles[g] <= Mr < tiles[g+1] and is that group's local macro row Mr -
// tiles[g]; its rows past n_g are padding (no loads, no stores, zero
// scales). The ungrouped kernel is the same walk over one group [0, rows).
//
// kq2_place is a macro row's placement: dr0 the input row of its first row,
// rend the end of its group's rows (the rows in the tensor are those below
// rend), lm the macro row within the group, ncb the group's columnwise row
// blocks (of 4 scale rows), cswz the group's byte offset in swz_col, g the
// group.
struct kq2_place {
	int dr0, rend, lm, ncb, g;
	long long cswz;
};

// kq2_where places macro row Mr. Grouped, g is the group of the block's
// previous macro row (the blocks walk the macro tiles in increasing order,
// so it only grows): kept when Mr is still in it, else the largest group
// h > g with tiles[h] <= Mr (empty groups have tiles[h] == tiles[h+1] and
// are passed over), by binary search.
template <int GRP>
KQ_DEV kq2_place kq2_where(int Mr, int rows, int srows_col, int scols_col, const int *offsets, const int *tiles, int ngroups, int &g) {
	kq2_place p;
	if (!GRP) {
		p.dr0 = 128 * Mr;
		p.rend = rows;
		p.lm = Mr;
		p.ncb = srows_col / 4;
		p.cswz = 0;
		p.g = 0;
		return p;
	}
	if (tiles[g + 1] <= Mr) {
		int lo = g + 1, hi = ngroups - 1;
		while (lo < hi) {
			const int mid = (lo + hi + 1) >> 1;
			if (tiles[mid] <= Mr) lo = mid;
			else hi = mid - 1;
		}
		g = lo;
	}
	const int tg = tiles[g], goff = offsets[g];
	p.dr0 = goff + 128 * (Mr - tg);
	p.rend = offsets[g + 1];
	p.lm = Mr - tg;
	p.ncb = tiles[g + 1] - tg;
	p.cswz = 4LL * tg * scols_col;
	p.g = g;
	return p;
}

template <typename T, int fmt, int ocp, int pf, int GRP>
KQ_DEV void kq2_impl(const T *x, int rows, int cols, u8 *out_row, u8 *sc_row, u8 *swz_row, int scols_row,
		u8 *out_col, u8 *sc_col, u8 *swz_col, int srows_col, int scols_col, u32 *st, int vec,
		const int *offsets, const int *tiles, int ngroups, const int *flag, u32 *gamax) {
	// esm[b][q]: byte j is the exponent of tile (band q, column tile j) of
	// the macro tile, buffer b.
	__shared__ u32 esm[2][4];
	const int W = kq2_words<T>::W;
	const T tag = T();
	const u32 full = 0xFFFFFFFFu;
	const u32 lane = threadIdx.x & 31u;
	const int warp = (int)(threadIdx.x >> 5);
	const int cg = (int)(lane & 7u), rq = (int)(lane >> 3);
	const bool hi = cg >= 4; // the lane's tile is the piece's second
	const int q = warp >> 1, half = warp & 1;
	const bool dvec = (vec & KQ2_VEC_DATA) != 0, wide = (vec & KQ2_VEC_SCALES) != 0;
	if (GRP && *flag != 0) return; // the split sizes are wrong: the step changes nothing
	const int nmc = scols_col / 128;
	const int nmacro = GRP ? tiles[ngroups] * nmc : (srows_col / 4) * nmc; // below 2^31: 2^45 elements
	int gcur = 0; // grouped: the group of the block's latest placed macro row
	const long long stride4 = 4LL * cols; // elements from one of the lane's rows to the next
	float tm = 0.0f;
	u32 nx[8][W];
	// prefetch loads the lane's rows of macro tile m into nx (pf).
	auto prefetch = [&](int mi) {
		const kq2_place pn = kq2_where<GRP>(mi / nmc, rows, srows_col, scols_col, offsets, tiles, ngroups, gcur);
		const int c = (mi % nmc) * 128 + half * 64 + cg * 8, r0 = pn.dr0 + q * 32 + rq;
#pragma unroll
		for (int i = 0; i < 8; i++) {
			int n = r0 + 4 * i < pn.rend ? min(8, cols - c) : 0;
			kq2_load_row(x, (long long)(r0 + 4 * i) * cols + c, n, dvec, nx[i]);
		}
	};
	// The block's macro tiles of rounds k and k + 1 (m, mnext) in
	// kq_sched_claim's order, the round k + 2 tile claimed before the
	// round's barrier. The grouped kernel commits no amax (nothing would
	// reset the counter): its tiles are static.
	kq_tile_order<2> order(GRP ? 0 : st, (int)blockIdx.x, (int)gridDim.x);
	if (pf && order.tile(0) < nmacro) prefetch(order.tile(0));
	for (int buf = 0; order.tile(0) < nmacro; buf ^= 1) {
		order.claim();
		const int m = order.tile(0), mnext = order.tile(1);
		const int Mr = m / nmc, Mc = m % nmc;
		const kq2_place P = kq2_where<GRP>(Mr, rows, srows_col, scols_col, offsets, tiles, ngroups, gcur);
		const int c = Mc * 128 + half * 64 + cg * 8, r0 = P.dr0 + q * 32 + rq;
		const int ncol = min(8, cols - c); // the lane's columns in the tensor (<= 0: none)
		const long long o0 = (long long)r0 * cols + c;
		u32 v[8][W];
		if (pf) {
#pragma unroll
			for (int i = 0; i < 8; i++)
#pragma unroll
				for (int k = 0; k < W; k++) v[i][k] = nx[i][k];
			if (mnext < nmacro) prefetch(mnext);
		} else {
#pragma unroll
			for (int i = 0; i < 8; i++) {
				int n = r0 + 4 * i < P.rend ? ncol : 0;
				kq2_load_row(x, o0 + i * stride4, n, dvec, v[i]);
			}
		}
		// The tile amax: the lane's 64 values, then its tile's 16 lanes
		// (cg ^ 1, ^ 2 within the half; rq ^ 1, ^ 2).
		u32 acc = 0u;
#pragma unroll
		for (int i = 0; i < 8; i++)
#pragma unroll
			for (int k = 0; k < W; k++) acc = kq2_acc(tag, acc, v[i][k]);
		float am = kq2_acc_value(tag, acc);
		am = fmaxf(am, __shfl_xor_sync(full, am, 1));
		am = fmaxf(am, __shfl_xor_sync(full, am, 2));
		am = fmaxf(am, __shfl_xor_sync(full, am, 8));
		am = fmaxf(am, __shfl_xor_sync(full, am, 16));
		tm = fmaxf(tm, am);
		if (GRP && gamax != 0) {
			// The group's amax: the piece's two tiles (padding bands are 0).
			const float wm = fmaxf(am, __shfl_xor_sync(full, am, 4));
			if (lane == 0u && wm > 0.0f) atomicMax(&gamax[P.g], __float_as_uint(wm)); // g may be the prefetch's already
		}
		const u32 e = kq_e8m0<fmt, ocp>(am);
		const float f = kq_e8m0_encode_factor(e);
		if (lane == 0u || lane == 4u) reinterpret_cast<u8 *>(&esm[buf][q])[2 * half + (hi ? 1 : 0)] = (u8)e;
		// Codes: converted once, stored to both operands.
#pragma unroll
		for (int i = 0; i < 8; i++) {
			if (r0 + 4 * i >= P.rend || ncol <= 0) continue;
			uint2 qd;
			qd.x = kq_cvt2<fmt>(__fmul_rn(kq2_elem(tag, v[i], 0), f), __fmul_rn(kq2_elem(tag, v[i], 1), f)) |
			       (kq_cvt2<fmt>(__fmul_rn(kq2_elem(tag, v[i], 2), f), __fmul_rn(kq2_elem(tag, v[i], 3), f)) << 16);
			qd.y = kq_cvt2<fmt>(__fmul_rn(kq2_elem(tag, v[i], 4), f), __fmul_rn(kq2_elem(tag, v[i], 5), f)) |
			       (kq_cvt2<fmt>(__fmul_rn(kq2_elem(tag, v[i], 6), f), __fmul_rn(kq2_elem(tag, v[i], 7), f)) << 16);
			const long long o = o0 + i * stride4;
			if (dvec) {
				if (out_row != 0) *reinterpret_cast<uint2 *>(out_row + o) = qd;
				if (out_col != 0) *reinterpret_cast<uint2 *>(out_col + o) = qd;
			} else {
#pragma unroll
				for (int k = 0; k < 8; k++) {
					if (k >= ncol) break;
					const u8 b = (u8)((k < 4 ? qd.x >> (8 * k) : qd.y >> (8 * (k - 4))) & 0xFFu);
					if (out_row != 0) out_row[o + k] = b;
					if (out_col != 0) out_col[o + k] = b;
				}
			}
		}
		__syncthreads();
		order.advance();
		if (warp >= 4) continue;
		// The macro tile's scales. Entries outside the tensor are zero:
		// tiles without elements have exponent 0 already, so only rows
		// (rowwise) and columns (columnwise) past the tensor inside a tile
		// are masked.
		const u32 E[4] = {esm[buf][0], esm[buf][1], esm[buf][2], esm[buf][3]};
		const int R0 = Mr * 128, K0 = Mc * 128;
		const int D0 = P.dr0; // the input row of scale row R0
		if (warp == 0 && out_row != 0) {
			// Rowwise, rows R0 + 32 qq + lane, blocks 4 Mc .. 4 Mc + 3.
#pragma unroll
			for (int qq = 0; qq < 4; qq++) {
				const int r = R0 + 32 * qq + (int)lane;
				kq2_put4(sc_row + (long long)r * scols_row + 4 * Mc, D0 + 32 * qq + (int)lane < P.rend ? E[qq] : 0u, wide);
			}
		} else if (warp == 1 && out_row != 0 && swz_row != 0) {
			// Its swizzled block: row R0 + 32 qq + lane, block 4 Mc + j at
			// lane * 16 + qq * 4 + j.
			u32 w[4];
#pragma unroll
			for (int qq = 0; qq < 4; qq++) w[qq] = D0 + 32 * qq + (int)lane < P.rend ? E[qq] : 0u;
			kq2_put16(swz_row + ((long long)Mr * (scols_row / 4) + Mc) * 512 + lane * 16, make_uint4(w[0], w[1], w[2], w[3]), wide);
		} else if (warp == 2 && out_col != 0) {
			// Columnwise, row 4 Mr + lane / 8, columns K0 + 16 (lane % 8)
			// .. + 15, all in tile (lane % 8) / 2.
			const int qq = (int)(lane >> 3), seg = (int)(lane & 7u), k0 = K0 + 16 * seg;
			const u32 eq = qq == 0 ? E[0] : qq == 1 ? E[1] : qq == 2 ? E[2] : E[3]; // no indexed local array
			const u32 b = kq2_byte(eq, seg >> 1);
			u32 w[4];
#pragma unroll
			for (int j = 0; j < 4; j++) {
				w[j] = 0u;
#pragma unroll
				for (int k = 0; k < 4; k++) w[j] |= (k0 + 4 * j + k < cols ? b : 0u) << (8 * k);
			}
			kq2_put16(sc_col + (long long)(4 * Mr + qq) * scols_col + k0, make_uint4(w[0], w[1], w[2], w[3]), wide);
		} else if (warp == 3 && out_col != 0 && swz_col != 0) {
			// Its swizzled block (the transpose's): column K0 + 32 g + lane,
			// row block 4 Mr + qq at lane * 16 + g * 4 + qq.
			u32 w[4];
#pragma unroll
			for (int g = 0; g < 4; g++) {
				w[g] = 0u;
				if (K0 + 32 * g + (int)lane < cols)
					w[g] = kq2_byte(E[0], g) | (kq2_byte(E[1], g) << 8) | (kq2_byte(E[2], g) << 16) | (kq2_byte(E[3], g) << 24);
			}
			kq2_put16(swz_col + P.cswz + ((long long)Mc * P.ncb + P.lm) * 512 + lane * 16, make_uint4(w[0], w[1], w[2], w[3]), wide);
		}
	}
	if (!GRP) kq_mxfp8_finish(tm, st);
}

// kq2_run picks the instantiation for the format and the scale rounding,
// so that the conversions and exponents carry no branch on them.
template <typename T, int pf, int GRP>
KQ_DEV void kq2_run(const T *x, int rows, int cols, u8 *out_row, u8 *sc_row, u8 *swz_row, int scols_row,
		u8 *out_col, u8 *sc_col, u8 *swz_col, int srows_col, int scols_col, int fmt, int ocp, u32 *st, int vec,
		const int *offsets, const int *tiles, int ngroups, const int *flag, u32 *gamax) {
#define KQ2_ARGS x, rows, cols, out_row, sc_row, swz_row, scols_row, out_col, sc_col, swz_col, srows_col, scols_col, st, vec, \
		offsets, tiles, ngroups, flag, gamax
	if (fmt == KQ_E4M3 && !ocp)
		kq2_impl<T, KQ_E4M3, 0, pf, GRP>(KQ2_ARGS);
	else if (fmt == KQ_E4M3)
		kq2_impl<T, KQ_E4M3, 1, pf, GRP>(KQ2_ARGS);
	else if (!ocp)
		kq2_impl<T, KQ_E5M2, 0, pf, GRP>(KQ2_ARGS);
	else
		kq2_impl<T, KQ_E5M2, 1, pf, GRP>(KQ2_ARGS);
#undef KQ2_ARGS
}

// ---- entry points ---------------------------------------------------------------
//
// At most 128 registers, 2 blocks of 256 threads (8 warps: the macro tile's
// 8 pieces) per SM; the launcher sizes its grid to the blocks that fit at
// once, so that the fused amax commits once per resident block, and the
// blocks take the tiles in kq_sched_claim's order. out_row /
// out_col NULL skips that operand (and its scale matrices); swz_row /
// swz_col NULL skips the swizzled copy; st NULL skips the tensor amax; vec
// as above (KQ2_VEC_DATA, KQ2_VEC_SCALES).
//
// kq_grp_mx2d is the grouped kernel (the same tile code, GRP = 1; see
// "grouped (MoE) placement"): offsets and flag from kq_grp_offsets (a
// nonzero flag: return at once), tiles from kq_grp_tiles, amax (NULL skips)
// the per-group amaxes, atomicMax on the float bits (zeroed by
// kq_grp_offsets). The grid is independent of the split sizes (the blocks
// stride over the 128 tiles[ngroups] padded rows' macro tiles), so one
// captured graph serves any split vector.
#define KQ2_KERNEL(SUF, T, PF)                                                                          \
	extern "C" __global__ void __launch_bounds__(256, 2) kq_mx2d_##SUF(const T *x, int rows, int cols,  \
			u8 *out_row, u8 *sc_row, u8 *swz_row, int scols_row, u8 *out_col, u8 *sc_col, u8 *swz_col, \
			int srows_col, int scols_col, int fmt, int ocp, u32 *st, int vec, const float *noop) {     \
		if (kq_noop(noop)) return;                                                                         \
		kq2_run<T, PF, 0>(x, rows, cols, out_row, sc_row, swz_row, scols_row, out_col, sc_col, swz_col, \
			srows_col, scols_col, fmt, ocp, st, vec, 0, 0, 0, 0, 0);                                \
	}                                                                                               \
	extern "C" __global__ void __launch_bounds__(256, 2) kq_grp_mx2d_##SUF(const T *x, int rows, int cols, \
			const int *offsets, const int *tiles, int ngroups, const int *flag, u8 *out_row,         \
			u8 *sc_row, u8 *swz_row, int scols_row, u8 *out_col, u8 *sc_col, u8 *swz_col,           \
			int scols_col, int fmt, int ocp, u32 *amax, int vec) {                                  \
		kq2_run<T, PF, 1>(x, rows, cols, out_row, sc_row, swz_row, scols_row, out_col, sc_col, swz_col, \
			0, scols_col, fmt, ocp, 0, vec, offsets, tiles, ngroups, flag, amax);                  \
	}

KQ2_KERNEL(f32, float, 0)
KQ2_KERNEL(bf16, kq_bf16, 1)
KQ2_KERNEL(f16, kq_f16, 1)
