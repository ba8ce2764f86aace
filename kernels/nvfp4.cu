// kquant NVFP4BlockScaling kernels: E2M1 data packed two per byte (lower
// index in the low nibble), E4M3 decode scales per 1x16 block (per 16x16
// tile for 2D weights) and a float32 tensor scale S computed on the device
// from a device amax; the random Hadamard transform (RHT) of the columnwise
// operand; stochastic rounding (SR) with the Philox 4x32-10 stream that
// agent/quant/philox documents; the GEMM scale swizzle, standalone and as an
// option of the 1D quantize kernels; and the NVFP4 dequantize.
//
// Hopper has no E2M1 conversion instruction, so the conversion is written
// out: round to nearest even by comparing with the midpoints between the
// eight E2M1 magnitudes (ties go to the even code), saturating to +-6; NaN
// becomes 0x7 (the contract's choice). The E4M3 block scale uses the
// hardware's cvt.rn.satfinite.
//
// The row kernel and the plain amax kernel also serve the grouped (MoE)
// quantize: given kq_grp_offsets' device offsets they find each row's group
// by binary search, reduce into and read that group's amax, and number the
// SR stream within the group, as the reference quantizes each group as a
// tensor of its own.
//
// Self-contained (no includes) so that the stamp on nvfp4.ptx covers
// everything it came from.

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define KQ_DEV static __device__ __forceinline__
#define KQ_FLT_MAX_BITS 0x7F7FFFFFu

struct kq_bf16 { u16 bits; };
struct kq_f16 { u16 bits; };

KQ_DEV float kq_f16_to_f32(u32 bits) {
	float f;
	u16 h = (u16)bits;
	asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
	return f;
}
KQ_DEV float kq_ld(const float *x, long long i) { return x[i]; }
KQ_DEV float kq_ld(const kq_bf16 *x, long long i) { return __uint_as_float((u32)x[i].bits << 16); }
KQ_DEV float kq_ld(const kq_f16 *x, long long i) { return kq_f16_to_f32(x[i].bits); }

// Sixteen consecutive elements from element i (i % 16 == 0, base aligned to
// 16 bytes): 16-byte loads.
KQ_DEV void kq_ld16(const float *x, long long i, float v[16]) {
	const float4 *p = reinterpret_cast<const float4 *>(x + i);
#pragma unroll
	for (int q = 0; q < 4; q++) {
		float4 f = p[q];
		v[4 * q] = f.x; v[4 * q + 1] = f.y; v[4 * q + 2] = f.z; v[4 * q + 3] = f.w;
	}
}
KQ_DEV void kq_unpack_bf16(u32 w, float *v) {
	v[0] = __uint_as_float(w << 16);
	v[1] = __uint_as_float(w & 0xFFFF0000u);
}
KQ_DEV void kq_ld16(const kq_bf16 *x, long long i, float v[16]) {
	const uint4 *p = reinterpret_cast<const uint4 *>(x + i);
#pragma unroll
	for (int q = 0; q < 2; q++) {
		uint4 u = p[q];
		kq_unpack_bf16(u.x, v + 8 * q); kq_unpack_bf16(u.y, v + 8 * q + 2);
		kq_unpack_bf16(u.z, v + 8 * q + 4); kq_unpack_bf16(u.w, v + 8 * q + 6);
	}
}
KQ_DEV void kq_unpack_f16(u32 w, float *v) {
	v[0] = kq_f16_to_f32(w & 0xFFFFu);
	v[1] = kq_f16_to_f32(w >> 16);
}
KQ_DEV void kq_ld16(const kq_f16 *x, long long i, float v[16]) {
	const uint4 *p = reinterpret_cast<const uint4 *>(x + i);
#pragma unroll
	for (int q = 0; q < 2; q++) {
		uint4 u = p[q];
		kq_unpack_f16(u.x, v + 8 * q); kq_unpack_f16(u.y, v + 8 * q + 2);
		kq_unpack_f16(u.z, v + 8 * q + 4); kq_unpack_f16(u.w, v + 8 * q + 6);
	}
}

KQ_DEV bool kq_finite(float x) { return (__float_as_uint(x) & 0x7FFFFFFFu) < 0x7F800000u; }

KQ_DEV u32 kq_absbits(float x) {
	u32 a = __float_as_uint(x) & 0x7FFFFFFFu;
	return a > 0x7F800000u ? 0u : a;
}

KQ_DEV u32 kq_warp_max(u32 a) {
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) a = max(a, __shfl_xor_sync(0xFFFFFFFFu, a, o));
	return a;
}

KQ_DEV int kq_group(const int *offsets, int ngroups, int m) {
	int lo = 0, hi = ngroups - 1;
	while (lo < hi) {
		int mid = (lo + hi + 1) >> 1;
		if (offsets[mid] <= m) lo = mid; else hi = mid - 1;
	}
	return lo;
}

// Tensor encode scale S = 2688 / amax; float32 max on overflow; 1 for a
// zero (or NaN) amax and when S is 0.
KQ_DEV float kq_tensor_scale(float amax) {
	if (amax == 0.0f || amax != amax) return 1.0f;
	float s = __fdiv_rn(2688.0f, amax);
	if (!kq_finite(s)) return __uint_as_float(KQ_FLT_MAX_BITS);
	if (s == 0.0f) return 1.0f;
	return s;
}

// E4M3 of a float32 (hardware conversion, RNE, saturating).
KQ_DEV u32 kq_e4m3(float x) {
	u16 r;
	float z = 0.0f;
	asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(z), "f"(x));
	return r & 0xFFu;
}

// Exact value of an E4M3 code.
KQ_DEV float kq_e4m3_val(u32 b) {
	u32 s = (b & 0x80u) << 24;
	u32 e = (b >> 3) & 0xFu, m = b & 7u;
	if (e == 15u && m == 7u) return __uint_as_float(s | 0x7FC00000u);
	if (e == 0u) return __uint_as_float(s | __float_as_uint(__fmul_rn((float)m, 0.001953125f)));
	return __uint_as_float(s | ((e + 120u) << 23) | (m << 20));
}

// Exact value of an E2M1 code (low nibble).
KQ_DEV float kq_e2m1_val(u32 c) {
	const u32 e = (c >> 1) & 3u, m = c & 1u, sign = (c & 8u) << 28;
	// e == 0: 0 or 0.5; else 2^(e-1) * (1 + m/2), built from its bits.
	const u32 mag = e == 0u ? (m ? 0x3F000000u : 0u) : (((e + 126u) << 23) | (m << 22));
	return __uint_as_float(sign | mag);
}

// E2M1, round to nearest even, saturating; NaN -> 0x7.
KQ_DEV u32 kq_e2m1(float x) {
	const u32 b = __float_as_uint(x), a = b & 0x7FFFFFFFu;
	if (a > 0x7F800000u) return 7u;
	const u32 sign = (b >> 28) & 8u;
	const float v = __uint_as_float(a);
	u32 c;
	if (v <= 0.25f) c = 0;
	else if (v < 0.75f) c = 1;
	else if (v <= 1.25f) c = 2;
	else if (v < 1.75f) c = 3;
	else if (v <= 2.5f) c = 4;
	else if (v < 3.5f) c = 5;
	else if (v <= 5.0f) c = 6;
	else c = 7;
	return sign | c;
}

// E2M1 with stochastic rounding by the random byte r: between neighbours
// lo < v < hi, round up when r < floor(256 (v - lo) / (hi - lo)); the
// scalings by powers of two are exact and the conversion truncates.
KQ_DEV u32 kq_e2m1_sr(float x, u32 r) {
	const u32 b = __float_as_uint(x), a = b & 0x7FFFFFFFu;
	const u32 sign = (b >> 28) & 8u;
	if (a >= 0x40C00000u) return a > 0x7F800000u ? 7u : (sign | 7u);
	const float v = __uint_as_float(a);
	u32 lo, frac;
	if (a >= 0x40800000u) {
		u32 q = (u32)__fmul_rn(v, 128.0f);
		lo = 6; frac = q - 512u;
	} else if (a >= 0x40000000u) {
		u32 q = (u32)__fmul_rn(v, 256.0f);
		lo = (q >> 8) + 2u; frac = q & 255u;
	} else {
		u32 q = (u32)__fmul_rn(v, 512.0f);
		lo = q >> 8; frac = q & 255u;
	}
	if (r < frac) lo++;
	return sign | lo;
}

// Philox 4x32-10 (agent/quant/philox): counter (c0..c3), key from the seed.
KQ_DEV uint4 kq_philox(u32 c0, u32 c1, u32 c2, u32 c3, u32 k0, u32 k1) {
#pragma unroll
	for (int r = 0; r < 10; r++) {
		if (r > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
		const u32 hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
		const u32 hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
		const u32 n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
		c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
	}
	uint4 w;
	w.x = c0; w.y = c1; w.z = c2; w.w = c3;
	return w;
}

KQ_DEV u32 kq_word(uint4 w, u32 i) {
	return i == 0 ? w.x : i == 1 ? w.y : i == 2 ? w.z : w.w;
}

// kq_sr_bytes fills r[t] with the SR byte of element n0 + t of an operand
// (t < 16): byte n % 16 of Philox block n / 16 with counter (block lo,
// block hi, operand, group). A run of 16 that is not 16-aligned straddles
// two Philox blocks.
KQ_DEV void kq_sr_bytes(u64 n0, u32 operand, u32 group, u64 seed, u32 r[16]) {
	const u64 b0 = n0 >> 4;
	const u32 k0 = (u32)seed, k1 = (u32)(seed >> 32);
	const uint4 w0 = kq_philox((u32)b0, (u32)(b0 >> 32), operand, group, k0, k1);
	uint4 w1 = w0;
	if ((n0 & 15u) != 0) w1 = kq_philox((u32)(b0 + 1), (u32)((b0 + 1) >> 32), operand, group, k0, k1);
#pragma unroll
	for (int t = 0; t < 16; t++) {
		const u64 n = n0 + t;
		const u32 j = (u32)(n & 15u);
		const uint4 w = (n >> 4) == b0 ? w0 : w1;
		r[t] = (kq_word(w, j >> 2) >> (8 * (j & 3u))) & 0xFFu;
	}
}

// RHT of 16 values in place: y_i = (sum over j in order of +-x_j) * 0.25,
// the sign of term j in row i being parity(popcount(i & j)) xor sign bit j
// of the recipe's mask: H16 . diag(signs) / 4, evaluated as
// agent/quant/hadamard does (sums start at +0, one rounding per addition).
KQ_DEV void kq_rht16(float v[16], u32 signs) {
	float y[16];
#pragma unroll
	for (int i = 0; i < 16; i++) {
		float acc = 0.0f;
#pragma unroll
		for (int j = 0; j < 16; j++) {
			const u32 neg = ((u32)__popc(i & j) & 1u) ^ ((signs >> j) & 1u);
			acc = __fadd_rn(acc, __uint_as_float(__float_as_uint(v[j]) ^ (neg << 31)));
		}
		y[i] = __fmul_rn(acc, 0.25f);
	}
#pragma unroll
	for (int i = 0; i < 16; i++) v[i] = y[i];
}

// Byte offset of entry (i, j) of a swizzled scale matrix with cols columns
// (the contract's GEMM layout: 128x4 tiles of 512 bytes, row-major).
KQ_DEV long long kq_swz(int i, int j, int cols) {
	return ((long long)(i >> 7) * (cols >> 2) + (j >> 2)) * 512 + (i & 31) * 16 + ((i & 127) >> 5) * 4 + (j & 3);
}

// Factor f = 1 / (float(d) * (1/S)), clamped to float32 max (a zero block
// scale gives +inf, clamped).
KQ_DEV float kq_factor(u32 d, float sinv) {
	float f = __fdiv_rn(1.0f, __fmul_rn(kq_e4m3_val(d), sinv));
	if (!(f <= __uint_as_float(KQ_FLT_MAX_BITS))) f = __uint_as_float(KQ_FLT_MAX_BITS);
	return f;
}

// kq_quant16 quantizes the first n (<= 16) of v into packed nibbles (bit 4t
// for element t, unused nibbles zero), given the block decode scale code.
KQ_DEV u64 kq_quant16(const float v[16], int n, float f, int sr, u64 n0, u32 operand, u32 group, u64 seed) {
	u32 r[16];
	if (sr) kq_sr_bytes(n0, operand, group, seed, r);
	u64 packed = 0;
#pragma unroll
	for (int t = 0; t < 16; t++) {
		if (t < n) {
			const float y = __fmul_rn(v[t], f);
			const u32 c = sr ? kq_e2m1_sr(y, r[t]) : kq_e2m1(y);
			packed |= (u64)c << (4 * t);
		}
	}
	return packed;
}

// kq_store_packed writes the (n + 1) / 2 bytes of a packed run to dst,
// with one 8-byte store when the run is whole and dst 8-byte aligned.
KQ_DEV void kq_store_packed(u8 *dst, u64 packed, int n, bool aligned) {
	if (n == 16 && aligned) {
		*reinterpret_cast<u64 *>(dst) = packed;
		return;
	}
	for (int b = 0; b < (n + 1) / 2; b++) dst[b] = (u8)(packed >> (8 * b));
}

KQ_DEV float kq_block_amax(const float v[16], int n) {
	u32 a = 0;
#pragma unroll
	for (int t = 0; t < 16; t++) {
		if (t < n) a = max(a, kq_absbits(v[t]));
	}
	return __uint_as_float(a);
}

// Block reduction to one atomicMax per block (blockDim.x == 256).
KQ_DEV void kq_block_atomic_max(u32 a, u32 *dst) {
	__shared__ u32 red[8];
	a = kq_warp_max(a);
	if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = a;
	__syncthreads();
	if (threadIdx.x == 0) {
		for (int w = 1; w < 8; w++) a = max(a, red[w]);
		if (a != 0) atomicMax(dst, a);
	}
}

// Amax of the input into amax[group] (bits of a nonnegative float; the
// caller zeroes it first). Grid (x: column slabs of 1024, y: row tiles of
// 128); a row tile lies in one group (groups are 128-row aligned, else
// *flag is set and nothing runs), so each block does one atomic.
template <typename T>
__device__ void kq_nvf4_amax(const T *x, int rows, int cols, u32 *amax, const int *offsets, int ngroups, const int *flag) {
	if (flag != 0 && *flag != 0) return;
	const int m0 = blockIdx.y * 128;
	const int c0 = blockIdx.x * 1024, c1 = min(c0 + 1024, cols);
	int g = 0;
	if (offsets != 0) {
		if (m0 >= offsets[ngroups]) return;
		g = kq_group(offsets, ngroups, m0);
	}
	const int m1 = min(m0 + 128, rows);
	u32 a = 0;
	for (int m = m0; m < m1; m++) {
		const long long base = (long long)m * cols;
		for (int k = c0 + threadIdx.x; k < c1; k += 256) a = max(a, kq_absbits(kq_ld(x, base + k)));
	}
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
		const u32 d = kq_e4m3(__fmul_rn(kq_block_amax(v, n), __fdiv_rn(s, 6.0f)));
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
// (operand 1). A block of 32 x 8 threads covers 32 columns and 8 runs of 16
// rows; thread (tx, ty) quantizes column k's run mb, and the packed runs
// are written through shared memory so that 8 consecutive threads write 64
// contiguous bytes of one transposed row. The grid covers the padded scale
// matrix [srows = roundup(cols,128), scols = roundup(ceil(rows/16),4)];
// entries outside the tensor get zero scales.
template <typename T>
__device__ void kq_nvf4_col(const T *x, int rows, int cols, const u32 *amax, u8 *out, u8 *scales,
		int srows, int scols, u8 *swz, int rht, u32 signs, int sr, u64 seed) {
	__shared__ u64 stage[32][9];
	const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
	const int k = blockIdx.x * 32 + tx, mb = blockIdx.y * 8 + ty;
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
		const u32 d = kq_e4m3(__fmul_rn(kq_block_amax(v, n), __fdiv_rn(s, 6.0f)));
		const float f = kq_factor(d, sinv);
		packed = kq_quant16(v, n, f, sr, (u64)k * (u64)rows + (u64)(mb * 16), 1u, 0u, seed);
		scales[(long long)k * scols + mb] = (u8)d;
		if (swz != 0) swz[kq_swz(k, mb, scols)] = (u8)d;
	} else if (k < srows && mb < scols) {
		scales[(long long)k * scols + mb] = 0;
		if (swz != 0) swz[kq_swz(k, mb, scols)] = 0;
	}
	stage[tx][ty] = packed;
	__syncthreads();
	const int c = threadIdx.x >> 3, part = threadIdx.x & 7;
	const int kk = blockIdx.x * 32 + c, mm = blockIdx.y * 8 + part;
	if (kk >= cols || mm >= nmb) return;
	const int stride = (rows + 1) >> 1;
	kq_store_packed(out + (long long)kk * stride + mm * 8, stage[c][part], min(16, rows - mm * 16), (stride & 7) == 0);
}

// 2D 16x16 tiles (weights): one thread per tile; the tile amax gives one
// block scale for its 16 rows; writes the rowwise codes and, when out_col
// is not NULL, the same codes transposed (columnwise operand) with the
// transposed scale entries. The caller zeroes both scale matrices (their
// padding) first; only tiles inside the tensor are visited.
template <typename T>
__device__ void kq_nvf4_2d(const T *x, int rows, int cols, const u32 *amax, u8 *out_row, u8 *scales_row,
		int scols_row, u8 *out_col, u8 *scales_col, int scols_col) {
	const int nkb = (cols + 15) >> 4, nmb = (rows + 15) >> 4;
	const long long tiles = (long long)nmb * nkb;
	const int stride_r = (cols + 1) >> 1, stride_c = (rows + 1) >> 1;
	const float s = kq_tensor_scale(__uint_as_float(amax[0]));
	const float sinv = __fdiv_rn(1.0f, s);
	for (long long it = (long long)blockIdx.x * blockDim.x + threadIdx.x; it < tiles; it += (long long)gridDim.x * blockDim.x) {
		const int mb = (int)(it / nkb), kb = (int)(it % nkb);
		const int m0 = mb * 16, k0 = kb * 16;
		const int nr = min(16, rows - m0), nc = min(16, cols - k0);
		u32 a = 0;
		for (int i = 0; i < nr; i++) {
			const long long base = (long long)(m0 + i) * cols + k0;
			for (int t = 0; t < nc; t++) a = max(a, kq_absbits(kq_ld(x, base + t)));
		}
		const u32 d = kq_e4m3(__fmul_rn(__uint_as_float(a), __fdiv_rn(s, 6.0f)));
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
				scales_row[(long long)(m0 + i) * scols_row + kb] = (u8)d;
			}
		}
		if (out_col == 0) continue;
		for (int j = 0; j < nc; j++) {
			u64 col = 0;
#pragma unroll
			for (int i = 0; i < 16; i++) col |= ((rowcodes[i] >> (4 * j)) & 0xFu) << (4 * i);
			kq_store_packed(out_col + (long long)(k0 + j) * stride_c + mb * 8, col, nr, (stride_c & 7) == 0);
			scales_col[(long long)(k0 + j) * scols_col + mb] = (u8)d;
		}
	}
}

#define KQ_NVFP4_KERNELS(T, sfx) \
extern "C" __global__ void __launch_bounds__(256) kq_nvf4_amax_##sfx(const T *x, int rows, int cols, u32 *amax, \
		const int *offsets, int ngroups, const int *flag) { \
	kq_nvf4_amax<T>(x, rows, cols, amax, offsets, ngroups, flag); \
} \
extern "C" __global__ void __launch_bounds__(256) kq_nvf4_amax_rht_##sfx(const T *x, int rows, int cols, u32 *amax, u32 signs) { \
	kq_nvf4_amax_rht<T>(x, rows, cols, amax, signs); \
} \
extern "C" __global__ void __launch_bounds__(256) kq_nvf4_row_##sfx(const T *x, int rows, int cols, const u32 *amax, u8 *out, \
		u8 *scales, int srows, int scols, u8 *swz, int sr, u64 seed, int vec, const int *offsets, int ngroups, const int *flag) { \
	kq_nvf4_row<T>(x, rows, cols, amax, out, scales, srows, scols, swz, sr, seed, vec, offsets, ngroups, flag); \
} \
extern "C" __global__ void __launch_bounds__(256) kq_nvf4_col_##sfx(const T *x, int rows, int cols, const u32 *amax, u8 *out, \
		u8 *scales, int srows, int scols, u8 *swz, int rht, u32 signs, int sr, u64 seed) { \
	kq_nvf4_col<T>(x, rows, cols, amax, out, scales, srows, scols, swz, rht, signs, sr, seed); \
} \
extern "C" __global__ void __launch_bounds__(256) kq_nvf4_2d_##sfx(const T *x, int rows, int cols, const u32 *amax, \
		u8 *out_row, u8 *scales_row, int scols_row, u8 *out_col, u8 *scales_col, int scols_col) { \
	kq_nvf4_2d<T>(x, rows, cols, amax, out_row, scales_row, scols_row, out_col, scales_col, scols_col); \
}

KQ_NVFP4_KERNELS(float, f32)
KQ_NVFP4_KERNELS(kq_bf16, bf16)
KQ_NVFP4_KERNELS(kq_f16, f16)

// Standalone GEMM swizzle of a row-major [rows, cols] scale matrix (rows a
// multiple of 128, cols of 4) into dst; with transpose, of its [cols, rows]
// transpose (MXFP8's columnwise scales). One thread per entry.
extern "C" __global__ void __launch_bounds__(256) kq_swizzle(const u8 *src, int rows, int cols, u8 *dst, int transpose) {
	const int r = transpose ? cols : rows, c = transpose ? rows : cols;
	const long long n = (long long)r * c;
	for (long long it = (long long)blockIdx.x * blockDim.x + threadIdx.x; it < n; it += (long long)gridDim.x * blockDim.x) {
		const int i = (int)(it / c), j = (int)(it % c);
		const u8 v = transpose ? src[(long long)j * cols + i] : src[it];
		dst[kq_swz(i, j, c)] = v;
	}
}

// NVFP4 dequantize of one operand as stored ([rows, cols] codes, rows of
// (cols + 1) / 2 bytes, scale entry (i, j / 16)): (E2M1 x E4M3) / S, the
// product exact and the division rounded, S from the operand's amax.
extern "C" __global__ void __launch_bounds__(256) kq_nvf4_dequant(const u8 *q, int rows, int cols, const u8 *scales, int scols,
		const u32 *amax, float *out) {
	const float s = kq_tensor_scale(__uint_as_float(amax[0]));
	const long long n = (long long)rows * cols;
	const int stride = (cols + 1) >> 1;
	for (long long it = (long long)blockIdx.x * blockDim.x + threadIdx.x; it < n; it += (long long)gridDim.x * blockDim.x) {
		const int i = (int)(it / cols), j = (int)(it % cols);
		const u32 b = q[(long long)i * stride + (j >> 1)];
		const u32 c = (j & 1) ? b >> 4 : b & 0xFu;
		const float d = kq_e4m3_val(scales[(long long)i * scols + (j >> 4)]);
		out[it] = __fdiv_rn(__fmul_rn(kq_e2m1_val(c), d), s);
	}
}
