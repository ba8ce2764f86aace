// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// nvfp4_general.cuh: part of nvfp4.cu (included once, after the element
// helpers): the general paths of the NVFP4 kernels, any shape and
// alignment (amax, RHT amax, rowwise, columnwise, 16x16 tiles). Not a
// header of its own: it uses what nvfp4.cu defines before it; the entry
// points are in nvfp4.cu.

// Amax of the input into amax[group] (bits of a nonnegative float; the
// caller zeroes it first). Grid (x: blocks sharing a row tile, y: row tiles
// of 128); a row tile lies in one group (groups are 128-row aligned, else
// *flag is set and nothing runs), so each block does one atomic. A row
// tile is contiguous in memory: with vec (16-byte aligned input) the
// blocks stride over it in 16-byte vectors, four loads in flight per
// thread, the tail element by element.
template <typename T>
__device__ void kq_nvf4_amax(const T *x, int rows, int cols, u32 *amax, const int *offsets, int ngroups, const int *flag, int vec) {
	if (flag != 0 && *flag != 0) return;
	const int m0 = blockIdx.y * 128;
	int g = 0;
	if (offsets != 0) {
		if (m0 >= offsets[ngroups]) return;
		g = kq_group(offsets, ngroups, m0);
	}
	const int m1 = min(m0 + 128, rows);
	const long long base = (long long)m0 * cols, n = (long long)(m1 - m0) * cols;
	const int ev = 16 / (int)sizeof(T);
	const long long nv = vec ? n / ev : 0;
	const uint4 *p = reinterpret_cast<const uint4 *>(x + base);
	const long long step = (long long)gridDim.x * blockDim.x;
	u32 acc = 0;
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	for (; i + 3 * step < nv; i += 4 * step) {
		const uint4 a = p[i], b = p[i + step], c = p[i + 2 * step], d = p[i + 3 * step];
		acc = kq_vmax(x, kq_vmax(x, kq_vmax(x, kq_vmax(x, acc, a), b), c), d);
	}
	for (; i < nv; i += step) acc = kq_vmax(x, acc, p[i]);
	u32 a = kq_vkey(x, acc);
	for (long long e = nv * ev + (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += step) a = max(a, kq_absbits(kq_ld(x, base + e)));
	kq_block_atomic_max(a, amax + g);
}

// Amax of the RHT of the columnwise operand: each thread transforms the
// 16-row runs of one column (zero-padded at the end, only existing outputs
// counted). Grid (x: 256-column slabs, y: 128-row tiles).
template <typename T>
__device__ void kq_nvf4_amax_rht(const T *x, int rows, int cols, u32 *amax, u32 signs) {
	const int k = blockIdx.x * 256 + threadIdx.x;
	const int m0 = blockIdx.y * 128;
	u32 a = 0;
	if (k < cols) {
		for (int mb = m0; mb < min(m0 + 128, rows); mb += 16) {
			float v[16];
			const int n = min(16, rows - mb);
#pragma unroll
			for (int t = 0; t < 16; t++) v[t] = t < n ? kq_ld(x, (long long)(mb + t) * cols + k) : 0.0f;
			kq_rht16(v, signs);
			a = max(a, __float_as_uint(kq_block_amax(v, n)));
		}
	}
	kq_block_atomic_max(a, amax);
}

// Rowwise 1x16: one thread per scale entry (m, kb) of the padded
// [srows, scols] matrix; entries outside the tensor write a zero scale (so
// padding needs no memset) and no data. Data rows are (cols + 1) / 2 bytes.
// swz, when not NULL, also receives the scale in the GEMM layout.
// Grouped (offsets != NULL): the row's group g gives amax[g], the SR group
// g and element numbers counted from the group's first row.
template <typename T>
__device__ void kq_nvf4_row(const T *x, int rows, int cols, const u32 *amax, u8 *out, u8 *scales,
		int srows, int scols, u8 *swz, int sr, u64 seed, int vec, const int *offsets, int ngroups, const int *flag) {
	if (flag != 0 && *flag != 0) return;
	const int nkb = (cols + 15) >> 4;
	const long long items = (long long)srows * scols;
	const int stride = (cols + 1) >> 1;
	for (long long it = (long long)blockIdx.x * blockDim.x + threadIdx.x; it < items; it += (long long)gridDim.x * blockDim.x) {
		const int m = (int)(it / scols), kb = (int)(it % scols);
		const long long si = (long long)m * scols + kb;
		int live = m < rows && kb < nkb;
		int g = 0, m0 = 0;
		if (offsets != 0 && live) {
			if (m >= offsets[ngroups]) {
				live = 0;
			} else {
				g = kq_group(offsets, ngroups, m);
				m0 = offsets[g];
			}
		}
		if (!live) {
			scales[si] = 0;
			if (swz != 0) swz[kq_swz(m, kb, scols)] = 0;
			continue;
		}
		const int k0 = kb * 16, n = min(16, cols - k0);
		const long long base = (long long)m * cols + k0;
		float v[16];
		if (vec && n == 16) {
			kq_ld16(x, base, v);
		} else {
#pragma unroll
			for (int t = 0; t < 16; t++) v[t] = t < n ? kq_ld(x, base + t) : 0.0f;
		}
		const float s = kq_tensor_scale(__uint_as_float(amax[g]));
		const float sinv = __fdiv_rn(1.0f, s);
		const u32 d = kq_e4m3(__fmul_rn(kq_block_amax(v, n), __fdiv_rn(s, KQ_E2M1_MAX)));
		const float f = kq_factor(d, sinv);
		const u64 n0 = (u64)(m - m0) * (u64)cols + (u64)k0;
		const u64 packed = kq_quant16(v, n, f, sr, n0, 0u, (u32)g, seed);
		kq_store_packed(out + (long long)m * stride + kb * 8, packed, n, (stride & 7) == 0);
		scales[si] = (u8)d;
		if (swz != 0) swz[kq_swz(m, kb, scols)] = (u8)d;
	}
}

// Columnwise 1x16 over the transposed input [cols, rows] (data rows of
// (rows + 1) / 2 bytes), with the optional RHT of each 16-run and SR
// (operand 1; counter word 3 = group, so that a per-group launch of a
// grouped quantize draws group g's stream as the reference does). A block of 32 x 8 threads covers 32 columns and 8 runs of 16
// rows; thread (tx, ty) quantizes column k's run mb, and the packed runs
// are written through shared memory so that 8 consecutive threads write 64
// contiguous bytes of one transposed row. The grid covers the padded scale
// matrix [srows = roundup(cols,128), scols = roundup(ceil(rows/16),4)];
// entries outside the tensor get zero scales. by is blockIdx.y, or the
// block's row in its group's tensor (grouped).
template <typename T>
__device__ void kq_nvf4_col(const T *x, int rows, int cols, const u32 *amax, u8 *out, u8 *scales,
		int srows, int scols, u8 *swz, int rht, u32 signs, int sr, u64 seed, u32 group, int by) {
	__shared__ u64 stage[32][9];
	const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
	const int k = blockIdx.x * 32 + tx, mb = by * 8 + ty;
	const int nmb = (rows + 15) >> 4;
	const bool live = k < cols && mb < nmb;
	u64 packed = 0;
	if (live) {
		const int n = min(16, rows - mb * 16);
		float v[16];
#pragma unroll
		for (int t = 0; t < 16; t++) v[t] = t < n ? kq_ld(x, (long long)(mb * 16 + t) * cols + k) : 0.0f;
		if (rht) kq_rht16(v, signs);
		const float s = kq_tensor_scale(__uint_as_float(amax[0]));
		const float sinv = __fdiv_rn(1.0f, s);
		const u32 d = kq_e4m3(__fmul_rn(kq_block_amax(v, n), __fdiv_rn(s, KQ_E2M1_MAX)));
		const float f = kq_factor(d, sinv);
		packed = kq_quant16(v, n, f, sr, (u64)k * (u64)rows + (u64)(mb * 16), 1u, group, seed);
		scales[(long long)k * scols + mb] = (u8)d;
		if (swz != 0) swz[kq_swz(k, mb, scols)] = (u8)d;
	} else if (k < srows && mb < scols) {
		scales[(long long)k * scols + mb] = 0;
		if (swz != 0) swz[kq_swz(k, mb, scols)] = 0;
	}
	stage[tx][ty] = packed;
	__syncthreads();
	const int c = threadIdx.x >> 3, part = threadIdx.x & 7;
	const int kk = blockIdx.x * 32 + c, mm = by * 8 + part;
	if (kk >= cols || mm >= nmb) return;
	const int stride = (rows + 1) >> 1;
	kq_store_packed(out + (long long)kk * stride + mm * 8, stage[c][part], min(16, rows - mm * 16), (stride & 7) == 0);
}

// 2D 16x16 tiles (weights): one thread per tile; the tile amax gives one
// block scale for its 16 rows; writes the rowwise codes and scales when
// out_row and scales_row are not NULL and, when out_col is not NULL, the
// same codes transposed (columnwise operand) with the transposed scale
// entries, so that a step wanting one operand writes only that one;
// swz_row and swz_col, when not NULL, receive the scales in the GEMM
// layout. The caller zeroes the scale matrices
// (their padding) first; only tiles inside the tensor are visited.
// Grouped (offsets != NULL): tile row mb lies in group g, quantized as a
// tensor of its own (amax[g]; rowwise rows as in the whole tensor;
// columnwise codes [cols, n_g] at byte cols * o_g / 2, scales
// [roundup(cols, 128), n_g / 16] at roundup(cols, 128) * o_g / 16).
template <typename T>
KQ_DEV void kq_nvf4_2d_tile(const T *x, int rows, int cols, const u32 *amax, int mb, int kb, u8 *out_row, u8 *scales_row,
		int scols_row, u8 *swz_row, u8 *out_col, u8 *scales_col, int scols_col, u8 *swz_col) {
	const int stride_r = (cols + 1) >> 1, stride_c = (rows + 1) >> 1;
	const float s = kq_tensor_scale(__uint_as_float(amax[0]));
	const float sinv = __fdiv_rn(1.0f, s);
	const int m0 = mb * 16, k0 = kb * 16;
	const int nr = min(16, rows - m0), nc = min(16, cols - k0);
	u32 a = 0;
	for (int i = 0; i < nr; i++) {
		const long long base = (long long)(m0 + i) * cols + k0;
		for (int t = 0; t < nc; t++) a = max(a, kq_absbits(kq_ld(x, base + t)));
	}
	const u32 d = kq_e4m3(__fmul_rn(__uint_as_float(a), __fdiv_rn(s, KQ_E2M1_MAX)));
	const float f = kq_factor(d, sinv);
	u64 rowcodes[16];
#pragma unroll
	for (int i = 0; i < 16; i++) {
		rowcodes[i] = 0;
		if (i < nr) {
			float v[16];
			const long long base = (long long)(m0 + i) * cols + k0;
#pragma unroll
			for (int t = 0; t < 16; t++) v[t] = t < nc ? kq_ld(x, base + t) : 0.0f;
			rowcodes[i] = kq_quant16(v, nc, f, 0, 0, 0u, 0u, 0);
			if (out_row != 0) kq_store_packed(out_row + (long long)(m0 + i) * stride_r + kb * 8, rowcodes[i], nc, (stride_r & 7) == 0);
			if (scales_row != 0) scales_row[(long long)(m0 + i) * scols_row + kb] = (u8)d;
			if (swz_row != 0) swz_row[kq_swz(m0 + i, kb, scols_row)] = (u8)d;
		}
	}
	if (out_col == 0) return;
	for (int j = 0; j < nc; j++) {
		u64 col = 0;
#pragma unroll
		for (int i = 0; i < 16; i++) col |= ((rowcodes[i] >> (4 * j)) & 0xFu) << (4 * i);
		kq_store_packed(out_col + (long long)(k0 + j) * stride_c + mb * 8, col, nr, (stride_c & 7) == 0);
		scales_col[(long long)(k0 + j) * scols_col + mb] = (u8)d;
		if (swz_col != 0) swz_col[kq_swz(k0 + j, mb, scols_col)] = (u8)d;
	}
}

template <typename T>
__device__ void kq_nvf4_2d(const T *x, int rows, int cols, const u32 *amax, u8 *out_row, u8 *scales_row,
		int scols_row, u8 *swz_row, u8 *out_col, u8 *scales_col, int scols_col, u8 *swz_col, const int *offsets, int ngroups,
		const int *flag) {
	if (flag != 0 && *flag != 0) return;
	const int nkb = (cols + 15) >> 4, nmb = (rows + 15) >> 4;
	const long long tiles = (long long)nmb * nkb;
	for (long long it = (long long)blockIdx.x * blockDim.x + threadIdx.x; it < tiles; it += (long long)gridDim.x * blockDim.x) {
		const int mb = (int)(it / nkb), kb = (int)(it % nkb);
		if (offsets == 0) {
			kq_nvf4_2d_tile(x, rows, cols, amax, mb, kb, out_row, scales_row, scols_row, swz_row, out_col, scales_col, scols_col, swz_col);
			continue;
		}
		int o, n;
		const int g = kq_grp_tile(offsets, ngroups, 0, mb * 16, &o, &n);
		if (g < 0) continue;
		const long long srows_c = (long long)((cols + 127) >> 7) << 7;
		kq_nvf4_2d_tile(x + (long long)o * cols, n, cols, amax + g, mb - (o >> 4), kb,
			out_row != 0 ? out_row + (long long)o * ((cols + 1) >> 1) : out_row,
			scales_row != 0 ? scales_row + (long long)o * scols_row : scales_row, scols_row,
			swz_row != 0 ? swz_row + (long long)o * scols_row : swz_row,
			out_col != 0 ? out_col + (long long)cols * (o >> 1) : out_col,
			scales_col != 0 ? scales_col + srows_c * (o >> 4) : scales_col, n >> 4,
			swz_col != 0 ? swz_col + srows_c * (o >> 4) : swz_col);
	}
}
