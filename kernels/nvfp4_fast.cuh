// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// nvfp4_fast.cuh: part of nvfp4.cu (included once, after the general
// paths): the fast paths for whole 16-element blocks and 16-byte aligned
// rows (rowwise, the tiled columnwise, RHT-amax and 2D kernels). Not a
// header of its own: it uses what nvfp4.cu defines before it; the entry
// points are in nvfp4.cu.

// ---- Fast paths (whole 16-element blocks, 16-byte aligned rows) ----
//
// Hopper issues one instruction per clock per scheduler, and at full
// memory bandwidth a BF16 quantize has about 20 of them per element to
// spend, so the fast paths keep the per-element work to a few
// instructions while producing the same bytes as the functions above:
//  - E2M1 round to nearest even without a comparison chain: v = min(|y|,
//    6); with P = 2^e the power of two of max(v, 1), the multiply-add
//    P * (2^22 + 1) + v rounds v to the E2M1 step P / 2 (ties to even:
//    P * (2^22 + 1) is an even number of steps above 2^22 P) and leaves
//    2 + round(2v / P) in the low bits of the sum's bits; adding the
//    bits of P shifted right by 22 (2e + 254) makes the low byte the
//    code 2e + round(2v / P) (checked against the former magic-number
//    add, itself checked against kq_e2m1, for all 2^32 inputs, NaN
//    aside);
//  - stochastic rounding the same way with round-toward-zero, the
//    multiplier 2^14 + 1 and a step 256 times finer: the low 16 bits hold
//    code << 8 | frac, and adding 255 - r carries into the code exactly
//    when r < frac (kq_e2m1_sr);
//  - codes are gathered and packed with byte permutes;
//  - the element factor f = 1 / (float(d) / S) depends only on the block
//    scale code d, so a block of threads tabulates the 127 values once;
//  - a block containing a NaN takes the reference path (kq_quant16), as
//    NaN codes drop the sign.

// RNE code of y (NaN excluded) in the low byte of the result (bits 3-7
// zero): five instructions (two min/max, and, multiply-add, shifted add).
KQ_DEV u32 kq_rne_code(float y) {
	const float v = fminf(fabsf(y), KQ_E2M1_MAX);
	const u32 eb = __float_as_uint(fmaxf(v, 1.0f)) & 0x7F800000u;
	return __float_as_uint(__fmaf_rn(__uint_as_float(eb), 4194305.0f, v)) + (eb >> 22);
}

// SR code of y (NaN excluded) given nr = 255 - r, in byte 1 of the result
// (bits 12-15 zero). The sum's bits above bit 15 carry nothing.
KQ_DEV u32 kq_sr_code(float y, u32 nr) {
	const float v = fminf(fabsf(y), KQ_E2M1_MAX);
	const u32 eb = __float_as_uint(fmaxf(v, 1.0f)) & 0x7F800000u;
	return __float_as_uint(__fmaf_rz(__uint_as_float(eb), 16385.0f, v)) + (eb >> 14) + nr;
}

// kq_pack16 packs sixteen 4-bit codes, each in byte sel of r[t] (0x0040:
// byte 0, 0x0051: byte 1), element t into nibble t. The code bytes have
// bits 4-7 zero, so w + (w >> 4) (one shifted add) is w | (w >> 4).
KQ_DEV u32 kq_pack4(u32 r0, u32 r1, u32 r2, u32 r3, u32 sel) {
	const u32 w = __byte_perm(__byte_perm(r0, r1, sel), __byte_perm(r2, r3, sel), 0x5410u);
	return w + (w >> 4);
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

// ---- Packed paths: sixteen 16-bit values in eight words P[k] (element
// 2k in the low half, 2k + 1 in the high half; BF16 or FP16 by H) ----
//
// The codes' magnitudes come from kq_rne_code / kq_sr_code as above; the
// signs come straight from the packed words: one sign-replicating byte
// permute of the bytes holding four elements' sign bits (bits 15 and 31 of
// two words) and one and-or put them on bit 3 of each code byte, instead
// of a shift and an or per element. A code's sign is its input's: the factor f
// is positive, so y = x * f keeps the sign of x, -0 included (code 8).

// kq_sgn4 has on bit 3 of byte k the sign of element k of the four
// 16-bit elements in pa (0, 1) and pb (2, 3), nothing else: prmt's
// sign-replicating selectors (8 | byte) fill byte k with the sign of the
// element's high byte.
KQ_DEV u32 kq_sgn4(u32 pa, u32 pb) {
	u32 d;
	asm("prmt.b32 %0, %1, %2, 0xFDB9;" : "=r"(d) : "r"(pa), "r"(pb));
	return d & 0x08080808u;
}

// kq_pack4s is kq_pack4 with the signs of the four elements, whose
// packed 16-bit words are pa (elements 0, 1) and pb (2, 3).
KQ_DEV u32 kq_pack4s(u32 r0, u32 r1, u32 r2, u32 r3, u32 sel, u32 pa, u32 pb) {
	const u32 w = __byte_perm(__byte_perm(r0, r1, sel), __byte_perm(r2, r3, sel), 0x5410u) | kq_sgn4(pa, pb);
	return w + (w >> 4);
}

// kq_q16p quantizes sixteen NaN-free packed values with factor f (SR
// bytes from the Philox block w): the same packed codes as kq_q16f on the
// widened values.
template <typename H, bool SR>
KQ_DEV u64 kq_q16p(const u32 P[8], float f, uint4 w) {
	u32 r[16];
#pragma unroll
	for (int t = 0; t < 16; t++) {
		const float x = (t & 1) ? kq_phi(H(), P[t >> 1]) : kq_plo(H(), P[t >> 1]);
		const float y = __fmul_rn(x, f);
		if (SR) {
			const u32 nr = __byte_perm(~kq_word(w, t >> 2), 0u, 0x4440u | (u32)(t & 3));
			r[t] = kq_sr_code(y, nr);
		} else {
			r[t] = kq_rne_code(y);
		}
	}
	const u32 sel = SR ? 0x0051u : 0x0040u;
	const u32 q0 = kq_pack4s(r[0], r[1], r[2], r[3], sel, P[0], P[1]), q1 = kq_pack4s(r[4], r[5], r[6], r[7], sel, P[2], P[3]);
	const u32 q2 = kq_pack4s(r[8], r[9], r[10], r[11], sel, P[4], P[5]), q3 = kq_pack4s(r[12], r[13], r[14], r[15], sel, P[6], P[7]);
	return (u64)__byte_perm(q0, q1, 0x6420u) | ((u64)__byte_perm(q2, q3, 0x6420u) << 32);
}

// kq_pkey16 is kq_key16 of eight packed words.
template <typename H>
KQ_DEV u32 kq_pkey16(const u32 P[8]) {
	uint4 L[2];
	L[0] = make_uint4(P[0], P[1], P[2], P[3]);
	L[1] = make_uint4(P[4], P[5], P[6], P[7]);
	return kq_key16((const H *)0, L);
}

// kq_block16_ref is the reference path of kq_block16 and kq_block16p (a
// block holding a NaN): the scale code of the block's amax (NaNs skipped)
// to *d, the codes by kq_quant16.
template <bool SR>
KQ_DEV u64 kq_block16_ref(const float v[16], float s6, float sinv, u64 n0, u32 operand, u32 group, u64 seed, u32 *d) {
	*d = kq_e4m3(__fmul_rn(kq_block_amax(v, 16), s6));
	return kq_quant16(v, 16, kq_factor(*d, sinv), SR, n0, operand, group, seed);
}

// kq_block16_w: with SR the Philox words of the block from element n0
// (counter n0 / 16), else zeros.
template <bool SR>
KQ_DEV uint4 kq_block16_w(u64 n0, u32 operand, u32 group, u64 seed) {
	if (!SR) return make_uint4(0u, 0u, 0u, 0u);
	const u64 b = n0 >> 4;
	return kq_philox((u32)b, (u32)(b >> 32), operand, group, (u32)seed, (u32)(seed >> 32));
}

// kq_block16_fw is the fast path's block scale of kq_block16 and
// kq_block16p: the scale code of the amax bits key to *d, its factor
// returned (from tab when not NULL), and the block's kq_block16_w in w.
template <bool SR>
KQ_DEV float kq_block16_fw(u32 key, float s6, float sinv, const float *tab, u64 n0, u32 operand, u32 group, u64 seed,
		u32 *d, uint4 &w) {
	*d = kq_e4m3(__fmul_rn(__uint_as_float(key), s6));
	const float f = tab != 0 ? tab[*d] : kq_factor(*d, sinv);
	w = kq_block16_w<SR>(n0, operand, group, seed);
	return f;
}

// kq_block16p is kq_block16 on eight packed words (key from kq_pkey16):
// the NaN-free blocks never widen to a float array.
template <typename H, bool SR>
KQ_DEV u64 kq_block16p(const u32 P[8], u32 key, float s6, float sinv, const float *tab, u64 n0, u32 operand, u32 group, u64 seed, u32 *d) {
	if (key > 0x7F800000u) {
		float v[16];
		kq_widen<H, 8>(P, v);
		return kq_block16_ref<SR>(v, s6, sinv, n0, operand, group, seed, d);
	}
	uint4 w;
	const float f = kq_block16_fw<SR>(key, s6, sinv, tab, n0, operand, group, seed, d, w);
	return kq_q16p<H, SR>(P, f, w);
}

// kq_bf16x2 rounds two float32 values to BF16 (nearest even; overflow to
// infinity, subnormals kept) in one instruction: lo in the low half. Equal
// to kq_bf16_rne on every non-NaN input; a NaN stays a NaN (its payload
// may differ, which no output shows: a block holding a NaN takes the
// reference path, where every NaN gives code 0x7 and amaxes skip NaNs).
KQ_DEV u32 kq_bf16x2(float lo, float hi) {
	u32 d;
	asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
	return d;
}

// kq_block16 quantizes one whole block of 16 values whose largest |v| has
// the float32 bits key (kq_rawkey; above 0x7F800000 for a NaN): block scale
// code to *d, packed codes returned. tab, when not NULL, holds the factors
// by code.
template <bool SR>
KQ_DEV u64 kq_block16(const float v[16], u32 key, float s6, float sinv, const float *tab, u64 n0, u32 operand, u32 group, u64 seed, u32 *d) {
	if (key > 0x7F800000u) return kq_block16_ref<SR>(v, s6, sinv, n0, operand, group, seed, d);
	uint4 w;
	const float f = kq_block16_fw<SR>(key, s6, sinv, tab, n0, operand, group, seed, d, w);
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
	t.s6 = __fdiv_rn(s, KQ_E2M1_MAX);
	return t;
}

// Factor table by block scale code (blockDim.x >= 128); the caller
// synchronises.
KQ_DEV void kq_fill_tab(float *tab, float sinv) {
	if (threadIdx.x < 128) tab[threadIdx.x] = kq_factor(threadIdx.x, sinv);
}

template <typename H>
KQ_DEV void kq_unpack16(const H *, const uint4 *L, float v[16]) {
#pragma unroll
	for (int q = 0; q < 2; q++) kq_widen8<H>(L[q], v + 8 * q);
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
// The rowwise fast path's shared memory, one copy for all of its
// instantiations (SR or not, grouped or not) of a kernel: function-scope
// __shared__ arrays in a template are one per instantiation, and two
// copies of the 36 KiB staging area took 74 KiB, more than the 48 KiB of
// static shared memory a kernel may have.
template <int N>
KQ_DEV uint4 (*kq_row_stage())[32 * 9] {
	__shared__ __align__(16) uint4 stg[N][32 * 9];
	return stg;
}
KQ_DEV float *kq_row_tab() {
	__shared__ float tab[128];
	return tab;
}

// kq_row_next moves a lane's item (row m, piece q of nq) on by the grid's
// stride, sm rows and sq < nq pieces: no 64-bit division per item.
KQ_DEV void kq_row_next(int &m, int &q, int sm, int sq, int nq) {
	q += sq;
	const bool c = q >= nq;
	m += sm + (c ? 1 : 0);
	q -= c ? nq : 0;
}

// ---- The rowwise fast path (16-bit inputs): the pieces it shares with
// the RHT columnwise one (nvfp4_bits.cuh), its block key, and kq_q16w,
// which packs codes from words in element order ----

#include "nvfp4_bits.cuh"

// kq_rkey16 is the block key of eight words of T: kq_bkey16 for BF16
// (above 0x7F800000 when the block holds a NaN, which is all the row path
// asks of a NaN block's key), kq_pkey16 for FP16.
KQ_DEV u32 kq_rkey16(kq_bf16, const u32 P[8]) { return kq_bkey16(P); }
KQ_DEV u32 kq_rkey16(kq_f16, const u32 P[8]) { return kq_pkey16<kq_f16>(P); }

// kq_q16w is kq_q16p<H, SR> (the same packed codes) on eight words in
// element order (word k: elements 2k, 2k + 1), NaN-free.
// Round to nearest: kq_rne_code2<CL> codes, packed as kq_q16p packs.
// SR: kq_sr_h2 pairs elements 4g + u and 4g + u + 2 (u = 0, 1) of group g,
// whose SR bytes are bytes u and u + 2 of the group's Philox word wd:
// adding 2 (255 - r) (~wd masked, shifted to bits 1-8 of each half) gives
// each half 2 D + b + 2 (255 - r) <= 0x0FFF (no carry between halves),
// whose bits 9-11 are the code rounded up exactly when r < fraction, as
// kq_sr_code's D + 255 - r (b < 2 never carries); bits 12-15 are zero.
// Per eight elements (groups g, g + 1) one permute gathers the even
// elements' byte 1 of each half (code << 1 | junk), one the odd ones';
// the signs: sign-replicating permutes of each group's two words give
// [s 4g, s 4g+2, s 4g+1, s 4g+3], two permutes split them into the even
// and the odd elements', a select puts each on bit 4 of its byte; then
// the even bytes shifted right by one and the odd left by three meet in
// one select: eight nibbles in order. The element's sign is its input's
// (f > 0; -0 gives code 8).
// F14 (SR): f is the factor times 2^-14 (exact, kq_tab14's condition), so
// the products are kq_sr_h2's arguments; else they are scaled here.
template <typename H, bool SR, bool CL = true, bool F14 = false>
KQ_DEV u64 kq_q16w(const u32 P[8], float f, uint4 w) {
	float y[16];
#pragma unroll
	for (int t = 0; t < 16; t++) {
		const float x = (t & 1) ? kq_phi(H(), P[t >> 1]) : kq_plo(H(), P[t >> 1]);
		y[t] = __fmul_rn(x, f);
		if (SR && !F14) y[t] = __fmul_rn(y[t], 0x1p-14f);
	}
	if constexpr (!SR) {
		u32 r[16];
#pragma unroll
		for (int t = 0; t < 16; t++) r[t] = kq_rne_code2<CL>(y[t]);
		const u32 q0 = kq_pack4s(r[0], r[1], r[2], r[3], 0x0040u, P[0], P[1]), q1 = kq_pack4s(r[4], r[5], r[6], r[7], 0x0040u, P[2], P[3]);
		const u32 q2 = kq_pack4s(r[8], r[9], r[10], r[11], 0x0040u, P[4], P[5]), q3 = kq_pack4s(r[12], r[13], r[14], r[15], 0x0040u, P[6], P[7]);
		return (u64)__byte_perm(q0, q1, 0x6420u) | ((u64)__byte_perm(q2, q3, 0x6420u) << 32);
	} else {
		u32 xe[4], xo[4], sg[4];
#pragma unroll
		for (int g = 0; g < 4; g++) {
			const u32 wd = kq_word(w, (u32)g);
			xe[g] = kq_sr_h2(y[4 * g], y[4 * g + 2]) + (kq_andn(wd, 0x00FF00FFu) << 1);
			xo[g] = kq_sr_h2(y[4 * g + 1], y[4 * g + 3]) + (kq_andn(wd, 0xFF00FF00u) >> 7);
			sg[g] = kq_prmt(P[2 * g], P[2 * g + 1], 0xFBD9u);
		}
		u32 o[2];
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const int g = 2 * h;
			const u32 te = kq_sel(__byte_perm(xe[g], xe[g + 1], 0x7531u), __byte_perm(sg[g], sg[g + 1], 0x5410u), 0x10101010u);
			const u32 to = kq_sel(__byte_perm(xo[g], xo[g + 1], 0x7531u), __byte_perm(sg[g], sg[g + 1], 0x7632u), 0x10101010u);
			o[h] = kq_sel(te >> 1, to << 3, 0xF0F0F0F0u);
		}
		return (u64)o[0] | ((u64)o[1] << 32);
	}
}

// The rowwise fast path's Philox round keys (kq_philox_round_keys, no
// group folded in: the row path passes its group as counter word 3).
KQ_DEV u32 *kq_row_rk() {
	__shared__ __align__(16) u32 rk[20];
	return rk;
}

// kq_row2p_nan is kq_row2p's pair holding a NaN (inlined: out of line, its
// ABI call cost the whole kq_nvf4_row_bf16 entry 180 / 216 bytes of spills
// on sm_90 against 16 / 8 inlined), by kq_block16p block by block.
struct kq_row2 {
	u64 p0, p1;
	u32 d;
};
template <typename T, bool SR>
KQ_DEV kq_row2 kq_row2p_nan(const uint4 *L, float s6, float sinv, const float *tab, u64 nb, u32 group, u64 seed) {
	u32 P[2][8];
#pragma unroll
	for (int b = 0; b < 2; b++) {
		const uint4 L0 = L[2 * b], L1 = L[2 * b + 1];
		P[b][0] = L0.x; P[b][1] = L0.y; P[b][2] = L0.z; P[b][3] = L0.w;
		P[b][4] = L1.x; P[b][5] = L1.y; P[b][6] = L1.z; P[b][7] = L1.w;
	}
	u32 d0, d1;
	kq_row2 r;
	r.p0 = kq_block16p<T, SR>(P[0], kq_pkey16<T>(P[0]), s6, sinv, tab, nb, 0u, group, seed, &d0);
	r.p1 = kq_block16p<T, SR>(P[1], kq_pkey16<T>(P[1]), s6, sinv, tab, nb + 16, 0u, group, seed, &d1);
	r.d = d0 | (d1 << 8);
	return r;
}

// kq_row2p quantizes two blocks of a 16-bit item staged at L (four
// vectors): packed codes to packed[0] and packed[1], their scale codes
// returned in bits 0-7 and 8-15. NaN-free blocks convert their two scales
// at once (the same codes as kq_e4m3: each half of the pair conversion
// rounds on its own) and take the factors from tab (G, grouped: from
// kq_factor; F14: tab holds them times 2^-14, SR only) and the codes from
// kq_q16w; a pair holding a NaN takes kq_row2p_nan (the reference path
// for the NaN block, with the plain factors). The Philox block of block b
// is counter nb / 16 + b (nb a multiple of 16), the round keys rk.
// Round to nearest leaves out the clamp to 6 (kq_rne_code2<false>) when every
// |y| = fl(|x| f) is below 7: rounding is monotonic, so fl(key f) < 7
// bounds them all (false for an infinite product). Blocks need the clamp
// only where a coarse (subnormal) or zero scale code leaves key f well
// above 6. Stochastic rounding keeps it: it may round (6, 8) up to 8.
// The choice is made for the converged lanes together (a vote): lanes
// choosing apart would have their warp run both forms, and a tensor with
// tiny blocks among normal ones (a heavy tail, padding scaled to nothing)
// puts such a block in most warps. A lane takes the unclamped form only
// when its own blocks pass, so the bytes never depend on the vote.
template <typename T, bool SR, bool G, bool F14>
KQ_DEV u32 kq_row2p(const uint4 *L, kq_tscale ts, const float *tab, u64 nb, u32 group, u64 seed, const u32 *rk, u64 packed[2]) {
	u32 P[2][8], key[2];
#pragma unroll
	for (int b = 0; b < 2; b++) {
		const uint4 L0 = L[2 * b], L1 = L[2 * b + 1];
		P[b][0] = L0.x; P[b][1] = L0.y; P[b][2] = L0.z; P[b][3] = L0.w;
		P[b][4] = L1.x; P[b][5] = L1.y; P[b][6] = L1.z; P[b][7] = L1.w;
		key[b] = kq_rkey16(T(), P[b]);
	}
	if (max(key[0], key[1]) > 0x7F800000u) {
		const kq_row2 r = kq_row2p_nan<T, SR>(L, ts.s6, ts.sinv, F14 ? 0 : tab, nb, group, seed);
		packed[0] = r.p0;
		packed[1] = r.p1;
		return r.d;
	}
	const u32 dd = kq_fp8x2(__fmul_rn(__uint_as_float(key[0]), ts.s6), __fmul_rn(__uint_as_float(key[1]), ts.s6), 1);
	float f[2];
#pragma unroll
	for (int b = 0; b < 2; b++) {
		const u32 d = __byte_perm(dd, 0u, 0x4440u | (u32)b);
		f[b] = G ? kq_factor(d, ts.sinv) : tab[d];
	}
	if (!SR && __all_sync(__activemask(), __fmul_rn(__uint_as_float(key[0]), f[0]) < 7.0f && __fmul_rn(__uint_as_float(key[1]), f[1]) < 7.0f)) {
#pragma unroll
		for (int b = 0; b < 2; b++) packed[b] = kq_q16w<T, false, false>(P[b], f[b], make_uint4(0u, 0u, 0u, 0u));
		return dd;
	}
#pragma unroll
	for (int b = 0; b < 2; b++) {
		uint4 w = make_uint4(0u, 0u, 0u, 0u);
		if (SR) {
			const u64 c = (nb >> 4) + (u64)b;
			w = kq_philox_rk((u32)c, (u32)(c >> 32), 0u, group, rk);
		}
		packed[b] = kq_q16w<T, SR, true, F14>(P[b], f[b], w);
	}
	return dd;
}

// kq_nvf4_row_fast: the rowwise fast path; G: grouped (offsets set; the
// factors then come from kq_factor with the group's tensor scale, else
// from the block's table).
template <typename T, bool SR, bool G, bool F14>
KQ_DEV void kq_nvf4_row_go(const T *x, int rows, int cols, const u32 *amax, u8 *out, u8 *scales,
		int srows, int scols, u8 *swz, u64 seed, const int *offsets, int ngroups, kq_tscale ts) {
	float *tab = kq_row_tab();
	const u32 *rk = kq_row_rk();
	uint4 (*stg)[32 * 9] = kq_row_stage<sizeof(T) == 2 ? 8 : 1>();
	int gcur = 0;
	const int nq = cols >> 6, lane = threadIdx.x & 31;
	const long long items = (long long)srows * nq, data_items = (long long)rows * nq;
	uint4 *ws = stg[sizeof(T) == 2 ? threadIdx.x >> 5 : 0];
	const long long step = (long long)gridDim.x * blockDim.x;
	long long it0 = (long long)blockIdx.x * blockDim.x + (threadIdx.x & ~31);
	// The lane's item it0 + lane is row m, piece q: it < items is m < srows.
	int m = (int)((it0 + lane) / nq), q = (int)((it0 + lane) % nq);
	const int sm = (int)(step / nq), sq = (int)(step % nq);
	for (; it0 < items; it0 += step, kq_row_next(m, q, sm, sq, nq)) {
		if constexpr (sizeof(T) == 2) {
			const uint4 *p = reinterpret_cast<const uint4 *>(x) + it0 * 8;
			const long long left = data_items - it0; // the warp's items with data
			uint4 L[8];
			if (left >= 32) { // (warp-uniform) no bounds per vector
#pragma unroll
				for (int i = 0; i < 8; i++) L[i] = p[i * 32 + lane];
			} else {
				const int nv = left > 0 ? (int)left : 0;
#pragma unroll
				for (int i = 0; i < 8; i++) {
					const int v = i * 32 + lane;
					L[i] = (v >> 3) < nv ? p[v] : make_uint4(0u, 0u, 0u, 0u);
				}
			}
			__syncwarp();
			// Vector v = 32 i + lane goes to ws[(v >> 3) 9 + (v & 7)] = ws[36 i + (lane >> 3) 9 + (lane & 7)].
			uint4 *wl = ws + (lane >> 3) * 9 + (lane & 7);
#pragma unroll
			for (int i = 0; i < 8; i++) wl[36 * i] = L[i];
			__syncwarp();
		}
		if (m >= srows) continue;
		const long long si = (long long)m * scols + q * 4;
		bool live = m < rows;
		int g = 0, m0 = 0;
		if (G && live) {
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
		if (G && g != gcur) {
			ts = kq_tscale_of(amax + g);
			gcur = g;
		}
		const float *ftab = G ? 0 : tab;
		const u64 nb = (u64)(m - m0) * (u64)cols + (u64)(q * 64);
		u64 packed[4];
		u32 dw = 0;
		if constexpr (sizeof(T) == 2) {
			const u32 d01 = kq_row2p<T, SR, G, F14>(ws + lane * 9, ts, ftab, nb, (u32)g, seed, rk, packed);
			const u32 d23 = kq_row2p<T, SR, G, F14>(ws + lane * 9 + 4, ts, ftab, nb + 32, (u32)g, seed, rk, packed + 2);
			dw = __byte_perm(d01, d23, 0x5410u);
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

// kq_nvf4_row_fast: the rowwise fast path (kq_nvf4_row_go); G: grouped
// (offsets set; the factors then come from kq_factor with the group's
// tensor scale, else from the block's table). 16-bit inputs with SR,
// ungrouped, take the factors times 2^-14 where kq_tab14 allows.
template <typename T, bool SR, bool G>
__device__ void kq_nvf4_row_fast(const T *x, int rows, int cols, const u32 *amax, u8 *out, u8 *scales,
		int srows, int scols, u8 *swz, u64 seed, const int *offsets, int ngroups) {
	const kq_tscale ts = kq_tscale_of(amax);
	if (SR && sizeof(T) == 2) kq_philox_round_keys(seed, 0u, kq_row_rk());
	if (!G && SR && sizeof(T) == 2 && kq_tab14(ts.sinv)) {
		kq_fill_tab14(kq_row_tab(), ts.sinv);
		__syncthreads();
		kq_nvf4_row_go<T, SR, G, !G && SR && sizeof(T) == 2>(x, rows, cols, amax, out, scales, srows, scols, swz, seed, offsets, ngroups, ts);
		return;
	}
	if (!G) kq_fill_tab(kq_row_tab(), ts.sinv);
	if (!G || (SR && sizeof(T) == 2)) __syncthreads();
	kq_nvf4_row_go<T, SR, G, false>(x, rows, cols, amax, out, scales, srows, scols, swz, seed, offsets, ngroups, ts);
}
