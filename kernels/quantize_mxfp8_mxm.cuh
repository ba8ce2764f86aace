// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// quantize_mxfp8_mxm.cuh: part of quantize.cu (included once, after
// quantize_mxfp8.cuh, whose helpers and definitions it uses): the MXFP8
// kernels' bodies for 16-bit inputs with cols % 8 == 0 and aligned buffers,
// the fused and columnwise macro-tile kernels (the rowwise-only kernel is
// quantize_mxfp8_rowb.cuh). Not a header of its own; the entry points are
// in quantize.cu.

// ---- MXFP8 in 128x128 macro tiles ---------------------------------------------
//
// The one-operand and fused kernels for 16-bit inputs (kq_mxfp8_both,
// kq_mxfp8_colw): a block of 8 warps owns a 128x128 macro tile of the padded
// element space roundup(rows,128) x roundup(cols,128), which both padded
// scale matrices span: warp w the 32x64 piece of band q = w / 2, columns
// 64 (w % 2) .., in kq_mx_tile's lane layout (lane (rq, cg) holds rows rq +
// 4i, columns 8cg..8cg+7, as pairs). The resident blocks take the macro
// tiles in kq_sched_claim's order and prefetch the next ones' pieces (8
// 16-byte loads a lane) while they convert the current one.
//
// A macro tile is exactly one 512-byte block of each swizzled scale matrix
// (rowwise: 128 rows x 4 blocks; columnwise, swizzled as its transpose: 128
// columns x 4 row blocks) and 128 rows x 4 bytes, 4 rows x 128 bytes of the
// plain ones. So the warps put their exponents in shared memory, already in
// the layouts to be written, the block meets once per macro tile
// (double-buffered exponents), and four warps write the macro tile's scales
// with one coalesced store a lane each: no scattered byte stores, no
// swizzle arithmetic per scale (the 32x64 version of this kernel wrote
// every scale byte on its own, at 64-bit kq_swz offsets). Padding entries
// come out zero by themselves: blocks with no element in the tensor load
// zeros, whose amax 0 gives exponent 0 under both roundings.
//
// Macro tiles wholly inside the tensor (all of them when rows and cols are
// multiples of 128) take the FULL instantiation of the tile code, without
// per-row bounds. The E8M0 rules are branch-free (kq_mx.cuh). The
// arithmetic per block (amax, exponent, factor, rounded products,
// conversions) is that of the other MXFP8 kernels, through the same
// helpers: the same bytes.
//
// Shared exponents of one buffer: esr, the rowwise ones in the swizzled
// block's order (byte (r % 32) * 16 + (r / 32) * 4 + b for macro row r,
// block b: word (r % 32) * 4 + r / 32 holds row r's 4 bytes); ecl, the
// columnwise ones as 4 rows x 128 columns; ecs, the columnwise ones in the
// swizzled (transposed) block's order, byte (c % 32) * 16 + (c / 32) * 4 +
// band.
#define KQ_MXM_ESR 0
#define KQ_MXM_ECL 512
#define KQ_MXM_ECS 1024
#define KQ_MXM_BUF 1536

// kq_mxm_cvt4 converts 4 floats (element k in byte k) with kq_cvt2's
// rounding: on sm_89 and newer the two paired conversions write the
// halves of one register (no masks and permutes to join them).
template <int fmt>
KQ_DEV u32 kq_mxm_cvt4(float a, float b, float c, float d) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
	u32 r;
	if (fmt == KQ_E4M3)
		asm("{\n\t.reg .b16 l, h;\n\tcvt.rn.satfinite.e4m3x2.f32 l, %2, %1;\n\tcvt.rn.satfinite.e4m3x2.f32 h, %4, %3;\n\t"
		    "mov.b32 %0, {l, h};\n\t}" : "=r"(r) : "f"(a), "f"(b), "f"(c), "f"(d));
	else
		asm("{\n\t.reg .b16 l, h;\n\tcvt.rn.satfinite.e5m2x2.f32 l, %2, %1;\n\tcvt.rn.satfinite.e5m2x2.f32 h, %4, %3;\n\t"
		    "mov.b32 %0, {l, h};\n\t}" : "=r"(r) : "f"(a), "f"(b), "f"(c), "f"(d));
	return r;
#else
	return kq_cvt2<fmt>(a, b) | (kq_cvt2<fmt>(c, d) << 16);
#endif
}

// kq_mxm_cvt8 converts the 8 values of 4 pair words v (word k: the lane's
// columns 2k, 2k + 1) with kq_mxm_cvt4 to 8 codes (element j in byte j):
// the low element of word k times flo[k], the high one times fhi[k] (a
// rowwise block's one factor in all, or the columns' own factors).
template <int fmt, typename H>
KQ_DEV uint2 kq_mxm_cvt8(H tag, const u32 (&v)[4], const float (&flo)[4], const float (&fhi)[4]) {
	u32 o[2];
#pragma unroll
	for (int k = 0; k < 2; k++) {
		const u32 w0 = v[2 * k], w1 = v[2 * k + 1];
		o[k] = kq_mxm_cvt4<fmt>(__fmul_rn(kq_plo(tag, w0), flo[2 * k]), __fmul_rn(kq_phi(tag, w0), fhi[2 * k]),
			__fmul_rn(kq_plo(tag, w1), flo[2 * k + 1]), __fmul_rn(kq_phi(tag, w1), fhi[2 * k + 1]));
	}
	return make_uint2(o[0], o[1]);
}

// A rowwise block's amax, from the lane's 4 pair words of |x| a, is the
// paired max over them (kq_mxm_row_pmax), then over its 3 partners (the
// shuffles with lanes cg ^ 1, then ^ 2), then of the two halves
// (kq_mxm_row_fin). The paired max returns the other operand when one is
// NaN; the max with 0 at the end turns an all-NaN block into amax 0, as
// the accumulators starting at 0 elsewhere do. kq_mxm_row_exps and
// kq_mxfp8_rowb take these steps for several rows at once.
template <typename H>
KQ_DEV u32 kq_mxm_row_pmax(H tag, const u32 (&a)[4]) {
	return kq_pmax(tag, kq_pmax(tag, a[0], a[1]), kq_pmax(tag, a[2], a[3]));
}
template <typename H>
KQ_DEV float kq_mxm_row_fin(H tag, u32 m) {
	m = kq_pmax(tag, m, 0u);
	return fmaxf(kq_plo(tag, m), kq_phi(tag, m));
}
// kq_mxm_row_exps finishes G rows' blocks at once from the lane's paired
// maxima m (kq_mxm_row_pmax): the max over its 3 partners, the block amax
// into the tensor amax tm, and each block's E8M0 exponent e. The macro
// tile takes its rows in phases of G through it; kq_mxfp8_rowb's
// reduce-scatter takes the same operands in the same order (own operand
// first, then partner ^ 1's, then ^ 2's).
template <typename H, int fmt, int ocp, int G>
KQ_DEV void kq_mxm_row_exps(H tag, u32 (&m)[G], u32 (&e)[G], float &tm, u32 full) {
#pragma unroll
	for (int j = 0; j < G; j++) m[j] = kq_pmax(tag, m[j], __shfl_xor_sync(full, m[j], 1));
#pragma unroll
	for (int j = 0; j < G; j++) m[j] = kq_pmax(tag, m[j], __shfl_xor_sync(full, m[j], 2));
#pragma unroll
	for (int j = 0; j < G; j++) {
		const float am = kq_mxm_row_fin(tag, m[j]);
		tm = fmaxf(tm, am);
		e[j] = kq_e8m0<fmt, ocp>(am);
	}
}

template <bool FULL>
KQ_DEV void kq_mxm_load(const uint4 *p, long long stride4, bool cin, int rleft, uint4 (&q)[8]) {
	// p: the lane's first row (16-byte units); rleft: the rows from it to the
	// tensor's end; cin: the lane's columns exist.
#pragma unroll
	for (int i = 0; i < 8; i++) {
		if (FULL) {
			q[i] = __ldg(p + i * stride4);
		} else {
			q[i] = make_uint4(0u, 0u, 0u, 0u);
			if (cin && 4 * i < rleft) q[i] = __ldg(p + i * stride4);
		}
	}
}

// The rows kq_mxm_tile's rowwise pass takes through its phases together:
// 4 (no spills at the 128-register bound), 2 below sm_90 (the software
// FP8 conversions; 2 also removes the spills the per-row version had
// there).
#ifndef KQ_MXM_GROUP
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define KQ_MXM_GROUP 2
#else
#define KQ_MXM_GROUP 4
#endif
#endif
template <typename T, int fmt, int ocp, int ops, bool FULL>
KQ_DEV void kq_mxm_tile(const uint4 (&q)[8], int rq, int cg, int qb, int half, bool cin, int rleft, u8 *orow, u8 *ocol,
		long long stride, float &tm, u8 *sm) {
	const T tag = {0};
	const u32 full = 0xFFFFFFFFu;
	u32 cm[4] = {0u, 0u, 0u, 0u};
	// The rows in groups of KQ_MXM_GROUP, in phases: the
	// |x| words (the column maxima take them in row order), the rows'
	// paired maxima, the two shuffle rounds, the exponents, the shared
	// exponent bytes, the codes; the same operations per row as one row's
	// block amax (above kq_mxm_row_pmax), with no branch between the rows'
	// chains.
	constexpr int G = KQ_MXM_GROUP;
#pragma unroll
	for (int g = 0; g < 8; g += G) {
		u32 m[G];
#pragma unroll
		for (int j = 0; j < G; j++) {
			const uint4 &w = q[g + j];
			const u32 a[4] = {w.x & KQ_MX2_ABS, w.y & KQ_MX2_ABS, w.z & KQ_MX2_ABS, w.w & KQ_MX2_ABS};
			if (ops & KQ_MX_COL) {
#pragma unroll
				for (int k = 0; k < 4; k++) cm[k] = kq_pmax(tag, cm[k], a[k]);
			}
			if (ops & KQ_MX_ROW) m[j] = kq_mxm_row_pmax(tag, a);
		}
		if (!(ops & KQ_MX_ROW)) continue;
		// The row blocks' amaxes over the lane and its 3 partners.
		u32 e[G];
		kq_mxm_row_exps<T, fmt, ocp, G>(tag, m, e, tm, full);
		if ((cg & 3) == 0) {
#pragma unroll
			for (int j = 0; j < G; j++) sm[KQ_MXM_ESR + (rq + 4 * (g + j)) * 16 + qb * 4 + half * 2 + (cg >> 2)] = (u8)e[j];
		}
#pragma unroll
		for (int j = 0; j < G; j++) {
			const int i = g + j;
			if (FULL || (cin && 4 * i < rleft)) {
				const u32 v[4] = {q[i].x, q[i].y, q[i].z, q[i].w};
				const float f = kq_e8m0_encode_factor(e[j]);
				const float fs[4] = {f, f, f, f};
				*reinterpret_cast<uint2 *>(orow + i * stride) = kq_mxm_cvt8<fmt>(tag, v, fs, fs);
			}
		}
	}
	if (!(ops & KQ_MX_COL)) return;
	// Columnwise: reduce-scatter the 4 column-pair amaxes over the lanes
	// ^16 and ^8 (as kq_mx_tile): own holds columns 8cg + 2rq, + 1.
	const u32 own = kq_mx_col_own(tag, cm, rq, full);
	const float a0 = kq_plo(tag, own), a1 = kq_phi(tag, own);
	if (!(ops & KQ_MX_ROW)) tm = fmaxf(tm, fmaxf(a0, a1));
	const u32 e0 = kq_e8m0<fmt, ocp>(a0), e1 = kq_e8m0<fmt, ocp>(a1);
	const float f0 = kq_e8m0_encode_factor(e0), f1 = kq_e8m0_encode_factor(e1);
	{
		const int cc = half * 64 + cg * 8 + 2 * rq; // even: cc and cc + 1 share cc / 32
		*reinterpret_cast<u16 *>(sm + KQ_MXM_ECL + qb * 128 + cc) = (u16)(e0 | (e1 << 8));
		u8 *s = sm + KQ_MXM_ECS + (cc & 31) * 16 + (cc >> 5) * 4 + qb;
		s[0] = (u8)e0;
		s[16] = (u8)e1;
	}
	float g0[4], g1[4];
	kq_mx_col_factors(f0, f1, cg, full, g0, g1);
#pragma unroll
	for (int i = 0; i < 8; i++) {
		const bool live = FULL || (cin && 4 * i < rleft);
		if (!live) continue;
		const u32 v[4] = {q[i].x, q[i].y, q[i].z, q[i].w};
		*reinterpret_cast<uint2 *>(ocol + i * stride) = kq_mxm_cvt8<fmt>(tag, v, g0, g1);
	}
}

// KQ_MXM_STAGE: two macro tiles in flight a block instead of one. The
// prefetch alternates between the registers (even rounds of the block:
// tiles 0, 2, 4, ... are loaded into nx as before) and the warps' staging
// slots in shared memory (odd rounds: cp.async, 16 bytes a lane and row,
// zero-filled where kq_mxm_load loads zero), each issued two rounds ahead,
// so that while a warp converts tile k, tiles k+1 and k+2 are on their way
// (8 KiB a warp, 128 KiB a SM at 2 blocks; a one-tile pipeline of
// 64 KiB reached 69-81% DRAM throughput). A lane reads back only its
// own slots, after cp.async.wait_all, and overwrites them (the next
// cp.async) only after it has read them, so no barrier is needed; the
// tile's values are the ones kq_mxm_load gives, so the bytes are the same.
// 0 restores the register-only prefetch.
#ifndef KQ_MXM_STAGE
#define KQ_MXM_STAGE 1
#endif
// The staging slots: 8 warps x 8 rows x 32 lanes x 16 bytes, after the two
// exponent buffers; KQ_MXM_SMEM is the entry points' shared array.
#define KQ_MXM_STG (KQ_MXM_STAGE ? 8 * 8 * 32 * 16 : 0)
#define KQ_MXM_SMEM (2 * KQ_MXM_BUF + KQ_MXM_STG)

// ops: KQ_MX_ROW, KQ_MX_COL or both; the operands' pointers of the others
// are unused. esm: KQ_MXM_SMEM bytes of shared memory, 16-byte aligned. Scale buffers: sc_row 4-byte aligned, sc_col, swz_row and
// swz_col 16-byte aligned (the launchers check); swz_* NULL skips that
// layout.
template <typename T, int fmt, int ocp, int ops>
KQ_DEV void kq_mxm_impl(const T *x, int rows, int cols, u8 *out_row, u8 *sc_row, u8 *swz_row, int scols_row, u8 *out_col,
		u8 *sc_col, u8 *swz_col, int srows_col, int scols_col, u32 *st, u8 *esm) {
	const int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5);
	const int cg = lane & 7, rq = lane >> 3, qb = warp >> 1, half = warp & 1;
	const int nmc = scols_col / 128, nmr = srows_col / 4;
	const int nmacro = nmr * nmc; // below 2^31: 2^45 elements
	const long long stride4 = 4LL * cols;      // elements from one of the lane's rows to the next
	const long long lstride = stride4 / 8;     // the same in 16-byte units
	float tm = 0.0f;
	// place: the lane's first row and column of macro tile (R, C).
	auto is_full = [&](int R, int C) { return 128 * R + 128 <= rows && 128 * C + 128 <= cols; };
	auto first = [&](int R, int C, int &r0, int &c) {
		r0 = 128 * R + 32 * qb + rq;
		c = 128 * C + 64 * half + 8 * cg;
	};
	auto load = [&](int mi, uint4 (&q)[8]) {
		const int R = mi / nmc, C = mi % nmc;
		int r0, c;
		first(R, C, r0, c);
		const uint4 *p = reinterpret_cast<const uint4 *>(x + (long long)r0 * cols + c);
		if (is_full(R, C)) kq_mxm_load<true>(p, lstride, true, 0, q);
		else kq_mxm_load<false>(p, lstride, c < cols, rows - r0, q);
	};
	// The block's macro tiles of rounds k, k + 1, k + 2 (the first three
	// static, then each claimed three rounds ahead, before the round's
	// barrier).
	kq_tile_order<3> order(st, (int)blockIdx.x, (int)gridDim.x);
	uint4 nx[8];
	if (order.tile(0) < nmacro) load(order.tile(0), nx);
#if KQ_MXM_STAGE
	// The lane's slot for row i is slot[32 * i] (shared address sbase +
	// 512 i): a warp's 32 lanes take 512 contiguous bytes per row.
	uint4 *slot = reinterpret_cast<uint4 *>(esm + 2 * KQ_MXM_BUF) + warp * 256 + lane;
	const u32 sbase = (u32)__cvta_generic_to_shared(slot);
	// stage starts the copies of the lane's rows of macro tile mi into its
	// slots, as load would load them into registers.
	auto stage = [&](int mi) {
		const int R = mi / nmc, C = mi % nmc;
		int r0, c;
		first(R, C, r0, c);
		const T *p = x + (long long)r0 * cols + c;
		const bool full = is_full(R, C), cin = c < cols;
#pragma unroll
		for (int i = 0; i < 8; i++) {
			const bool ok = full || (cin && 4 * i < rows - r0);
			const T *src = ok ? p + i * stride4 : x;
			asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(sbase + 512 * i), "l"(src), "r"(ok ? 16 : 0)
				: "memory");
		}
		asm volatile("cp.async.commit_group;" ::: "memory");
	};
	if (order.tile(1) < nmacro) stage(order.tile(1));
	bool odd = false;
#endif
	int buf = 0;
	while (order.tile(0) < nmacro) {
		order.claim();
		const int cur = order.tile(0), n1 = order.tile(1), n2 = order.tile(2);
		const int R = cur / nmc, C = cur % nmc;
		uint4 cur4[8];
#if KQ_MXM_STAGE
		// Tile k came through the registers (even rounds) or the slots
		// (odd rounds); tile k + 2 takes the same way.
		if (!odd) {
#pragma unroll
			for (int i = 0; i < 8; i++) cur4[i] = nx[i];
			if (n2 < nmacro) load(n2, nx);
		} else {
			asm volatile("cp.async.wait_all;" ::: "memory");
#pragma unroll
			for (int i = 0; i < 8; i++) cur4[i] = slot[32 * i];
			if (n2 < nmacro) stage(n2);
		}
		odd = !odd;
#else
#pragma unroll
		for (int i = 0; i < 8; i++) cur4[i] = nx[i];
		if (n1 < nmacro) load(n1, nx);
#endif
		int r0, c;
		first(R, C, r0, c);
		const long long o0 = (long long)r0 * cols + c;
		u8 *sm = esm + buf * KQ_MXM_BUF;
		u8 *orow = (ops & KQ_MX_ROW) ? out_row + o0 : 0;
		u8 *ocol = (ops & KQ_MX_COL) ? out_col + o0 : 0;
		if (is_full(R, C))
			kq_mxm_tile<T, fmt, ocp, ops, true>(cur4, rq, cg, qb, half, true, 0, orow, ocol, stride4, tm, sm);
		else
			kq_mxm_tile<T, fmt, ocp, ops, false>(cur4, rq, cg, qb, half, c < cols, rows - r0, orow, ocol, stride4, tm, sm);
		__syncthreads();
		order.advance();
		// The macro tile's scales, one store a lane: warp 0 the rowwise
		// matrix (rows 128 R + 32 k + lane, blocks 4C..4C+3), warp 1 its
		// swizzled block, warp 2 the columnwise matrix (rows 4R + lane / 8,
		// 16 columns from 128 C + 16 (lane % 8)), warp 3 its swizzled block.
		if (warp == 0 && (ops & KQ_MX_ROW)) {
			const uint4 w = *reinterpret_cast<const uint4 *>(sm + KQ_MXM_ESR + lane * 16);
			u8 *p = sc_row + (long long)(128 * R + lane) * scols_row + 4 * C;
			const long long s32 = 32LL * scols_row;
			*reinterpret_cast<u32 *>(p) = w.x;
			*reinterpret_cast<u32 *>(p + s32) = w.y;
			*reinterpret_cast<u32 *>(p + 2 * s32) = w.z;
			*reinterpret_cast<u32 *>(p + 3 * s32) = w.w;
		} else if (warp == 1 && (ops & KQ_MX_ROW) && swz_row != 0) {
			*reinterpret_cast<uint4 *>(swz_row + ((long long)R * (scols_row / 4) + C) * 512 + lane * 16) =
				*reinterpret_cast<const uint4 *>(sm + KQ_MXM_ESR + lane * 16);
		} else if (warp == 2 && (ops & KQ_MX_COL)) {
			*reinterpret_cast<uint4 *>(sc_col + (long long)(4 * R + (lane >> 3)) * scols_col + 128 * C + 16 * (lane & 7)) =
				*reinterpret_cast<const uint4 *>(sm + KQ_MXM_ECL + lane * 16);
		} else if (warp == 3 && (ops & KQ_MX_COL) && swz_col != 0) {
			*reinterpret_cast<uint4 *>(swz_col + ((long long)C * (srows_col / 4) + R) * 512 + lane * 16) =
				*reinterpret_cast<const uint4 *>(sm + KQ_MXM_ECS + lane * 16);
		}
		buf ^= 1;
	}
	kq_mxfp8_finish(tm, st);
}

// kq_mxfp8_tiles picks the instantiation of kq_mxm_impl for the format and
// the rounding. The shared exponent buffers are the kernel's (one array
// for every instantiation).
template <typename T, int ops>
KQ_DEV void kq_mxfp8_tiles(const T *x, int rows, int cols, u8 *out_row, u8 *sc_row, u8 *swz_row, int scols_row, u8 *out_col,
		u8 *sc_col, u8 *swz_col, int srows_col, int scols_col, int fmt, int ocp, u32 *st, u8 *esm) {
#define KQ_MXM_ARGS x, rows, cols, out_row, sc_row, swz_row, scols_row, out_col, sc_col, swz_col, srows_col, scols_col, st, esm
	if (fmt == KQ_E4M3 && !ocp) kq_mxm_impl<T, KQ_E4M3, 0, ops>(KQ_MXM_ARGS);
	else if (fmt == KQ_E4M3) kq_mxm_impl<T, KQ_E4M3, 1, ops>(KQ_MXM_ARGS);
	else if (!ocp) kq_mxm_impl<T, KQ_E5M2, 0, ops>(KQ_MXM_ARGS);
	else kq_mxm_impl<T, KQ_E5M2, 1, ops>(KQ_MXM_ARGS);
#undef KQ_MXM_ARGS
}
