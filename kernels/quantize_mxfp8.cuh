// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// quantize_mxfp8.cuh: part of quantize.cu (included once, after the
// per-tensor FP8 cast): the MXFP8 kernels' bodies, one operand (rowwise,
// columnwise) and both in one pass. Not a header of its own: it uses what
// quantize.cu defines before it; the entry points are in quantize.cu.

// ---- MXFP8 ------------------------------------------------------------------

// The swizzled (GEMM) offset of entry (i, j) of a scale matrix with ncols
// columns (docs/quantization-formats.md).
KQ_DEV long long kq_swz(long long i, int j, int ncols) {
	return ((i / 128) * (ncols / 4) + j / 4) * 512 + (i % 32) * 16 + ((i % 128) / 32) * 4 + (j % 4);
}

// The MXFP8 kernels below optionally (swz != NULL) also write each scale
// byte at its GEMM-swizzled position, as kernels.Swizzle would: a rowwise
// [srows, scols] matrix entry (r, kb) at kq_swz(r, kb, scols); a columnwise
// one (rb, c) as its transpose's entry (c, rb), at kq_swz(c, rb, srows).
// That saves the standalone swizzle launch per operand.

// Rowwise: one warp per 1x32 block, over the padded scale matrix
// [srows, scols]; padding entries get scale 0.
template <typename T>
KQ_DEV void kq_mxfp8_row_impl(const T *x, int rows, int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {
	float tm = 0.0f;
	u32 lane = threadIdx.x & 31u;
	long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
	long long ntasks = (long long)srows * scols;
	int nblk = (cols + 31) / 32;
	for (long long t = warp; t < ntasks; t += nwarps) {
		int r = (int)(t / scols), kb = (int)(t % scols);
		if (r >= rows || kb >= nblk) {
			if (lane == 0u) {
				scales[t] = 0;
				if (swz != 0) swz[kq_swz(r, kb, scols)] = 0;
			}
			continue;
		}
		int c = kb * 32 + (int)lane;
		bool in = c < cols;
		long long i = (long long)r * cols + c;
		float v = in ? kq_f32(x[i]) : 0.0f;
		float amax = kq_warp_max(fabsf(v));
		tm = fmaxf(tm, amax);
		u32 e = ocp ? kq_e8m0_ocp(amax, fmt) : kq_e8m0_te(amax, fmt);
		if (in) out[i] = (u8)kq_cvt1(__fmul_rn(v, kq_e8m0_encode_factor(e)), fmt);
		if (lane == 0u) {
			scales[t] = (u8)e;
			if (swz != 0) swz[kq_swz(r, kb, scols)] = (u8)e;
		}
	}
	kq_mxfp8_finish(tm, st);
}

// Columnwise: one thread per 32x1 block, over the padded scale matrix
// [srows, scols]; the data keeps the input's [rows, cols] layout.
template <typename T>
KQ_DEV void kq_mxfp8_col_impl(const T *x, int rows, int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {
	float tm = 0.0f;
	long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	long long nthreads = (long long)gridDim.x * blockDim.x;
	long long ntasks = (long long)srows * scols;
	int nrb = (rows + 31) / 32;
	for (long long t = tid; t < ntasks; t += nthreads) {
		int rb = (int)(t / scols), c = (int)(t % scols);
		if (rb >= nrb || c >= cols) {
			scales[t] = 0;
			if (swz != 0) swz[kq_swz(c, rb, srows)] = 0;
			continue;
		}
		float v[32];
		float amax = 0.0f;
#pragma unroll
		for (int k = 0; k < 32; k++) {
			int r = rb * 32 + k;
			v[k] = r < rows ? kq_f32(x[(long long)r * cols + c]) : 0.0f;
			amax = fmaxf(amax, fabsf(v[k]));
		}
		tm = fmaxf(tm, amax);
		u32 e = ocp ? kq_e8m0_ocp(amax, fmt) : kq_e8m0_te(amax, fmt);
		float f = kq_e8m0_encode_factor(e);
#pragma unroll
		for (int k = 0; k < 32; k++) {
			int r = rb * 32 + k;
			if (r < rows) out[(long long)r * cols + c] = (u8)kq_cvt1(__fmul_rn(v[k], f), fmt);
		}
		scales[t] = (u8)e;
		if (swz != 0) swz[kq_swz(c, rb, srows)] = (u8)e;
	}
	kq_mxfp8_finish(tm, st);
}

// Rowwise with 16-byte loads: a warp takes chunks of KQ_UNROLL x 32
// consecutive 8-element groups of one padded row (scols blocks of 32, i.e.
// 4 scols groups per row; the chunks of a row run past its end into
// inactive lanes), so that each of its KQ_UNROLL loads per lane reads 512
// contiguous bytes and all are issued before the first is used. Four
// consecutive lanes share a 1x32 block. The chunk's row and position are
// advanced by the warp stride, with no division per chunk. (The first
// version took one group per thread and iteration: one 16-byte load in
// flight per thread, 61% of copy bandwidth on an H200; unrolled over grid
// strides it kept 64-bit row and group arrays that spilled.)
#define KQ_ROW_CHUNK (KQ_UNROLL * 32)
template <typename T>
KQ_DEV void kq_mxfp8_row8_impl(const T *x, int rows, int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {
	float tm = 0.0f;
	int lane = (int)(threadIdx.x & 31u);
	int gpr = scols * 4; // 8-element groups per padded row
	int cpr = (gpr + KQ_ROW_CHUNK - 1) / KQ_ROW_CHUNK;
	long long nchunks = (long long)srows * cpr;
	long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
	long long r = warp / cpr;
	int kc = (int)(warp % cpr);
	const long long dr = nwarps / cpr;
	const int dk = (int)(nwarps % cpr);
	for (long long ck = warp; ck < nchunks; ck += nwarps) {
		int j0 = kc * KQ_ROW_CHUNK + lane;
		const T *xr = x + r * cols;
		float v[KQ_UNROLL][8];
#pragma unroll
		for (int u = 0; u < KQ_UNROLL; u++) {
			int c = (j0 + 32 * u) * 8;
			if (r < rows && c < cols) kq_load8(xr, c / 8, v[u]);
			else kq_zero8(v[u]);
		}
#pragma unroll
		for (int u = 0; u < KQ_UNROLL; u++) {
			int j = j0 + 32 * u, c = j * 8;
			bool in = r < rows && c < cols;
			float m = 0.0f;
#pragma unroll
			for (int k = 0; k < 8; k++) m = fmaxf(m, fabsf(v[u][k]));
			m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 1));
			m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, 2));
			tm = fmaxf(tm, m);
			u32 e = ocp ? kq_e8m0_ocp(m, fmt) : kq_e8m0_te(m, fmt);
			if (in) {
				float f = kq_e8m0_encode_factor(e);
				float fs[8] = {f, f, f, f, f, f, f, f};
				*reinterpret_cast<uint2 *>(out + r * cols + c) = kq_cvt8(v[u], fs, fmt);
			}
			if (j < gpr && (j & 3) == 0) {
				const u8 sv = in ? (u8)e : (u8)0;
				scales[r * scols + j / 4] = sv;
				if (swz != 0) swz[kq_swz(r, j / 4, scols)] = sv;
			}
		}
		r += dr;
		kc += dk;
		if (kc >= cpr) {
			kc -= cpr;
			r++;
		}
	}
	kq_mxfp8_finish(tm, st);
}

// Columnwise: one thread per 32x8 patch; the amax pass and the convert pass
// each read the patch (the second read mostly hits in L1/L2).
template <typename T>
KQ_DEV void kq_mxfp8_col8_impl(const T *x, int rows, int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {
	float tm = 0.0f;
	long long gpr = scols / 8;
	long long ntasks = (long long)srows * gpr;
	long long nthreads = (long long)gridDim.x * blockDim.x;
	int nrb = (rows + 31) / 32;
	for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < ntasks; t += nthreads) {
		int rb = (int)(t / gpr), c = (int)(t % gpr) * 8;
		u8 *sp = scales + (long long)rb * scols + c;
		if (rb >= nrb || c >= cols) {
			*reinterpret_cast<uint2 *>(sp) = make_uint2(0u, 0u);
			if (swz != 0) {
#pragma unroll
				for (int k = 0; k < 8; k++) swz[kq_swz(c + k, rb, srows)] = 0;
			}
			continue;
		}
		int r0 = rb * 32, r1 = min(rows, r0 + 32);
		float m[8] = {0, 0, 0, 0, 0, 0, 0, 0};
		for (int r = r0; r < r1; r++) {
			float v[8];
			kq_load8(x, ((long long)r * cols + c) / 8, v);
#pragma unroll
			for (int k = 0; k < 8; k++) m[k] = fmaxf(m[k], fabsf(v[k]));
		}
		float f[8];
		u32 e[8];
#pragma unroll
		for (int k = 0; k < 8; k++) {
			tm = fmaxf(tm, m[k]);
			e[k] = ocp ? kq_e8m0_ocp(m[k], fmt) : kq_e8m0_te(m[k], fmt);
			f[k] = kq_e8m0_encode_factor(e[k]);
		}
		for (int r = r0; r < r1; r++) {
			float v[8];
			kq_load8(x, ((long long)r * cols + c) / 8, v);
			*reinterpret_cast<uint2 *>(out + (long long)r * cols + c) = kq_cvt8(v, f, fmt);
		}
		*reinterpret_cast<uint2 *>(sp) = make_uint2(e[0] | (e[1] << 8) | (e[2] << 16) | (e[3] << 24),
			e[4] | (e[5] << 8) | (e[6] << 16) | (e[7] << 24));
		if (swz != 0) {
#pragma unroll
			for (int k = 0; k < 8; k++) swz[kq_swz(c + k, rb, srows)] = (u8)e[k];
		}
	}
	kq_mxfp8_finish(tm, st);
}

// Columnwise through shared memory, for cols % 8 == 0 with a 16-byte
// aligned input and 8-byte aligned output: a block of 256 threads owns a
// tile of 32 rows (one row of scales) x 256 columns. It reads the tile once
// with 16-byte loads along the rows, each thread then takes one column's
// amax and exponent from shared memory, and the threads convert the tile
// row by row with 8-byte stores. (col8 above reads its input twice, and at
// large sizes the second read misses the caches.) Blocks stride over the
// tiles; the same bytes as col8.
#define KQ_CT_COLS 256
#define KQ_CT_PITCH (KQ_CT_COLS + 4)
template <typename T>
KQ_DEV void kq_mxfp8_colt_impl(const T *x, int rows, int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {
	__shared__ __align__(16) float tile[32 * KQ_CT_PITCH];
	__shared__ float fac[KQ_CT_COLS];
	float tm = 0.0f;
	u32 tid = threadIdx.x;
	int nrb = (rows + 31) / 32;
	int nct = (scols + KQ_CT_COLS - 1) / KQ_CT_COLS;
	long long ntiles = (long long)srows * nct;
	for (long long tl = blockIdx.x; tl < ntiles; tl += gridDim.x) {
		int rb = (int)(tl / nct), c0 = (int)(tl % nct) * KQ_CT_COLS;
		int r0 = rb * 32;
		// The tile, zero outside the tensor.
#pragma unroll
		for (int k = 0; k < 4; k++) {
			int tr = k * 8 + (int)(tid >> 5), tc = (int)(tid & 31u) * 8;
			int r = r0 + tr, c = c0 + tc;
			float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
			if (rb < nrb && r < rows && c < cols) kq_load8(x, ((long long)r * cols + c) / 8, v);
			float4 *d = reinterpret_cast<float4 *>(tile + tr * KQ_CT_PITCH + tc);
			d[0] = make_float4(v[0], v[1], v[2], v[3]);
			d[1] = make_float4(v[4], v[5], v[6], v[7]);
		}
		__syncthreads();
		// One column per thread: amax, exponent, factor, scale byte.
		{
			int c = c0 + (int)tid;
			float a = 0.0f;
#pragma unroll
			for (int k = 0; k < 32; k++) a = fmaxf(a, fabsf(tile[k * KQ_CT_PITCH + tid]));
			tm = fmaxf(tm, a);
			u32 e = ocp ? kq_e8m0_ocp(a, fmt) : kq_e8m0_te(a, fmt);
			fac[tid] = kq_e8m0_encode_factor(e);
			if (c < scols) {
				const u8 sv = (rb < nrb && c < cols) ? (u8)e : (u8)0;
				scales[(long long)rb * scols + c] = sv;
				if (swz != 0) swz[kq_swz(c, rb, srows)] = sv;
			}
		}
		__syncthreads();
		// Convert with each column's factor.
#pragma unroll
		for (int k = 0; k < 4; k++) {
			int tr = k * 8 + (int)(tid >> 5), tc = (int)(tid & 31u) * 8;
			int r = r0 + tr, c = c0 + tc;
			if (rb < nrb && r < rows && c < cols) {
				const float *sv = tile + tr * KQ_CT_PITCH + tc;
				float v[8], f[8];
#pragma unroll
				for (int e = 0; e < 8; e++) {
					v[e] = sv[e];
					f[e] = fac[tc + e];
				}
				*reinterpret_cast<uint2 *>(out + (long long)r * cols + c) = kq_cvt8(v, f, fmt);
			}
		}
		// The next tile overwrites the shared tile and factors.
		__syncthreads();
	}
	kq_mxfp8_finish(tm, st);
}

// ---- MXFP8, both operands in one pass ---------------------------------------

// Pairs of 16-bit inputs in one 32-bit register. The fused kernel below keeps
// its tile in registers as the input's own bits (half the registers of
// float32) and takes block amaxes with the paired max instructions: the
// largest |x| over values held exactly in the input type is itself such a
// value, so the paired max is exact; like fmaxf it returns the other operand
// when one is NaN (no .NaN modifier), so NaN never raises an amax; and
// without .ftz subnormals count. The sign bits are cleared first (|x|).
// The paired max is kq_pmax (kq_mx.cuh).
// A select on values: a conditional on two array elements is an lvalue, a
// select of their addresses, which would put the array in local memory.
KQ_DEV u32 kq_pick(bool b, u32 x, u32 y) { return b ? x : y; }
// kq_plo and kq_phi (kq_common.cuh) widen the elements of a pair.
// kq_mx_col_own reduce-scatters the lane's 4 column-pair amaxes cm (paired
// |x| maxima; word k: columns c + 2k, c + 2k + 1) over the lanes ^16 and
// ^8 (lane (rq, cg) = 8rq + cg): each step keeps half the words (the half
// named by the lane's bit of rq) and takes the partner's copy of that
// half; what is left, returned, is word rq over the four lanes of the
// column group. The one reduction of kq_mx_tile and kq_mxm_tile.
template <typename H>
KQ_DEV u32 kq_mx_col_own(H tag, const u32 (&cm)[4], int rq, u32 full) {
	u32 h[2];
	bool b = (rq & 2) != 0;
#pragma unroll
	for (int k = 0; k < 2; k++) {
		u32 keep = kq_pick(b, cm[k + 2], cm[k]), send = kq_pick(b, cm[k], cm[k + 2]);
		h[k] = kq_pmax(tag, keep, __shfl_xor_sync(full, send, 16));
	}
	b = (rq & 1) != 0;
	u32 keep = kq_pick(b, h[1], h[0]), send = kq_pick(b, h[0], h[1]);
	return kq_pmax(tag, keep, __shfl_xor_sync(full, send, 8));
}
// kq_mx_col_factors gathers the columnwise factors of the lane's words
// after kq_mx_col_own: word k (columns c + 2k, c + 2k + 1) takes f0 (low
// column) and f1 (high) from lane (rq, cg) = (k, cg).
KQ_DEV void kq_mx_col_factors(float f0, float f1, int cg, u32 full, float (&g0)[4], float (&g1)[4]) {
#pragma unroll
	for (int k = 0; k < 4; k++) {
		g0[k] = __shfl_sync(full, f0, k * 8 + cg);
		g1[k] = __shfl_sync(full, f1, k * 8 + cg);
	}
}

// Rowwise (1x32) and columnwise (32x1) MXFP8 of one [rows, cols] 16-bit
// tensor in one pass over the input, for cols % 8 == 0 with a 16-byte
// aligned input, 8-byte aligned outputs and 2-byte aligned scale matrices
// (the launcher checks). The two kernels above read the input once each;
// this one reads it once for both, which is what bounds the step (2 bytes
// read per 2 bytes written, against 4 per 2).
//
// A warp owns a 32x64 tile: one columnwise block of rows, two rowwise blocks
// of columns. Lane (rq, cg) = (lane / 8, lane % 8) holds tile rows rq + 4i
// (i = 0..7) and columns 8cg..8cg+7, one 16-byte load per row: a warp load
// covers four whole 128-byte row segments. The four lanes of one cg / 4
// and rq share a rowwise block: two shuffles give its amax, and each row's
// 8 rowwise codes are stored (8 bytes) as soon as its factor is known. A
// column's 32 values sit in the lane's 8 rows and in lanes ^8 and ^16: a
// reduce-scatter over those leaves each lane the amax of 2 of its 8 columns
// (word rq of its 4 pairs), so a lane computes 2 column exponents, writes
// those 2 scale bytes (one 2-byte store; the warp's 32 stores cover the
// tile's 64 columnwise scale bytes), and fetches the 8 column factors it
// needs by shuffles. Only the input pairs (32 registers) stay live across
// the tile. (The first version gave a lane 4 rows x 16 columns and kept 32
// output words live as well: at its 64-register bound ptxas spilled ~250
// bytes per thread, and it ran at 44-47% of copy bandwidth on an H200.) No
// shared memory and no barrier inside the loop: warps stride over the tiles
// on their own, and the block meets once, at the end, for the tensor amax.
//
// The tiles cover the padded scale matrices exactly: the rowwise
// [roundup(rows,128), roundup(ceil(cols/32),4)] and the columnwise
// [roundup(ceil(rows/32),4), roundup(cols,128)] both span
// roundup(rows,128) x roundup(cols,128) elements. So each scale byte,
// padding included, is written by exactly one lane, and tiles past the
// tensor load nothing and write zero scales. The arithmetic per block (the
// E8M0 rules, the factor, the rounded products and conversions) is that of
// the one-operand kernels, through the same helpers: the same bytes.
//
// The format and the scale rounding are template parameters (the entry
// point picks the instantiation) so that the 64 conversions and 10
// exponents per lane and tile carry no branch on them.
#define KQ_MX2_ABS 0x7FFF7FFFu
// ops selects the operands: KQ_MX_ROW, KQ_MX_COL or both. With one of
// them it is the one-operand MXFP8 of 16-bit inputs in the same tiles (the
// columnwise-only kernel, kq_mxfp8_colw, replaces the shared-memory colt
// for them).
#define KQ_MX_ROW 1
#define KQ_MX_COL 2
//
// pf: prefetch. The warp issues the next tile's 8 loads as soon as it has
// the current tile's data, so that its loads stay in flight while it
// converts (about 650 instructions a tile, as long as a load's latency at
// 6 warps a scheduler): with it, 32 more registers and 2 blocks per SM;
// without it, 3 blocks per SM and loads in flight only between tiles (the
// first measured version: 74-77% of copy bandwidth on an H200).
template <typename T>
KQ_DEV void kq_mx_load_tile(const T *x, int rows, int cols, int rb, int ct, int rq, int cg, bool live, uint4 q[8]) {
	int r0 = rb * 32 + rq, c = ct * 64 + cg * 8;
	const T *p = x + (long long)r0 * cols + c;
#pragma unroll
	for (int i = 0; i < 8; i++) {
		q[i] = make_uint4(0u, 0u, 0u, 0u);
		if (live && r0 + 4 * i < rows && c < cols) q[i] = *reinterpret_cast<const uint4 *>(p + i * 4LL * cols);
	}
}
// kq_mx_words spreads a loaded tile's 8 rows into words.
KQ_DEV void kq_mx_words(const uint4 (&q)[8], u32 (&v)[8][4]) {
#pragma unroll
	for (int i = 0; i < 8; i++) {
		v[i][0] = q[i].x; v[i][1] = q[i].y; v[i][2] = q[i].z; v[i][3] = q[i].w;
	}
}
// kq_mx_tile is the arithmetic of one 32x64 tile, shared by
// kq_mxfp8_both_impl and the grouped kq_grp_mx2_impl, which differ only in
// where a tile lies: v holds the lane's rows rq + 4i (i = 0..7), columns
// c..c+7, as pairs; live(i) says whether row i is data (its codes are
// stored); bin whether the lane's rowwise block of columns is in the
// tensor, colin whether the tile's band of 32 rows is; o0 is the element
// offset of the lane's first row. put_row(i, e) stores row i's rowwise
// scale byte (lanes cg % 4 == 0; zero outside the tensor), put_col(cc, w)
// the columnwise scale bytes of columns cc and cc + 1 (w's low and high
// byte; zero outside the tensor). tm rises to the largest block amax.
template <typename T, int fmt, int ocp, int ops, typename Live, typename RowScale, typename ColScale>
KQ_DEV void kq_mx_tile(const u32 (&v)[8][4], int cg, int rq, int c, int cols, bool cin, bool bin, bool colin, u8 *out_row,
		u8 *out_col, long long o0, long long stride4, float &tm, Live live, RowScale put_row, ColScale put_col) {
	const T tag = {0};
	const u32 full = 0xFFFFFFFFu;
	// Rowwise: the amax of each row's 8 values, then of the block's 32;
	// the exponent, the factor, the codes, and the scale byte (zero in the
	// padding), written by lane cg % 4 == 0.
	u32 cm[4] = {0u, 0u, 0u, 0u};
#pragma unroll
	for (int i = 0; i < 8; i++) {
		u32 m = 0u;
#pragma unroll
		for (int k = 0; k < 4; k++) {
			u32 a = v[i][k] & KQ_MX2_ABS;
			m = kq_pmax(tag, m, a);
			cm[k] = kq_pmax(tag, cm[k], a);
		}
		if (!(ops & KQ_MX_ROW)) continue;
		float am = fmaxf(kq_plo(tag, m), kq_phi(tag, m));
		am = fmaxf(am, __shfl_xor_sync(full, am, 1));
		am = fmaxf(am, __shfl_xor_sync(full, am, 2));
		tm = fmaxf(tm, am);
		u32 e = kq_e8m0<fmt, ocp>(am);
		float f = kq_e8m0_encode_factor(e);
		if ((cg & 3) == 0) put_row(i, (live(i) && bin) ? (u8)e : (u8)0);
		if (live(i) && cin) {
			u32 o[2];
#pragma unroll
			for (int k = 0; k < 2; k++) {
				u32 w0 = v[i][2 * k], w1 = v[i][2 * k + 1];
				o[k] = kq_cvt2(__fmul_rn(kq_plo(tag, w0), f), __fmul_rn(kq_phi(tag, w0), f), fmt) |
				       (kq_cvt2(__fmul_rn(kq_plo(tag, w1), f), __fmul_rn(kq_phi(tag, w1), f), fmt) << 16);
			}
			*reinterpret_cast<uint2 *>(out_row + o0 + i * stride4) = make_uint2(o[0], o[1]);
		}
	}
	if (!(ops & KQ_MX_COL)) return;
	// Columnwise: reduce-scatter the 4 column-pair amaxes (kq_mx_col_own).
	const u32 own = kq_mx_col_own(tag, cm, rq, full);
	// own holds columns c + 2rq and c + 2rq + 1 (both in the tensor or
	// neither: cols is even).
	float a0 = kq_plo(tag, own), a1 = kq_phi(tag, own);
	// Without the rowwise pass, the columns' amaxes cover the tile.
	if (!(ops & KQ_MX_ROW)) tm = fmaxf(tm, fmaxf(a0, a1));
	u32 e0 = kq_e8m0<fmt, ocp>(a0), e1 = kq_e8m0<fmt, ocp>(a1);
	float f0 = kq_e8m0_encode_factor(e0), f1 = kq_e8m0_encode_factor(e1);
	{
		const int cc = c + 2 * rq;
		put_col(cc, (colin && cc < cols) ? (e0 | (e1 << 8)) : 0u);
	}
	float g0[4], g1[4];
	kq_mx_col_factors(f0, f1, cg, full, g0, g1);
#pragma unroll
	for (int i = 0; i < 8; i++) {
		if (!live(i) || !cin) continue;
		u32 o[2];
#pragma unroll
		for (int k = 0; k < 2; k++) {
			u32 w0 = v[i][2 * k], w1 = v[i][2 * k + 1];
			o[k] = kq_cvt2(__fmul_rn(kq_plo(tag, w0), g0[2 * k]), __fmul_rn(kq_phi(tag, w0), g1[2 * k]), fmt) |
			       (kq_cvt2(__fmul_rn(kq_plo(tag, w1), g0[2 * k + 1]), __fmul_rn(kq_phi(tag, w1), g1[2 * k + 1]), fmt) << 16);
		}
		*reinterpret_cast<uint2 *>(out_col + o0 + i * stride4) = make_uint2(o[0], o[1]);
	}
}
