// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// nvfp4_bits.cuh: part of nvfp4.cu (included once, by nvfp4_fast.cuh
// before the rowwise fast path): the instruction-level pieces that the
// NVFP4 fast paths share, the rowwise one (nvfp4_fast.cuh) and the RHT
// columnwise one (nvfp4_rhtcol.cuh): sign-replicating permutes and lop3
// selects, the BF16 block key, the round-to-nearest code, stochastic
// rounding from float16 bits, the factor table times 2^-14 and Philox
// with its round keys in shared memory. Each gives the bits of the
// contract's element functions (nvfp4.cu), checked by hack/
// nvfp4_srcheck.cc, nvfp4_q16rcheck.cc and nvfp4_rowcheck.cc on the host
// and hack/nvfp4_colcheck and nvfp4_rowcheck on a GPU. Not a header of
// its own: it uses what nvfp4.cu and nvfp4_fast.cuh define before it.

// kq_prmt is prmt.b32 with its sign-replicating selectors (a selector
// nibble with bit 3 set fills the byte with the top bit of the byte its
// low bits select), which __byte_perm does not promise.
KQ_DEV u32 kq_prmt(u32 a, u32 b, u32 s) {
	u32 d;
	asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(s));
	return d;
}

// kq_sel is (a & ~m) | (b & m), the bits of b where m is set: one
// lop3.b32, which the compiler does not always find for the and-or.
KQ_DEV u32 kq_sel(u32 a, u32 b, u32 m) {
	u32 d;
	asm("lop3.b32 %0, %1, %2, %3, 0xD8;" : "=r"(d) : "r"(a), "r"(b), "r"(m));
	return d;
}
// kq_andn is ~a & m (one lop3.b32, kept apart from the shift that uses
// it, which the compiler would otherwise apply first).
KQ_DEV u32 kq_andn(u32 a, u32 m) {
	u32 d;
	asm("lop3.b32 %0, %1, %2, 0, 0x0C;" : "=r"(d) : "r"(a), "r"(m));
	return d;
}

// kq_bkey16 is kq_pkey16<kq_bf16> by the BF16 maximum that propagates
// NaN: the largest |y| of eight packed BF16 words as float32 bits (|y|
// of BF16 orders like its bits), above 0x7F800000 when a word holds a
// NaN (the canonical NaN 0x7FFF), which is all kq_block16r asks of a
// NaN block's key. From sm_86 max.NaN.xorsign.abs takes the magnitudes
// itself (no mask a word): its result's magnitude is max(|a|, |b|), its
// sign is junk, cleared once at the end; the two halves meet in the high
// one. Before, the words are masked first (max.NaN).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 860
KQ_DEV u32 kq_bmaxn2(u32 a, u32 b) {
	u32 d;
	asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
	return d;
}
KQ_DEV u32 kq_bkey16(const u32 P[8]) {
	u32 m[8];
#pragma unroll
	for (int k = 0; k < 8; k++) m[k] = P[k] & 0x7FFF7FFFu;
	u32 x = kq_bmaxn2(kq_bmaxn2(kq_bmaxn2(m[0], m[1]), kq_bmaxn2(m[2], m[3])), kq_bmaxn2(kq_bmaxn2(m[4], m[5]), kq_bmaxn2(m[6], m[7])));
	x = kq_bmaxn2(x, x >> 16);
	return x << 16;
}
#else
KQ_DEV u32 kq_bmaxa2(u32 a, u32 b) {
	u32 d;
	asm("max.NaN.xorsign.abs.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
	return d;
}
KQ_DEV u32 kq_bkey16(const u32 P[8]) {
	u32 x = kq_bmaxa2(kq_bmaxa2(kq_bmaxa2(P[0], P[1]), kq_bmaxa2(P[2], P[3])), kq_bmaxa2(kq_bmaxa2(P[4], P[5]), kq_bmaxa2(P[6], P[7])));
	return kq_bmaxa2(x, x << 16) & 0x7FFF0000u;
}
#endif

// kq_rne_code2 is kq_rne_code (the same bits) with the magic number from
// the exponent t = 127 + e of max(v, 1) by one multiply-add: eb + (eb >>
// 22) = t * (2^23 + 2) for eb = t << 23.
//
// kq_rne_code2<false> leaves out the clamp to 6, for blocks whose |y| are
// all below 7 (kq_block16r checks): v in (6, 7) then rounds to 6 on the
// step 2 of [4, 8) as the clamped 6 does, so the code byte is the same
// (checked for every float32 |y| < 7).
template <bool CL = true>
KQ_DEV u32 kq_rne_code2(float y) {
	const float v = CL ? fminf(fabsf(y), KQ_E2M1_MAX) : fabsf(y);
	const u32 t = __float_as_uint(fmaxf(v, 1.0f)) >> 23;
	return __float_as_uint(__fadd_rn(v, __uint_as_float(t * 0x800002u + ((22u << 23) - 254u))));
}

// kq_sr_h2 is the SR code and fraction of two values at once, from
// float16 bits: for v = min(|y|, 6) the float16 rz(v 2^-14) (float16
// keeps 10 bits: subnormal steps of 2^-24 below 2^-14, i.e. v < 1, and
// 2^-24, 2^-23, 2^-22 on [1, 2), [2, 4), [4, 8)) has the bits 2 D + b,
// where D = code << 8 | fraction is kq_sr_code's (the step
// of v that D counts is 2^-9, 2^-9, 2^-8, 2^-7 there: twice the float16
// step, so D is the bits without the last, b, and truncating twice is
// truncating once). The clamp is taken on the float16 bits (rz is
// monotonic and 6 2^-14 = 0x0E00 exact, so min commutes with it), and
// v 2^-14 is exact except below 2^-126, where rz gives 0 either way. A
// half of the result is at most 0x0E00: y0 in the low half, y1 in the
// high. Checked against the float32 magic-number form it replaces (the
// earlier kq_sr_code2) for every float32 y but NaN
// (hack/nvfp4_srcheck.cc). The arguments are y 2^-14 (kq_q16r scales
// them, or its factor already carries the 2^-14).
KQ_DEV u32 kq_sr_h2(float z0, float z1) {
	u32 h;
	asm("cvt.rz.f16x2.f32 %0, %1, %2;" : "=r"(h) : "f"(z1), "f"(z0));
	u32 d;
	asm("{.reg .b32 t;\n\tabs.f16x2 t, %1;\n\tmin.f16x2 %0, t, %2;}" : "=r"(d) : "r"(h), "r"(0x0E000E00u));
	return d;
}

// kq_tab14 tells whether the factors of sinv times 2^-14 are exact, so
// that a table of them (kq_fill_tab14) gives kq_q16r<true, .., true> the
// same products as the factor and a separate multiply by 2^-14:
// fl(x f 2^-14) = fl(x f) 2^-14 wherever the left side is a normal
// float32; below 2^-126 both give code 0 with fraction 0 (rz to float16
// is 0 there), and where fl(x f) overflows, x f 2^-14 is still above the
// clamp. f 2^-14 is exact when f >= 2^-112; the factors decrease with the
// scale code (kq_factor is monotonic in float(d)) and no NaN-free block
// has a code above 126, so the test is on code 126's. False only for
// tensor amaxes above about 2^114.
KQ_DEV bool kq_tab14(float sinv) { return kq_factor(126u, sinv) >= 0x1p-112f; }
KQ_DEV void kq_fill_tab14(float *tab, float sinv) {
	if (threadIdx.x < 128) tab[threadIdx.x] = __fmul_rn(kq_factor(threadIdx.x, sinv), 0x1p-14f);
}

// Philox 4x32-10 (nvfp4.cu's kq_philox) with its round keys in shared
// memory, read as 16-byte broadcasts instead of two additions per round:
// kq_philox_round_keys writes rk[2r], rk[2r + 1], the key of round r of
// the seed (threads 0..9; the caller synchronises), with group xored into
// round 0's second key: round 0 xors counter word 3 and that key into the
// same word, so a group folded there is a group in counter word 3 (the
// columnwise path's, whose counters leave word 3 zero; the rowwise path
// folds none and passes its group as c3).
KQ_DEV void kq_philox_round_keys(u64 seed, u32 group, u32 *rk) {
	const u32 r = threadIdx.x;
	if (r < 10) {
		rk[2 * r] = (u32)seed + r * 0x9E3779B9u;
		rk[2 * r + 1] = ((u32)(seed >> 32) + r * 0xBB67AE85u) ^ (r == 0 ? group : 0u);
	}
}
// kq_philox_rk is the Philox block of counter (c0, c1, c2, c3) under the
// round keys rk; the products are 64-bit multiplies (hi and lo at once).
KQ_DEV uint4 kq_philox_rk(u32 c0, u32 c1, u32 c2, u32 c3, const u32 *rk) {
	const uint4 *k4 = reinterpret_cast<const uint4 *>(rk);
#pragma unroll
	for (int r = 0; r < 10; r += 2) {
		const uint4 k = k4[r >> 1];
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const u64 p0 = (u64)c0 * 0xD2511F53u, p1 = (u64)c2 * 0xCD9E8D57u;
			const u32 n0 = (u32)(p1 >> 32) ^ c1 ^ (h ? k.z : k.x), n2 = (u32)(p0 >> 32) ^ c3 ^ (h ? k.w : k.y);
			c0 = n0; c1 = (u32)p1; c2 = n2; c3 = (u32)p0;
		}
	}
	uint4 w;
	w.x = c0; w.y = c1; w.z = c2; w.w = c3;
	return w;
}

// The columnwise RHT loop's per-launch words in shared memory (KQ_RK
// words, written once per block by threads 0..10; the caller
// synchronises): the round keys with the group folded in
// (kq_philox_round_keys), then the seed, the group, 1 / S and S / 6 for
// the NaN blocks' reference path (kq_col_nan), which thus keeps no
// registers of the loop.
#define KQ_RK 25
KQ_DEV void kq_philox_keys(u64 seed, u32 group, const kq_tscale &ts, u32 *rk) {
	kq_philox_round_keys(seed, group, rk);
	if (threadIdx.x == 10) {
		rk[20] = (u32)seed;
		rk[21] = (u32)(seed >> 32);
		rk[22] = group;
		rk[23] = __float_as_uint(ts.sinv);
		rk[24] = __float_as_uint(ts.s6);
	}
}
