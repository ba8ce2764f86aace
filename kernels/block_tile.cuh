// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// block_tile.cuh: part of block.cu (included once, after the rowwise
// kernel): the 128x128 tile kernel body (columnwise 128x1 with or without
// the rowwise 1x128 operand, and 128x128 weight tiles) and its shared
// memory. Not a header of its own: it uses what block.cu defines before it;
// the entry points are in block.cu.

// Shared memory of a 128x128 tile: per-warp column amaxes, the 128 row and
// 128 column scales, and the transposed codes: the codes of tile column k
// for tile rows 8p+4h..8p+4h+3 are word 2(p ^ (k/8)) + (h ^ (p&1)) of
// tr[k], so that a warp's 32 lanes, which write one word each of 16
// different column groups and two runs, and a half-warp's 16 lanes, which
// read the 16 runs of one column as 8-byte pairs, all hit distinct banks.
struct __align__(16) kq_tile_smem {
	float cpart[8][128];
	float rscale[128];
	float cscale[128];
	u32 tr[128][32];
};

// One 128x128 tile per block of 256 threads. Thread t owns tile columns
// 8*(t%16) .. +7 of tile rows 8*(t/16) .. +7, loaded once (eight 16-byte
// loads of BF16 in flight).
//
// TILE2D false (1x128 / 128x1): with out_row, the rowwise operand's codes
// and scales [nkb, roundup(rows,4)] entry (kb, m); with out_col, the
// columnwise operand's transposed codes [cols, rows] and scales
// [ceil(rows/128), roundup(cols,4)] entry (mb, k). Either may be NULL.
// TILE2D true (128x128): one scale per tile; rowwise scales
// [ceil(rows/128), roundup(nkb,4)] entry (mb, kb), columnwise [nkb,
// roundup(nmb,4)] entry (kb, mb).
//
// Grouped (offsets != NULL): the tile lies in one group g (groups are
// multiples of 128 rows); its transposed codes go to group g's [cols, n_g]
// matrix at cols*offsets[g]. TILE2D false: its rowwise scales go to group
// g's [nkb, n_g] matrix at nkb*offsets[g]; the columnwise scales of
// 128-row aligned groups concatenate to the plain [rows/128,
// roundup(cols,4)] matrix. TILE2D true: the rowwise [n_g/128,
// roundup(nkb,4)] matrices concatenate to the plain one; the columnwise
// [nkb, roundup(n_g/128,4)] matrix of group g goes to float offset nkb *
// P_g, P_g = sum over h < g of roundup(n_h/128,4) (summed by warp 0 from
// the offsets), padding zero; scols_col is then the buffer's capacity in
// such columns (Pmax), and the tiles of the last tile row zero the tail
// [nkb*P_ngroups, nkb*Pmax) so that what a split vector leaves unwritten
// is the same from run to run.
template <typename T, int FMT, bool TILE2D>
__device__ __forceinline__ void kq_blk_tile(kq_tile_smem &sm, const T *x, int rows, int cols, u8 *out_row,
		float *sinv_row, int scols_row, u8 *out_col, float *sinv_col, int scols_col, float eps, int pow2,
		int vec, const int *offsets, int ngroups, const int *flag) {
	if (flag != 0 && *flag != 0) return;
	const float fp8max = FMT == 0 ? KQ_E4M3_MAX : KQ_E5M2_MAX;
	const int kb = blockIdx.x, mb = blockIdx.y;
	const int nkb = gridDim.x, nmb = gridDim.y;
	const int m0 = mb * 128, kt0 = kb * 128;
	if (offsets != 0 && m0 >= offsets[ngroups]) return;
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const int cc = tid & 15, r = tid >> 4;
	const int k0 = kt0 + cc * 8, mr = m0 + r * 8;
	const bool fast = (vec & KQ_VEC_LOAD) != 0 && k0 + 8 <= cols;
	kq_raw8 raw[8];
	kq_ldrows(x, rows, cols, mr, k0, fast, true, raw);
	int goff = 0, gn = rows, g = 0;
	if (offsets != 0) {
		g = kq_group(offsets, ngroups, m0);
		goff = offsets[g];
		gn = offsets[g + 1] - goff;
	}
	// Amaxes: per row (over the half-warp) and per column (over the tile),
	// or over the whole tile.
	// 16-bit inputs take them as packed pairs from the raw bits (kq_hmax2):
	// the column pairs (2k, 2k+1) of the patch in cp[k], the whole patch
	// in tp; float32 ones element by element.
	float ra[8], ca[8], ta = 0.0f;
	u32 cp[4] = {0u, 0u, 0u, 0u};
#pragma unroll
	for (int j = 0; j < 8; j++) ca[j] = 0.0f;
	if constexpr (sizeof(T) == 2) {
		const T *t = 0;
		u32 tp = 0u;
#pragma unroll
		for (int u = 0; u < 8; u++) {
			const u32 w[4] = {raw[u].a.x & KQ_ABS2, raw[u].a.y & KQ_ABS2, raw[u].a.z & KQ_ABS2, raw[u].a.w & KQ_ABS2};
			if (TILE2D) {
				tp = kq_hmax2(t, tp, kq_hmax2(t, kq_hmax2(t, w[0], w[1]), kq_hmax2(t, w[2], w[3])));
			} else {
				ra[u] = out_row != 0 ? kq_hmax_f32<T>(kq_hmax2(t, kq_hmax2(t, w[0], w[1]), kq_hmax2(t, w[2], w[3]))) : 0.0f;
#pragma unroll
				for (int k = 0; k < 4; k++) cp[k] = kq_hmax2(t, cp[k], w[k]);
			}
		}
		ta = kq_hmax_f32<T>(tp);
	} else {
#pragma unroll
		for (int u = 0; u < 8; u++) {
			float v[8];
			kq_unpack((const T *)0, raw[u], v);
			ra[u] = kq_amax8(v);
			if (TILE2D) {
				ta = fmaxf(ta, ra[u]);
			} else {
#pragma unroll
				for (int j = 0; j < 8; j++) ca[j] = kq_amax_acc(ca[j], v[j]);
			}
		}
	}
	// Grouped 2D: warp 0 sums P_g, the padded tile-row counts of the
	// groups before g (every lane ends with the sum).
	int cpre = 0;
	if (TILE2D && offsets != 0 && sinv_col != 0 && warp == 0) {
		for (int h = lane; h < g; h += 32) cpre += (((offsets[h + 1] - offsets[h]) >> 7) + 3) & ~3;
#pragma unroll
		for (int o = 16; o > 0; o >>= 1) cpre += __shfl_xor_sync(0xFFFFFFFFu, cpre, o);
	}
	if (TILE2D) {
		ta = kq_max32(ta);
		if (lane == 0) sm.cpart[0][warp] = ta;
	} else {
		if (out_row != 0) {
			// The 8 rows' partial maxima meet over the half-warp in a
			// reduce-scatter (8 shuffles instead of 32): afterwards lanes
			// cc and cc^1 hold row cc/2's amax, and the even lane handles
			// that row.
			const float am = kq_row_amax(ra, cc);
			if ((cc & 1) == 0) {
				const int rr = cc >> 1, m = mr + rr;
				const float s = kq_block_scale(am, fp8max, eps, pow2);
				sm.rscale[r * 8 + rr] = s;
				kq_put_row_sinv(sinv_row, offsets, nkb, kb, goff, gn, m, rows, scols_row, __fdiv_rn(1.0f, s));
			}
		}
		if (out_col != 0) {
			if constexpr (sizeof(T) == 2) {
				// Rows 8r..8r+7 meet rows 8(r^1).. (lane ^ 16) as pairs.
#pragma unroll
				for (int k = 0; k < 4; k++) {
					const u32 p = kq_hmax2((const T *)0, cp[k], __shfl_xor_sync(0xFFFFFFFFu, cp[k], 16));
					ca[2 * k] = fmaxf(0.0f, kq_plo(T(), p));
					ca[2 * k + 1] = fmaxf(0.0f, kq_phi(T(), p));
				}
			} else {
#pragma unroll
				for (int j = 0; j < 8; j++) ca[j] = fmaxf(ca[j], __shfl_xor_sync(0xFFFFFFFFu, ca[j], 16));
			}
			if (lane < 16) {
				float4 *p = reinterpret_cast<float4 *>(&sm.cpart[warp][cc * 8]);
				p[0] = make_float4(ca[0], ca[1], ca[2], ca[3]);
				p[1] = make_float4(ca[4], ca[5], ca[6], ca[7]);
			}
		}
	}
	__syncthreads();
	float cs[8];
	float rs2d = 1.0f;
	if (TILE2D) {
		float a = sm.cpart[0][0];
#pragma unroll
		for (int w = 1; w < 8; w++) a = fmaxf(a, sm.cpart[0][w]);
		rs2d = kq_block_scale(a, fp8max, eps, pow2);
#pragma unroll
		for (int j = 0; j < 8; j++) cs[j] = rs2d;
		if (tid == 0) {
			const float inv = __fdiv_rn(1.0f, rs2d);
			if (sinv_row != 0) {
				sinv_row[(long long)mb * scols_row + kb] = inv;
				if (kb == nkb - 1) {
					for (int p = nkb; p < scols_row; p++) sinv_row[(long long)mb * scols_row + p] = 0.0f;
				}
			}
			if (sinv_col != 0) {
				// Ungrouped: [nkb, scols_col] entry (kb, mb); grouped:
				// group g's [nkb, roundup(n_g/128,4)] at nkb*P_g.
				long long cbase = 0;
				int csc = scols_col, lmb = mb, lnmb = nmb;
				if (offsets != 0) {
					lnmb = gn >> 7;
					csc = (lnmb + 3) & ~3;
					lmb = (m0 - goff) >> 7;
					cbase = (long long)nkb * cpre;
				}
				sinv_col[cbase + (long long)kb * csc + lmb] = inv;
				if (lmb == lnmb - 1) {
					for (int p = lnmb; p < csc; p++) sinv_col[cbase + (long long)kb * csc + p] = 0.0f;
				}
			}
		}
		if (offsets != 0 && sinv_col != 0 && warp == 0 && mb == nmb - 1) {
			// The last tile row (group g is the last non-empty one):
			// tile kb zeroes its share of the tail past P_ngroups.
			const int tail = scols_col - cpre - (((gn >> 7) + 3) & ~3);
			float *t = sinv_col + (long long)nkb * (scols_col - tail) + (long long)kb * tail;
			for (int p = lane; p < tail; p += 32) t[p] = 0.0f;
		}
	} else {
		if (out_col != 0) {
			if (tid < 128) {
				float a = sm.cpart[0][tid];
#pragma unroll
				for (int w = 1; w < 8; w++) a = fmaxf(a, sm.cpart[w][tid]);
				const float s = kq_block_scale(a, fp8max, eps, pow2);
				sm.cscale[tid] = s;
				const int k = kt0 + tid;
				if (k < cols) {
					sinv_col[(long long)mb * scols_col + k] = __fdiv_rn(1.0f, s);
				} else if (k < scols_col) {
					sinv_col[(long long)mb * scols_col + k] = 0.0f;
				}
			}
			__syncthreads();
			const float4 *p = reinterpret_cast<const float4 *>(&sm.cscale[cc * 8]);
			const float4 c0 = p[0], c1 = p[1];
			cs[0] = c0.x; cs[1] = c0.y; cs[2] = c0.z; cs[3] = c0.w;
			cs[4] = c1.x; cs[5] = c1.y; cs[6] = c1.z; cs[7] = c1.w;
		} else {
#pragma unroll
			for (int j = 0; j < 8; j++) cs[j] = 1.0f;
		}
	}
	// Codes, two rows at a time: rowwise 8-byte stores straight out;
	// columnwise pairs (rows u, u+1 of one column) from one paired
	// conversion, gathered per column into a word of 4 row codes that goes
	// to shared memory as soon as it is complete (fewer live registers).
	const bool fastst = (vec & KQ_VEC_ROW_STORE) != 0 && k0 + 8 <= cols;
	if (TILE2D) {
		// One scale for the tile: the columnwise codes are the rowwise
		// ones, converted once per element. Four rows' codes at a time
		// are transposed with byte permutes into the 8 column words
		// (byte i: row u+i), as kq_trw_tile in quantize.cu does.
#pragma unroll
		for (int u = 0; u < 8; u += 4) {
			uint2 rc[4];
#pragma unroll
			for (int h = 0; h < 4; h++) {
				float v[8];
				kq_unpack((const T *)0, raw[u + h], v);
				rc[h] = kq_codes8<FMT>(v, rs2d);
				const int m = mr + u + h;
				if (out_row != 0 && m < rows && k0 < cols)
					kq_store8(out_row + (long long)m * cols + k0, rc[h], fastst, cols - k0);
			}
			if (out_col != 0) {
				u32 *tw = &sm.tr[cc * 8][2 * (r ^ cc) + ((u >> 2) ^ (r & 1))];
#pragma unroll
				for (int hh = 0; hh < 2; hh++) {
					const u32 c0 = hh ? rc[0].y : rc[0].x, c1 = hh ? rc[1].y : rc[1].x;
					const u32 c2 = hh ? rc[2].y : rc[2].x, c3 = hh ? rc[3].y : rc[3].x;
					const u32 a0 = __byte_perm(c0, c1, 0x5140), b0 = __byte_perm(c2, c3, 0x5140);
					const u32 a1 = __byte_perm(c0, c1, 0x7362), b1 = __byte_perm(c2, c3, 0x7362);
					tw[(4 * hh + 0) * 32] = __byte_perm(a0, b0, 0x5410);
					tw[(4 * hh + 1) * 32] = __byte_perm(a0, b0, 0x7632);
					tw[(4 * hh + 2) * 32] = __byte_perm(a1, b1, 0x5410);
					tw[(4 * hh + 3) * 32] = __byte_perm(a1, b1, 0x7632);
				}
			}
		}
	}
	u32 cw[8];
#pragma unroll
	for (int u = 0; u < 8; u += 2) {
		if (TILE2D) break;
		float v0[8], v1[8];
		kq_unpack((const T *)0, raw[u], v0);
		kq_unpack((const T *)0, raw[u + 1], v1);
		if (out_row != 0) {
#pragma unroll
			for (int h = 0; h < 2; h++) {
				const int m = mr + u + h;
				if (m < rows && k0 < cols) {
					const float s = TILE2D ? rs2d : sm.rscale[r * 8 + u + h];
					kq_store8(out_row + (long long)m * cols + k0, kq_codes8<FMT>(h == 0 ? v0 : v1, s), fastst, cols - k0);
				}
			}
		}
		if (out_col != 0) {
#pragma unroll
			for (int j = 0; j < 8; j++) {
				const u32 c = kq_cvt2<FMT>(__fmul_rn(v0[j], cs[j]), __fmul_rn(v1[j], cs[j]));
				if ((u & 2) == 0) {
					cw[j] = c;
				} else {
					sm.tr[cc * 8 + j][2 * (r ^ cc) + ((u >> 2) ^ (r & 1))] = cw[j] | c << 16;
				}
			}
		}
	}
	if (out_col == 0) return;
	__syncthreads();
	// Thread t writes runs (k, p) = ((i*256+t)/16, (i*256+t)%16): a
	// half-warp writes the 128 codes of one transposed row.
	const bool fastc = (vec & KQ_VEC_COL_STORE) != 0;
	u8 *base = out_col + (long long)goff * cols;
#pragma unroll
	for (int i = 0; i < 8; i++) {
		const int id = i * 256 + tid;
		const int kc = id >> 4, p = id & 15;
		const int k = kt0 + kc, m = m0 + p * 8;
		if (k < cols && m < rows) {
			uint2 c = *reinterpret_cast<const uint2 *>(&sm.tr[kc][2 * (p ^ (kc >> 3))]);
			if (p & 1) c = make_uint2(c.y, c.x);
			kq_store8(base + (long long)k * gn + (m - goff), c, fastc && m + 8 <= rows, rows - m);
		}
	}
}
