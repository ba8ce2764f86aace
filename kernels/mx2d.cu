// kquant MXFP8BlockScaling with 32x32 two-dimensional weight tiles: one
// E8M0 exponent per 32x32 tile of a [rows, cols] tensor, shared by the
// rowwise and the columnwise operand, in one pass over the input.
//
// The contract (docs/quantization-formats.md, MXFP8 row: "optional 32x32 2D
// blocks for weights") and the pure-Go reference (agent/quant/reference,
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
// conversions) is written again here, the same as quantize.cu's kq_e8m0_te,
// kq_e8m0_ocp, kq_e8m0_encode_factor and kq_cvt2: the same bits.
//
// The build flags (hack/gen-kernels.sh) keep IEEE float32 semantics: no fast
// math, no flush to zero, no FMA contraction. This file is self-contained
// (no local includes) so that the hash stamped on mx2d.ptx covers everything
// the PTX came from.
//
// Graph safety: the kernel reads nothing from the host and finishes the
// fused tensor amax with a ticket counter in the per-tensor state that
// resets its own scratch, so a step can be captured once and replayed.

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define KQ2_DEV static __device__ __forceinline__
#define KQ2_QNAN_BITS 0x7FC00000u
#define KQ2_E4M3 0
#define KQ2_E5M2 1

// The per-tensor state words (as quantize.cu's): the amax reduction's
// scratch (left zero) and the tensor amax.
#define KQ2_ST_ACC 0
#define KQ2_ST_TICKET 1
#define KQ2_ST_AMAX 2

// 16-bit inputs are carried as their bits.
struct kq2_bf16 { u16 bits; };
struct kq2_f16 { u16 bits; };

KQ2_DEV float kq2_bf16_f32(u32 bits) { return __uint_as_float(bits << 16); }
KQ2_DEV float kq2_f16_f32(u32 bits) {
	// Widening half to float is exact; no .ftz, so subnormals survive.
	float f;
	u16 h = (u16)bits;
	asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
	return f;
}

// kq2_cvt2 converts two floats with one rounding, round to nearest even,
// saturating (satfinite: finite overflow and +-inf become +-max, NaN becomes
// 0x7F); lo lands in the low byte. PTX puts its first source operand in the
// upper half.
template <int fmt>
KQ2_DEV u32 kq2_cvt2(float lo, float hi) {
	u16 r;
	if (fmt == KQ2_E4M3) {
		asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
	} else {
		asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
	}
	return r;
}

// The E8M0 exponent of a tile amax: TE rounds up (amax times the float32
// reciprocal of fp8_max, then the exponent, plus one for a nonzero
// mantissa), OCP takes floor(log2(amax)) - emax.
template <int fmt>
KQ2_DEV u32 kq2_e8m0_te(float amax) {
	float inv = __uint_as_float(fmt == KQ2_E4M3 ? 0x3B124925u : 0x37924925u); // 1/448, 1/57344
	float t = __fmul_rn(amax, inv);
	u32 b = __float_as_uint(t) & 0x7FFFFFFFu;
	if (b > 0x7F800000u) return 0xFFu;
	if (b == 0x7F800000u) return 0xFEu;
	u32 exp = b >> 23, man = b & 0x7FFFFFu;
	if (exp == 0u) return 0u;
	if (man != 0u && exp != 0xFEu) exp++;
	return exp;
}
template <int fmt>
KQ2_DEV u32 kq2_e8m0_ocp(float amax) {
	const int emax = fmt == KQ2_E4M3 ? 8 : 15;
	u32 b = __float_as_uint(amax) & 0x7FFFFFFFu;
	if (b > 0x7F800000u) return 0xFFu;
	if (b == 0x7F800000u) return 0xFEu;
	if (b == 0u) return 0u;
	int fl;
	if ((b >> 23) == 0u) fl = (31 - __clz((int)b)) - 149; // subnormal amax
	else fl = (int)(b >> 23) - 127;
	int e = fl - emax + 127;
	if (e < 0) e = 0;
	if (e > 254) e = 254;
	return (u32)e;
}
template <int fmt, int ocp>
KQ2_DEV u32 kq2_e8m0(float amax) {
	return ocp ? kq2_e8m0_ocp<fmt>(amax) : kq2_e8m0_te<fmt>(amax);
}
// 2^(127-e), the factor that scales data into the FP8 range.
KQ2_DEV float kq2_factor(u32 e) {
	if (e == 255u) return __uint_as_float(KQ2_QNAN_BITS);
	if (e == 254u) return __uint_as_float(0x00400000u);
	return __uint_as_float((254u - e) << 23);
}

// The swizzled (GEMM) offset of entry (i, j) of a scale matrix with ncols
// columns (docs/quantization-formats.md).
KQ2_DEV long long kq2_swz(long long i, int j, int ncols) {
	return ((i / 128) * (ncols / 4) + j / 4) * 512 + (i % 32) * 16 + ((i % 128) / 32) * 4 + (j % 4);
}

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

KQ2_DEV u32 kq2_pmax(kq2_bf16, u32 a, u32 b) {
	u32 r;
	asm("max.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
	return r;
}
KQ2_DEV u32 kq2_pmax(kq2_f16, u32 a, u32 b) {
	u32 r;
	asm("max.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
	return r;
}
template <typename T>
KQ2_DEV u32 kq2_acc(T tag, u32 acc, u32 w) { return kq2_pmax(tag, acc, w & 0x7FFF7FFFu); }
KQ2_DEV u32 kq2_acc(float, u32 acc, u32 w) {
	return __float_as_uint(fmaxf(__uint_as_float(acc), fabsf(__uint_as_float(w))));
}
KQ2_DEV float kq2_acc_value(kq2_bf16, u32 acc) { return fmaxf(kq2_bf16_f32(acc & 0xFFFFu), kq2_bf16_f32(acc >> 16)); }
KQ2_DEV float kq2_acc_value(kq2_f16, u32 acc) { return fmaxf(kq2_f16_f32(acc & 0xFFFFu), kq2_f16_f32(acc >> 16)); }
KQ2_DEV float kq2_acc_value(float, u32 acc) { return __uint_as_float(acc); }

// Element k (0..7) of a row's words, widened to float32.
KQ2_DEV float kq2_elem(kq2_bf16, const u32 *w, int k) { return kq2_bf16_f32((k & 1) ? (w[k >> 1] >> 16) : (w[k >> 1] & 0xFFFFu)); }
KQ2_DEV float kq2_elem(kq2_f16, const u32 *w, int k) { return kq2_f16_f32((k & 1) ? (w[k >> 1] >> 16) : (w[k >> 1] & 0xFFFFu)); }
KQ2_DEV float kq2_elem(float, const u32 *w, int k) { return __uint_as_float(w[k]); }

// The raw bits of one element, widened to a word.
KQ2_DEV u32 kq2_bits(const kq2_bf16 *x, long long i) { return x[i].bits; }
KQ2_DEV u32 kq2_bits(const kq2_f16 *x, long long i) { return x[i].bits; }
KQ2_DEV u32 kq2_bits(const float *x, long long i) { return __float_as_uint(x[i]); }

// kq2_load_row loads the 8 elements at x[i .. i+8) of a row, n of which
// (0..8) lie in the tensor, zero for the others: with vec (n == 8 or 0 and
// x + i 16-byte aligned) as 16-byte loads, else element by element.
template <typename T>
KQ2_DEV void kq2_load_row(const T *x, long long i, int n, bool vec, u32 w[kq2_words<T>::W]) {
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

KQ2_DEV float kq2_warp_max(float v) {
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
	return v;
}

// kq2_finish reduces the tile amaxes the block saw (m, per thread) into the
// state's amax word: atomicMax on the float bits of the block's maximum
// (amaxes are nonnegative, so their bits order as the values), and the last
// block to arrive (a ticket counter) moves the result to the amax word and
// resets the scratch for the next launch. Every thread of the block calls
// it, once.
KQ2_DEV void kq2_finish(float m, u32 *st) {
	__shared__ float warp_max[32];
	if (st == 0) return;
	u32 tid = threadIdx.x;
	u32 nwarps = (blockDim.x + 31u) >> 5;
	m = kq2_warp_max(m);
	if ((tid & 31u) == 0u) warp_max[tid >> 5] = m;
	__syncthreads();
	if (tid >= 32u) return;
	m = kq2_warp_max(tid < nwarps ? warp_max[tid] : 0.0f);
	if (tid != 0u) return;
	atomicMax(&st[KQ2_ST_ACC], __float_as_uint(m));
	__threadfence();
	u32 ticket = atomicAdd(&st[KQ2_ST_TICKET], 1u);
	if (ticket != gridDim.x * gridDim.y * gridDim.z - 1u) return;
	__threadfence();
	u32 amax = atomicExch(&st[KQ2_ST_ACC], 0u);
	atomicExch(&st[KQ2_ST_TICKET], 0u);
	st[KQ2_ST_AMAX] = amax;
}

// ---- the 2D kernel --------------------------------------------------------------
//
// A warp owns a 32x64 piece of the padded element space: two 32x32 tiles
// side by side. Lane (rq, cg) = (lane / 8, lane % 8) holds rows rq + 4i (i =
// 0..7) and columns 8cg..8cg+7 (one 16-byte load per row for 16-bit
// inputs, two for float32): a warp load covers four whole 128-byte row
// segments (16-bit). Lanes cg < 4 hold tile 0, cg >= 4 tile 1; four
// shuffles give each lane its tile's amax, one more the other tile's
// exponent. Each row's 8 codes are converted once and stored (8 bytes) to
// both operands' data. Lane l then writes the rowwise scale bytes of tile
// row l (both tiles) and the columnwise scale bytes of columns 2l, 2l + 1,
// and their swizzled copies; tiles past the tensor load nothing and write
// the zero padding, so that every scale byte is written by exactly one
// lane: the rowwise matrix [32 srows_col, scols_col / 32] and the columnwise
// [srows_col, scols_col] both span roundup(rows,128) x roundup(cols,128)
// elements, and the warps stride over its 32x64 pieces.
//
// pf: prefetch. The warp issues the next piece's loads as soon as it has
// the current one's, so that they stay in flight while it converts (as
// quantize.cu's fused MXFP8 kernel does; 32 more registers for 16-bit
// inputs). The float32 kernel, with twice the words, does without.
template <typename T, int fmt, int ocp, int pf>
KQ2_DEV void kq2_impl(const T *x, int rows, int cols, u8 *out_row, u8 *sc_row, u8 *swz_row, int scols_row,
		u8 *out_col, u8 *sc_col, u8 *swz_col, int srows_col, int scols_col, u32 *st, int vec) {
	const int W = kq2_words<T>::W;
	const T tag = T();
	const u32 full = 0xFFFFFFFFu;
	const u32 lane = threadIdx.x & 31u;
	const int cg = (int)(lane & 7u), rq = (int)(lane >> 3);
	const bool hi = cg >= 4; // the lane's tile is the piece's second
	long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
	const int nct = scols_col / 64;
	const long long ntiles = (long long)srows_col * nct;
	const int nrb = (rows + 31) / 32, nkb = (cols + 31) / 32;
	const long long stride4 = 4LL * cols; // elements from one of the lane's rows to the next
	float tm = 0.0f;
	int rb = (int)(warp / nct), ct = (int)(warp % nct);
	const int drb = (int)(nwarps / nct), dct = (int)(nwarps % nct);
	u32 nx[8][W];
	if (pf) {
		int c = ct * 64 + cg * 8, r0 = rb * 32 + rq;
		bool live = warp < ntiles;
#pragma unroll
		for (int i = 0; i < 8; i++) {
			int n = (live && r0 + 4 * i < rows) ? min(8, cols - c) : 0;
			kq2_load_row(x, (long long)(r0 + 4 * i) * cols + c, n, vec, nx[i]);
		}
	}
	for (long long t = warp; t < ntiles; t += nwarps) {
		const int rbc = rb, ctc = ct;
		const int c = ctc * 64 + cg * 8, r0 = rbc * 32 + rq;
		const int ncol = min(8, cols - c); // the lane's columns in the tensor (<= 0: none)
		const long long o0 = (long long)r0 * cols + c;
		rb += drb;
		ct += dct;
		if (ct >= nct) {
			ct -= nct;
			rb++;
		}
		u32 v[8][W];
		if (pf) {
#pragma unroll
			for (int i = 0; i < 8; i++)
#pragma unroll
				for (int k = 0; k < W; k++) v[i][k] = nx[i][k];
			const int cn = ct * 64 + cg * 8, rn = rb * 32 + rq;
			const bool live = t + nwarps < ntiles;
#pragma unroll
			for (int i = 0; i < 8; i++) {
				int n = (live && rn + 4 * i < rows) ? min(8, cols - cn) : 0;
				kq2_load_row(x, (long long)(rn + 4 * i) * cols + cn, n, vec, nx[i]);
			}
		} else {
#pragma unroll
			for (int i = 0; i < 8; i++) {
				int n = r0 + 4 * i < rows ? ncol : 0;
				kq2_load_row(x, o0 + i * stride4, n, vec, v[i]);
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
		const u32 e = kq2_e8m0<fmt, ocp>(am);
		const float f = kq2_factor(e);
		const u32 eo = __shfl_xor_sync(full, e, 4);
		const u32 e0 = hi ? eo : e, e1 = hi ? e : eo; // the piece's two tile exponents
		// Codes: converted once, stored to both operands.
#pragma unroll
		for (int i = 0; i < 8; i++) {
			if (r0 + 4 * i >= rows || ncol <= 0) continue;
			uint2 q;
			q.x = kq2_cvt2<fmt>(__fmul_rn(kq2_elem(tag, v[i], 0), f), __fmul_rn(kq2_elem(tag, v[i], 1), f)) |
			      (kq2_cvt2<fmt>(__fmul_rn(kq2_elem(tag, v[i], 2), f), __fmul_rn(kq2_elem(tag, v[i], 3), f)) << 16);
			q.y = kq2_cvt2<fmt>(__fmul_rn(kq2_elem(tag, v[i], 4), f), __fmul_rn(kq2_elem(tag, v[i], 5), f)) |
			      (kq2_cvt2<fmt>(__fmul_rn(kq2_elem(tag, v[i], 6), f), __fmul_rn(kq2_elem(tag, v[i], 7), f)) << 16);
			const long long o = o0 + i * stride4;
			if (vec) {
				if (out_row != 0) *reinterpret_cast<uint2 *>(out_row + o) = q;
				if (out_col != 0) *reinterpret_cast<uint2 *>(out_col + o) = q;
			} else {
#pragma unroll
				for (int k = 0; k < 8; k++) {
					if (k >= ncol) break;
					const u8 b = (u8)((k < 4 ? q.x >> (8 * k) : q.y >> (8 * (k - 4))) & 0xFFu);
					if (out_row != 0) out_row[o + k] = b;
					if (out_col != 0) out_col[o + k] = b;
				}
			}
		}
		// Rowwise scales: row rbc * 32 + lane, blocks 2 ctc and 2 ctc + 1.
		if (out_row != 0) {
			const int r = rbc * 32 + (int)lane, kb = 2 * ctc;
			const u8 s0 = (r < rows && kb < nkb) ? (u8)e0 : (u8)0;
			const u8 s1 = (r < rows && kb + 1 < nkb) ? (u8)e1 : (u8)0;
			u8 *p = sc_row + (long long)r * scols_row + kb;
			p[0] = s0;
			p[1] = s1;
			if (swz_row != 0) {
				// kb is even: kb and kb + 1 are neighbours in the layout.
				u8 *z = swz_row + kq2_swz(r, kb, scols_row);
				z[0] = s0;
				z[1] = s1;
			}
		}
		// Columnwise scales: row rbc, columns 64 ctc + 2 lane and the next.
		if (out_col != 0) {
			const int k0 = ctc * 64 + 2 * (int)lane;
			const u8 ev = (u8)(lane < 16u ? e0 : e1);
			const u8 s0 = (rbc < nrb && k0 < cols) ? ev : (u8)0;
			const u8 s1 = (rbc < nrb && k0 + 1 < cols) ? ev : (u8)0;
			u8 *p = sc_col + (long long)rbc * scols_col + k0;
			p[0] = s0;
			p[1] = s1;
			if (swz_col != 0) {
				// Swizzled as the transposed matrix: entry (k, rbc).
				swz_col[kq2_swz(k0, rbc, srows_col)] = s0;
				swz_col[kq2_swz(k0 + 1, rbc, srows_col)] = s1;
			}
		}
	}
	kq2_finish(tm, st);
}

// kq2_run picks the instantiation for the format and the scale rounding,
// so that the conversions and exponents carry no branch on them.
template <typename T, int pf>
KQ2_DEV void kq2_run(const T *x, int rows, int cols, u8 *out_row, u8 *sc_row, u8 *swz_row, int scols_row,
		u8 *out_col, u8 *sc_col, u8 *swz_col, int srows_col, int scols_col, int fmt, int ocp, u32 *st, int vec) {
	if (fmt == KQ2_E4M3 && !ocp)
		kq2_impl<T, KQ2_E4M3, 0, pf>(x, rows, cols, out_row, sc_row, swz_row, scols_row, out_col, sc_col, swz_col, srows_col, scols_col, st, vec);
	else if (fmt == KQ2_E4M3)
		kq2_impl<T, KQ2_E4M3, 1, pf>(x, rows, cols, out_row, sc_row, swz_row, scols_row, out_col, sc_col, swz_col, srows_col, scols_col, st, vec);
	else if (!ocp)
		kq2_impl<T, KQ2_E5M2, 0, pf>(x, rows, cols, out_row, sc_row, swz_row, scols_row, out_col, sc_col, swz_col, srows_col, scols_col, st, vec);
	else
		kq2_impl<T, KQ2_E5M2, 1, pf>(x, rows, cols, out_row, sc_row, swz_row, scols_row, out_col, sc_col, swz_col, srows_col, scols_col, st, vec);
}

// ---- entry points ---------------------------------------------------------------
//
// At most 128 registers, 2 blocks of 256 threads per SM (the launcher sizes
// its grid to the blocks that fit at once, so that the fused amax commits
// once per resident block). out_row / out_col NULL skips that operand (and
// its scale matrices); swz_row / swz_col NULL skips the swizzled copy; st
// NULL skips the tensor amax. vec: cols % 8 == 0 and 16-byte aligned input,
// 8-byte aligned data outputs.
#define KQ2_KERNEL(SUF, T, PF)                                                                          \
	extern "C" __global__ void __launch_bounds__(256, 2) kq_mx2d_##SUF(const T *x, int rows, int cols,  \
			u8 *out_row, u8 *sc_row, u8 *swz_row, int scols_row, u8 *out_col, u8 *sc_col, u8 *swz_col, \
			int srows_col, int scols_col, int fmt, int ocp, u32 *st, int vec) {                     \
		kq2_run<T, PF>(x, rows, cols, out_row, sc_row, swz_row, scols_row, out_col, sc_col, swz_col, \
			srows_col, scols_col, fmt, ocp, st, vec);                                               \
	}

KQ2_KERNEL(f32, float, 0)
KQ2_KERNEL(bf16, kq2_bf16, 1)
KQ2_KERNEL(f16, kq2_f16, 1)
