// kquant NVFP4BlockScaling kernels: E2M1 data packed two per byte (lower
// index in the low nibble), E4M3 decode scales per 1x16 block (per 16x16
// tile for 2D weights) and a float32 tensor scale S computed on the device
// from a device amax; the random Hadamard transform (RHT) of the columnwise
// operand; stochastic rounding (SR) with the Philox 4x32-10 stream that
// internal/quant/philox documents; the GEMM scale swizzle, standalone and as an
// option of the 1D quantize kernels; and the NVFP4 dequantize.
//
// Hopper has no E2M1 conversion instruction, so the conversion is written
// out: round to nearest even by comparing with the midpoints between the
// eight E2M1 magnitudes (ties go to the even code), saturating to +-6; NaN
// becomes 0x7 (the contract's choice). The E4M3 block scale uses the
// hardware's cvt.rn.satfinite.
//
// Every kernel also serves the grouped (MoE) quantize: given
// kq_grp_offsets' device offsets they find each row's group by binary
// search, reduce into and read that group's amax, and number the SR stream
// within the group, as the reference quantizes each group as a tensor of
// its own. Groups are 128-row aligned (else the offsets kernel sets the
// flag and nothing runs), so every row tile of the columnwise, RHT-amax
// and 2D kernels (64 or 128 rows, or a 16x16 tile) lies in one group: the
// wrapper (kq_grp_block) moves the tile's pointers to its group's tensor
// and the kernel runs on that tensor as on a tensor of its own.
//
// The shared prelude (types, kq_finite, kq_group) is kq_common.cuh; the
// stamp on nvfp4.ptx covers it and every other kernels/*.cuh.

#include "kq_common.cuh"

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

KQ_DEV u32 kq_absbits(float x) {
	u32 a = __float_as_uint(x) & 0x7FFFFFFFu;
	return a > 0x7F800000u ? 0u : a;
}

KQ_DEV u32 kq_warp_max(u32 a) {
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) a = max(a, __shfl_xor_sync(0xFFFFFFFFu, a, o));
	return a;
}

// kq_grp_tile: the group of the row tile starting at row m0 of a grouped
// quantize, with its first row *o and its row count *n; -1 when the flag
// is set or m0 is past the groups' rows.
KQ_DEV int kq_grp_tile(const int *offsets, int ngroups, const int *flag, int m0, int *o, int *n) {
	if (flag != 0 && *flag != 0) return -1;
	if (m0 >= offsets[ngroups]) return -1;
	const int g = kq_group(offsets, ngroups, m0);
	*o = offsets[g];
	*n = offsets[g + 1] - *o;
	return g;
}

// kq_grp_block is kq_grp_tile for a whole block (every thread calls it,
// blockDim.x == 256, the same m0): with at most 256 groups the offsets
// are read by independent loads (one memory latency instead of a binary
// search's chain) and the group is counted with a barrier.
KQ_DEV int kq_grp_block(const int *offsets, int ngroups, const int *flag, int m0, int *o, int *n) {
	if (ngroups > 256) return kq_grp_tile(offsets, ngroups, flag, m0, o, n);
	__shared__ int so[257];
	const int t = threadIdx.x;
	const int fv = (t == 0 && flag != 0) ? *flag : 0;
	const int total = offsets[ngroups];
	const int v = t < ngroups ? offsets[t] : 0;
	if (t < ngroups) so[t] = v;
	if (t == 0) so[ngroups] = total;
	if (__syncthreads_or(fv != 0 || m0 >= total)) return -1;
	const int g = __syncthreads_count(t >= 1 && t < ngroups && v <= m0);
	*o = so[g];
	*n = so[g + 1] - *o;
	return g;
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

// E4M3 of a float32 (RNE, saturating: kq_fp8x2).
KQ_DEV u32 kq_e4m3(float x) { return kq_fp8x2(x, 0.0f, 1) & 0xFFu; }

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

// Philox 4x32-10 (internal/quant/philox): counter (c0..c3), key from the seed.
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

// Round to BF16 (nearest even) and widen back, as element.Float32ToBF16:
// NaN stays NaN, quieted, sign kept; overflow goes to infinity.
KQ_DEV float kq_bf16_rne(float y) {
	const u32 b = __float_as_uint(y);
	if ((b & 0x7FFFFFFFu) > 0x7F800000u) return __uint_as_float((b | 0x00400000u) & 0xFFFF0000u);
	return __uint_as_float((b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u);
}

// RHT of 16 values in place, contract v2's order (internal/quant/hadamard):
// v_j = s_j * (x_j * 0.25), then the butterfly h = 1, 2, 4, 8 with
// (v_i, v_i+h) <- (v_i + v_i+h, v_i - v_i+h) for i & h == 0, which leaves
// H16 . v in natural (Sylvester) order, then each result rounded to BF16.
// 4 float32 additions per element instead of 16; every index is a
// compile-time constant once unrolled, so v stays in registers.
KQ_DEV void kq_rht16(float v[16], u32 signs) {
#pragma unroll
	for (int j = 0; j < 16; j++) v[j] = __uint_as_float(__float_as_uint(__fmul_rn(v[j], 0.25f)) ^ (((signs >> j) & 1u) << 31));
#pragma unroll
	for (int h = 1; h < 16; h <<= 1) {
#pragma unroll
		for (int i = 0; i < 16; i++) {
			if (i & h) continue;
			const float a = v[i], b = v[i + h];
			v[i] = __fadd_rn(a, b);
			v[i + h] = __fsub_rn(a, b);
		}
	}
#pragma unroll
	for (int i = 0; i < 16; i++) v[i] = kq_bf16_rne(v[i]);
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

// Vector amax helpers: the running maximum of |x| over 16-byte vectors,
// kept packed (two bf16 or f16 lanes, or one float32) with the hardware's
// NaN-ignoring max, and turned into float32 bits at the end.
KQ_DEV u32 kq_bmax2(u32 a, u32 b) {
	u32 d;
	asm("max.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
	return d;
}
KQ_DEV u32 kq_hmax2(u32 a, u32 b) {
	u32 d;
	asm("max.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
	return d;
}
KQ_DEV u32 kq_vmax(const kq_bf16 *, u32 acc, uint4 u) {
	const u32 m = kq_bmax2(kq_bmax2(u.x & 0x7FFF7FFFu, u.y & 0x7FFF7FFFu), kq_bmax2(u.z & 0x7FFF7FFFu, u.w & 0x7FFF7FFFu));
	return kq_bmax2(acc, m);
}
KQ_DEV u32 kq_vmax(const kq_f16 *, u32 acc, uint4 u) {
	const u32 m = kq_hmax2(kq_hmax2(u.x & 0x7FFF7FFFu, u.y & 0x7FFF7FFFu), kq_hmax2(u.z & 0x7FFF7FFFu, u.w & 0x7FFF7FFFu));
	return kq_hmax2(acc, m);
}
KQ_DEV u32 kq_vmax(const float *, u32 acc, uint4 u) {
	const float m = fmaxf(fmaxf(fabsf(__uint_as_float(u.x)), fabsf(__uint_as_float(u.y))),
		fmaxf(fabsf(__uint_as_float(u.z)), fabsf(__uint_as_float(u.w))));
	return __float_as_uint(fmaxf(__uint_as_float(acc), m));
}
KQ_DEV u32 kq_vkey(const kq_bf16 *, u32 acc) {
	u32 lo = acc & 0xFFFFu, hi = acc >> 16;
	lo = lo > 0x7F80u ? 0u : lo;
	hi = hi > 0x7F80u ? 0u : hi;
	return max(lo, hi) << 16;
}
KQ_DEV u32 kq_vkey(const kq_f16 *, u32 acc) {
	u32 lo = acc & 0xFFFFu, hi = acc >> 16;
	lo = lo > 0x7C00u ? 0u : lo;
	hi = hi > 0x7C00u ? 0u : hi;
	return __float_as_uint(kq_f16_to_f32(max(lo, hi)));
}
KQ_DEV u32 kq_vkey(const float *, u32 acc) { return kq_absbits(__uint_as_float(acc)); }

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
		const u32 d = kq_e4m3(__fmul_rn(kq_block_amax(v, n), __fdiv_rn(s, 6.0f)));
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

// ---- Fast paths (whole 16-element blocks, 16-byte aligned rows) ----
//
// Hopper issues one instruction per clock per scheduler, and at full
// memory bandwidth a BF16 quantize has about 20 of them per element to
// spend, so the fast paths keep the per-element work to a few
// instructions while producing the same bytes as the functions above:
//  - E2M1 round to nearest even without a comparison chain: v = min(|y|,
//    6); with e the exponent of max(v, 1), adding M = 2^(22+e) + 2e *
//    2^(e-1) rounds v to the E2M1 step 2^(e-1) (ties to even: M's
//    significand is even) and leaves the code 2e + round(v / 2^(e-1)) in
//    the low byte of the sum's bits (checked against kq_e2m1 for all 2^32
//    inputs, NaN aside);
//  - stochastic rounding the same way with round-toward-zero and a step
//    256 times finer: the low bits hold code << 8 | frac, and adding
//    255 - r carries into the code exactly when r < frac (kq_e2m1_sr);
//  - codes are gathered and packed with byte permutes;
//  - the element factor f = 1 / (float(d) / S) depends only on the block
//    scale code d, so a block of threads tabulates the 127 values once;
//  - a block containing a NaN takes the reference path (kq_quant16), as
//    NaN codes drop the sign.

// RNE code of y (NaN excluded) in the low byte of the result.
KQ_DEV u32 kq_rne_code(float y) {
	const float v = fminf(fabsf(y), 6.0f);
	const u32 eb = __float_as_uint(fmaxf(v, 1.0f)) & 0x7F800000u;
	return __float_as_uint(__fadd_rn(v, __uint_as_float(eb + (eb >> 22) + ((22u << 23) - 254u))));
}

// SR code of y (NaN excluded) given nr = 255 - r, in byte 1 of the result.
KQ_DEV u32 kq_sr_code(float y, u32 nr) {
	const float v = fminf(fabsf(y), 6.0f);
	const u32 eb = __float_as_uint(fmaxf(v, 1.0f)) & 0x7F800000u;
	return __float_as_uint(__fadd_rz(v, __uint_as_float(eb + (eb >> 14) + ((14u << 23) - (254u << 8))))) + nr;
}

// kq_pack16 packs sixteen 4-bit codes, each in byte sel of r[t] (0x0040:
// byte 0, 0x0051: byte 1), element t into nibble t.
KQ_DEV u32 kq_pack4(u32 r0, u32 r1, u32 r2, u32 r3, u32 sel) {
	const u32 w = __byte_perm(__byte_perm(r0, r1, sel), __byte_perm(r2, r3, sel), 0x5410u);
	return w | (w >> 4);
}
KQ_DEV u64 kq_pack16(const u32 r[16], u32 sel) {
	const u32 q0 = kq_pack4(r[0], r[1], r[2], r[3], sel), q1 = kq_pack4(r[4], r[5], r[6], r[7], sel);
	const u32 q2 = kq_pack4(r[8], r[9], r[10], r[11], sel), q3 = kq_pack4(r[12], r[13], r[14], r[15], sel);
	return (u64)__byte_perm(q0, q1, 0x6420u) | ((u64)__byte_perm(q2, q3, 0x6420u) << 32);
}

// kq_q16f quantizes 16 NaN-free values with factor f (SR bytes from the
// Philox block w): the same packed codes as kq_quant16.
template <bool SR>
KQ_DEV u64 kq_q16f(const float v[16], float f, uint4 w) {
	u32 r[16];
#pragma unroll
	for (int t = 0; t < 16; t++) {
		const float y = __fmul_rn(v[t], f);
		const u32 sg = (__float_as_uint(y) >> 28) & 8u;
		if (SR) {
			const u32 nr = __byte_perm(~kq_word(w, t >> 2), 0u, 0x4440u | (u32)(t & 3));
			r[t] = kq_sr_code(y, nr) | (sg << 8);
		} else {
			r[t] = kq_rne_code(y) | sg;
		}
	}
	return kq_pack16(r, SR ? 0x0051u : 0x0040u);
}

// Largest |v| as float32 bits, NaN included (a result above 0x7F800000
// means the block holds a NaN).
KQ_DEV u32 kq_rawkey(const float v[16]) {
	u32 k = 0;
#pragma unroll
	for (int t = 0; t < 16; t++) k = max(k, __float_as_uint(v[t]) & 0x7FFFFFFFu);
	return k;
}

// Largest |x| of a block of sixteen 16-bit inputs (eight words) as float32
// bits, 0xFFFFFFFF when the block holds a NaN: one 16x2 max per two
// elements (|x| orders like its bits below the NaN codes).
KQ_DEV u32 kq_u16max(u32 a, u32 b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
	return __vmaxu2(a, b); // max.u16x2 is sm_90's
#else
	u32 d;
	asm("max.u16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
	return d;
#endif
}
KQ_DEV u32 kq_key16_max(const uint4 *L) {
	const u32 m0 = kq_u16max(kq_u16max(L[0].x & 0x7FFF7FFFu, L[0].y & 0x7FFF7FFFu), kq_u16max(L[0].z & 0x7FFF7FFFu, L[0].w & 0x7FFF7FFFu));
	const u32 m1 = kq_u16max(kq_u16max(L[1].x & 0x7FFF7FFFu, L[1].y & 0x7FFF7FFFu), kq_u16max(L[1].z & 0x7FFF7FFFu, L[1].w & 0x7FFF7FFFu));
	const u32 m = kq_u16max(m0, m1);
	return max(m & 0xFFFFu, m >> 16);
}
KQ_DEV u32 kq_key16(const kq_bf16 *, const uint4 *L) {
	const u32 k = kq_key16_max(L);
	return k > 0x7F80u ? 0xFFFFFFFFu : k << 16;
}
KQ_DEV u32 kq_key16(const kq_f16 *, const uint4 *L) {
	const u32 k = kq_key16_max(L);
	return k > 0x7C00u ? 0xFFFFFFFFu : __float_as_uint(kq_f16_to_f32(k));
}

// kq_block16 quantizes one whole block of 16 values whose largest |v| has
// the float32 bits key (kq_rawkey; above 0x7F800000 for a NaN): block scale
// code to *d, packed codes returned. tab, when not NULL, holds the factors
// by code.
template <bool SR>
KQ_DEV u64 kq_block16(const float v[16], u32 key, float s6, float sinv, const float *tab, u64 n0, u32 operand, u32 group, u64 seed, u32 *d) {
	if (key > 0x7F800000u) {
		*d = kq_e4m3(__fmul_rn(kq_block_amax(v, 16), s6));
		return kq_quant16(v, 16, kq_factor(*d, sinv), SR, n0, operand, group, seed);
	}
	*d = kq_e4m3(__fmul_rn(__uint_as_float(key), s6));
	const float f = tab != 0 ? tab[*d] : kq_factor(*d, sinv);
	uint4 w = make_uint4(0u, 0u, 0u, 0u);
	if (SR) {
		const u64 b = n0 >> 4;
		w = kq_philox((u32)b, (u32)(b >> 32), operand, group, (u32)seed, (u32)(seed >> 32));
	}
	return kq_q16f<SR>(v, f, w);
}

// The tensor's constants: S, 1/S and S/6, as the slow paths compute them.
struct kq_tscale {
	float s6, sinv;
};
KQ_DEV kq_tscale kq_tscale_of(const u32 *amax) {
	const float s = kq_tensor_scale(__uint_as_float(*amax));
	kq_tscale t;
	t.sinv = __fdiv_rn(1.0f, s);
	t.s6 = __fdiv_rn(s, 6.0f);
	return t;
}

// Factor table by block scale code (blockDim.x >= 128); the caller
// synchronises.
KQ_DEV void kq_fill_tab(float *tab, float sinv) {
	if (threadIdx.x < 128) tab[threadIdx.x] = kq_factor(threadIdx.x, sinv);
}

KQ_DEV void kq_unpack16(const kq_bf16 *, const uint4 *L, float v[16]) {
#pragma unroll
	for (int q = 0; q < 2; q++) {
		kq_unpack_bf16(L[q].x, v + 8 * q); kq_unpack_bf16(L[q].y, v + 8 * q + 2);
		kq_unpack_bf16(L[q].z, v + 8 * q + 4); kq_unpack_bf16(L[q].w, v + 8 * q + 6);
	}
}
KQ_DEV void kq_unpack16(const kq_f16 *, const uint4 *L, float v[16]) {
#pragma unroll
	for (int q = 0; q < 2; q++) {
		kq_unpack_f16(L[q].x, v + 8 * q); kq_unpack_f16(L[q].y, v + 8 * q + 2);
		kq_unpack_f16(L[q].z, v + 8 * q + 4); kq_unpack_f16(L[q].w, v + 8 * q + 6);
	}
}
KQ_DEV void kq_unpack16(const float *, const uint4 *L, float v[16]) {
#pragma unroll
	for (int q = 0; q < 4; q++) {
		v[4 * q] = __uint_as_float(L[q].x); v[4 * q + 1] = __uint_as_float(L[q].y);
		v[4 * q + 2] = __uint_as_float(L[q].z); v[4 * q + 3] = __uint_as_float(L[q].w);
	}
}

// Rowwise fast path (cols % 64 == 0, input and output 16-byte aligned,
// scale matrices 4-byte aligned): one item is 64 elements of a row (four
// blocks), written as 32 data bytes, one 4-byte scale word and one 4-byte
// swizzled scale word (the four entries are adjacent in the GEMM layout).
// A warp's 32 items are contiguous in memory (rows are), so for 16-bit
// inputs the warp reads its 4 KiB with coalesced 16-byte loads into shared
// memory (9 vectors per item, so that the read-back is free of bank
// conflicts) and each thread then reads back its own 128 bytes; float32
// inputs are read directly, 128 bytes per thread and batch.
template <typename T, bool SR>
__device__ void kq_nvf4_row_fast(const T *x, int rows, int cols, const u32 *amax, u8 *out, u8 *scales,
		int srows, int scols, u8 *swz, u64 seed, const int *offsets, int ngroups) {
	__shared__ float tab[128];
	__shared__ __align__(16) uint4 stg[sizeof(T) == 2 ? 8 : 1][32 * 9];
	const bool grouped = offsets != 0;
	kq_tscale ts = kq_tscale_of(amax);
	int gcur = 0;
	if (!grouped) {
		kq_fill_tab(tab, ts.sinv);
		__syncthreads();
	}
	const int nq = cols >> 6, lane = threadIdx.x & 31;
	const long long items = (long long)srows * nq, data_items = (long long)rows * nq;
	uint4 *ws = stg[sizeof(T) == 2 ? threadIdx.x >> 5 : 0];
	const long long step = (long long)gridDim.x * blockDim.x;
	for (long long it0 = (long long)blockIdx.x * blockDim.x + (threadIdx.x & ~31); it0 < items; it0 += step) {
		const long long it = it0 + lane;
		if constexpr (sizeof(T) == 2) {
			const uint4 *p = reinterpret_cast<const uint4 *>(x) + it0 * 8;
			uint4 L[8];
#pragma unroll
			for (int i = 0; i < 8; i++) {
				const int v = i * 32 + lane;
				L[i] = it0 + (v >> 3) < data_items ? p[v] : make_uint4(0u, 0u, 0u, 0u);
			}
			__syncwarp();
#pragma unroll
			for (int i = 0; i < 8; i++) {
				const int v = i * 32 + lane;
				ws[(v >> 3) * 9 + (v & 7)] = L[i];
			}
			__syncwarp();
		}
		if (it >= items) continue;
		const int m = (int)(it / nq), q = (int)(it % nq);
		const long long si = (long long)m * scols + q * 4;
		bool live = m < rows;
		int g = 0, m0 = 0;
		if (grouped && live) {
			if (m >= offsets[ngroups]) {
				live = false;
			} else {
				g = kq_group(offsets, ngroups, m);
				m0 = offsets[g];
			}
		}
		if (!live) {
			*reinterpret_cast<u32 *>(scales + si) = 0;
			if (swz != 0) *reinterpret_cast<u32 *>(swz + kq_swz(m, q * 4, scols)) = 0;
			continue;
		}
		if (grouped && g != gcur) {
			ts = kq_tscale_of(amax + g);
			gcur = g;
		}
		const float *ftab = grouped ? 0 : tab;
		const u64 nb = (u64)(m - m0) * (u64)cols + (u64)(q * 64);
		u64 packed[4];
		u32 dw = 0;
		if constexpr (sizeof(T) == 2) {
#pragma unroll
			for (int b = 0; b < 4; b++) {
				uint4 L[2];
				L[0] = ws[lane * 9 + 2 * b];
				L[1] = ws[lane * 9 + 2 * b + 1];
				float v[16];
				kq_unpack16(x, L, v);
				u32 d;
				packed[b] = kq_block16<SR>(v, kq_key16(x, L), ts.s6, ts.sinv, ftab, nb + 16 * b, 0u, (u32)g, seed, &d);
				dw |= d << (8 * b);
			}
		} else {
			const uint4 *p = reinterpret_cast<const uint4 *>(x + (long long)m * cols + q * 64);
#pragma unroll
			for (int b0 = 0; b0 < 4; b0 += 2) {
				uint4 L[8];
#pragma unroll
				for (int i = 0; i < 8; i++) L[i] = p[b0 * 4 + i];
#pragma unroll
				for (int b = 0; b < 2; b++) {
					float v[16];
					kq_unpack16(x, L + b * 4, v);
					u32 d;
					packed[b0 + b] = kq_block16<SR>(v, kq_rawkey(v), ts.s6, ts.sinv, ftab, nb + 16 * (b0 + b), 0u, (u32)g, seed, &d);
					dw |= d << (8 * (b0 + b));
				}
			}
		}
		uint4 *o = reinterpret_cast<uint4 *>(out + (long long)m * (cols >> 1) + q * 32);
		o[0] = make_uint4((u32)packed[0], (u32)(packed[0] >> 32), (u32)packed[1], (u32)(packed[1] >> 32));
		o[1] = make_uint4((u32)packed[2], (u32)(packed[2] >> 32), (u32)packed[3], (u32)(packed[3] >> 32));
		*reinterpret_cast<u32 *>(scales + si) = dw;
		if (swz != 0) *reinterpret_cast<u32 *>(swz + kq_swz(m, q * 4, scols)) = dw;
	}
}

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

// Element (row, c) of a tile.
KQ_DEV float kq_tile_at(const kq_bf16 *, const u32 *tile, int row, int c) {
	const u32 w = tile[row * KQ_TILE_ROW(kq_bf16) + (c >> 1)];
	return __uint_as_float((c & 1) ? (w & 0xFFFF0000u) : (w << 16));
}
KQ_DEV float kq_tile_at(const kq_f16 *, const u32 *tile, int row, int c) {
	const u32 w = tile[row * KQ_TILE_ROW(kq_f16) + (c >> 1)];
	return kq_f16_to_f32((c & 1) ? (w >> 16) : (w & 0xFFFFu));
}
KQ_DEV float kq_tile_at(const float *, const u32 *tile, int row, int c) { return __uint_as_float(tile[row * KQ_TILE_ROW(float) + c]); }

// Sixteen elements of a tile row from column c0 (c0 % 16 == 0), as 16-byte
// vectors.
template <typename T>
KQ_DEV const uint4 *kq_tile_seg(const u32 *tile, int row, int c0) {
	return reinterpret_cast<const uint4 *>(tile + row * KQ_TILE_ROW(T) + c0 * (int)sizeof(T) / 4);
}

// kq_tile_key unpacks the sixteen elements of a tile row from column c0
// into v and returns their largest |v| as kq_rawkey does (from the packed
// words for the 16-bit inputs H; the float32 overload below).
template <typename H>
KQ_DEV u32 kq_tile_key(const H *x, const u32 *tile, int row, int c0, float v[16]) {
	const uint4 *s = kq_tile_seg<H>(tile, row, c0);
	uint4 L[2];
	L[0] = s[0];
	L[1] = s[1];
	kq_unpack16(x, L, v);
	return kq_key16(x, L);
}
KQ_DEV u32 kq_tile_key(const float *x, const u32 *tile, int row, int c0, float v[16]) {
	const uint4 *s = kq_tile_seg<float>(tile, row, c0);
	uint4 L[4];
#pragma unroll
	for (int i = 0; i < 4; i++) L[i] = s[i];
	kq_unpack16(x, L, v);
	return kq_rawkey(v);
}

// Columnwise fast path (rows % 64 == 0, cols % 64 == 0, aligned): a block
// stages a 64 x 128 tile, each thread transforms and quantizes the 16-row
// runs of two columns, and the packed runs leave through shared memory as
// 16-byte stores (32 contiguous bytes per transposed row and tile). Grid
// (srows / 128, rows / 64); columns in [cols, srows) get zero scales. by
// is blockIdx.y, or the tile's row in its group's tensor (grouped).
template <typename T>
__device__ void kq_nvf4_col_fast(const T *x, int rows, int cols, const u32 *amax, u8 *out, u8 *scales,
		int srows, int scols, u8 *swz, int rht, u32 signs, int sr, u64 seed, u32 group, int by) {
	__shared__ __align__(16) u32 tile[KQ_TILE_WORDS(T)];
	__shared__ __align__(16) u64 stage[128][4];
	__shared__ u32 dstage[128];
	__shared__ float tab[128];
	const kq_tscale ts = kq_tscale_of(amax);
	kq_fill_tab(tab, ts.sinv);
	const int k0 = blockIdx.x * 128, m0 = by * 64;
	kq_load_tile(x, cols, m0, k0, tile);
	__syncthreads();
	const int j = threadIdx.x & 63, run = threadIdx.x >> 6;
#pragma unroll
	for (int h = 0; h < 2; h++) {
		const int c = 2 * j + h, k = k0 + c;
		float v[16];
#pragma unroll
		for (int i = 0; i < 16; i++) v[i] = kq_tile_at(x, tile, run * 16 + i, c);
		if (rht) kq_rht16(v, signs);
		u64 p = 0;
		u32 d = 0;
		if (k < cols) {
			const u64 n0 = (u64)k * (u64)rows + (u64)(m0 + run * 16);
			const u32 key = kq_rawkey(v);
			p = sr ? kq_block16<true>(v, key, ts.s6, ts.sinv, tab, n0, 1u, group, seed, &d)
			       : kq_block16<false>(v, key, ts.s6, ts.sinv, tab, n0, 1u, group, seed, &d);
		}
		stage[c][run] = p;
		reinterpret_cast<u8 *>(dstage)[c * 4 + run] = (u8)d;
	}
	__syncthreads();
	const int cc = threadIdx.x >> 1, half = threadIdx.x & 1, k = k0 + cc;
	if (k < cols) {
		*reinterpret_cast<uint4 *>(out + (long long)k * (rows >> 1) + (m0 >> 1) + half * 16) =
			*reinterpret_cast<const uint4 *>(&stage[cc][2 * half]);
	}
	if (half == 0 && k < srows) {
		const u32 dw = dstage[cc];
		*reinterpret_cast<u32 *>(scales + (long long)k * scols + (m0 >> 4)) = dw;
		if (swz != 0) *reinterpret_cast<u32 *>(swz + kq_swz(k, m0 >> 4, scols)) = dw;
	}
}

// Amax of the RHT of the columnwise operand, fast path (shapes as
// kq_nvf4_col_fast; grid (ceil(cols / 128), rows / 64)).
template <typename T>
__device__ void kq_nvf4_amax_rht_fast(const T *x, int rows, int cols, u32 *amax, u32 signs) {
	__shared__ __align__(16) u32 tile[KQ_TILE_WORDS(T)];
	const int k0 = blockIdx.x * 128, m0 = blockIdx.y * 64;
	kq_load_tile(x, cols, m0, k0, tile);
	__syncthreads();
	const int j = threadIdx.x & 63, run = threadIdx.x >> 6;
	float a = 0.0f;
#pragma unroll
	for (int h = 0; h < 2; h++) {
		float v[16];
#pragma unroll
		for (int i = 0; i < 16; i++) v[i] = kq_tile_at(x, tile, run * 16 + i, 2 * j + h);
		kq_rht16(v, signs);
#pragma unroll
		for (int t = 0; t < 16; t++) a = fmaxf(a, fabsf(v[t]));
	}
	kq_block_atomic_max(__float_as_uint(a), amax);
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

// 2D fast path (rows % 64 == 0, cols % 64 == 0, aligned): a block stages
// a 64 x 128 tile (4 x 8 tiles of 16 x 16); each thread reduces and
// quantizes two 16-element row segments, the tile amaxes meet in shared
// memory, the rowwise codes go out as 16-byte stores and, for the
// columnwise operand, are transposed nibble-wise in registers and leave
// through shared memory as 16-byte stores. The caller zeroes both scale
// matrices (their padding) first; swz_row and swz_col, when not NULL,
// also receive the scales in the GEMM layout (four columnwise entries
// adjacent there). Grid (ceil(cols / 128), rows / 64); by is blockIdx.y,
// or the tile's row in its group's tensor (grouped).
template <typename T>
__device__ void kq_nvf4_2d_fast(const T *x, int rows, int cols, const u32 *amax, u8 *out_row, u8 *scales_row,
		int scols_row, u8 *swz_row, u8 *out_col, u8 *scales_col, int scols_col, u8 *swz_col, int by) {
	__shared__ __align__(16) u32 tile[KQ_TILE_WORDS(T)];
	__shared__ u32 tam[32];
	__shared__ u32 rc[64][17];
	__shared__ __align__(16) u64 stage[128][4];
	__shared__ float tab[128];
	const kq_tscale ts = kq_tscale_of(amax);
	kq_fill_tab(tab, ts.sinv);
	if (threadIdx.x < 32) tam[threadIdx.x] = 0;
	const int k0 = blockIdx.x * 128, m0 = by * 64;
	kq_load_tile(x, cols, m0, k0, tile);
	__syncthreads();
	// Thread (m, sp) takes the row segments kb = sp and sp + 4 of tile row
	// m: four threads read 128 contiguous bytes, and the padded rows put
	// the next row's reads on the other banks.
	const int m = threadIdx.x >> 2, sp = threadIdx.x & 3;
	u32 key[2];
#pragma unroll
	for (int h = 0; h < 2; h++) {
		const int kb = sp + 4 * h;
		float v[16];
		key[h] = kq_tile_key(x, tile, m, kb * 16, v);
		const u32 a = key[h] > 0x7F800000u ? __float_as_uint(kq_block_amax(v, 16)) : key[h];
		if (a != 0) atomicMax(&tam[(m >> 4) * 8 + kb], a);
	}
	__syncthreads();
	u64 p[2];
	u32 d[2];
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
	if (out_col == 0) return;
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
	if (k >= cols) return;
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

// Kernels by input type. vec of the row kernel: 0 element loads, 1 vector
// loads, 2 the fast path; fast of the columnwise, RHT-amax and 2D kernels
// selects their tiled fast paths (the launchers check the shapes and
// alignments and size the grids).
#define KQ_NVFP4_KERNELS(T, sfx) \
extern "C" __global__ void __launch_bounds__(256) kq_nvf4_amax_##sfx(const T *x, int rows, int cols, u32 *amax, \
		const int *offsets, int ngroups, const int *flag, int vec) { \
	kq_nvf4_amax<T>(x, rows, cols, amax, offsets, ngroups, flag, vec); \
} \
extern "C" __global__ void __launch_bounds__(256) kq_nvf4_amax_rht_##sfx(const T *x, int rows, int cols, u32 *amax, u32 signs, \
		int fast, const int *offsets, int ngroups, const int *flag) { \
	if (offsets != 0) { \
		int o, n; \
		const int g = kq_grp_block(offsets, ngroups, flag, blockIdx.y * (fast ? 64 : 128), &o, &n); \
		if (g < 0) return; \
		amax += g; \
	} \
	if (fast) kq_nvf4_amax_rht_fast<T>(x, rows, cols, amax, signs); \
	else kq_nvf4_amax_rht<T>(x, rows, cols, amax, signs); \
} \
extern "C" __global__ void __launch_bounds__(256) kq_nvf4_row_##sfx(const T *x, int rows, int cols, const u32 *amax, u8 *out, \
		u8 *scales, int srows, int scols, u8 *swz, int sr, u64 seed, int vec, const int *offsets, int ngroups, const int *flag) { \
	if (vec == 2) { \
		if (flag != 0 && *flag != 0) return; \
		if (sr) kq_nvf4_row_fast<T, true>(x, rows, cols, amax, out, scales, srows, scols, swz, seed, offsets, ngroups); \
		else kq_nvf4_row_fast<T, false>(x, rows, cols, amax, out, scales, srows, scols, swz, seed, offsets, ngroups); \
		return; \
	} \
	kq_nvf4_row<T>(x, rows, cols, amax, out, scales, srows, scols, swz, sr, seed, vec, offsets, ngroups, flag); \
} \
extern "C" __global__ void __launch_bounds__(256) kq_nvf4_col_##sfx(const T *x, int rows, int cols, const u32 *amax, u8 *out, \
		u8 *scales, int srows, int scols, u8 *swz, int rht, u32 signs, int sr, u64 seed, u32 group, int fast, \
		const int *offsets, int ngroups, const int *flag) { \
	int by = blockIdx.y; \
	if (offsets != 0) { \
		const int tr = fast ? 64 : 128; \
		int o, n; \
		const int g = kq_grp_block(offsets, ngroups, flag, by * tr, &o, &n); \
		if (g < 0) return; \
		x += (long long)o * cols; \
		rows = n; \
		amax += g; \
		out += (long long)cols * (o >> 1); \
		scales += (long long)srows * (o >> 4); \
		if (swz != 0) swz += (long long)srows * (o >> 4); \
		scols = n >> 4; \
		group = (u32)g; \
		by -= o / tr; \
	} \
	if (fast) kq_nvf4_col_fast<T>(x, rows, cols, amax, out, scales, srows, scols, swz, rht, signs, sr, seed, group, by); \
	else kq_nvf4_col<T>(x, rows, cols, amax, out, scales, srows, scols, swz, rht, signs, sr, seed, group, by); \
} \
extern "C" __global__ void __launch_bounds__(256) kq_nvf4_2d_##sfx(const T *x, int rows, int cols, const u32 *amax, \
		u8 *out_row, u8 *scales_row, int scols_row, u8 *out_col, u8 *scales_col, int scols_col, int fast, \
		u8 *swz_row, u8 *swz_col, const int *offsets, int ngroups, const int *flag) { \
	if (!fast) { \
		kq_nvf4_2d<T>(x, rows, cols, amax, out_row, scales_row, scols_row, swz_row, out_col, scales_col, scols_col, swz_col, \
			offsets, ngroups, flag); \
		return; \
	} \
	int by = blockIdx.y; \
	if (offsets != 0) { \
		int o, n; \
		const int g = kq_grp_block(offsets, ngroups, flag, by * 64, &o, &n); \
		if (g < 0) return; \
		const long long srows_c = (long long)((cols + 127) >> 7) << 7; \
		x += (long long)o * cols; \
		rows = n; \
		amax += g; \
		if (out_row != 0) out_row += (long long)o * (cols >> 1); \
		if (scales_row != 0) scales_row += (long long)o * scols_row; \
		if (swz_row != 0) swz_row += (long long)o * scols_row; \
		if (out_col != 0) out_col += (long long)cols * (o >> 1); \
		if (scales_col != 0) scales_col += srows_c * (o >> 4); \
		if (swz_col != 0) swz_col += srows_c * (o >> 4); \
		scols_col = n >> 4; \
		by -= o >> 6; \
	} \
	kq_nvf4_2d_fast<T>(x, rows, cols, amax, out_row, scales_row, scols_row, swz_row, out_col, scales_col, scols_col, swz_col, by); \
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
