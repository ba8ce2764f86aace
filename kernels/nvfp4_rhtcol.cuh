// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// nvfp4_rhtcol.cuh: part of nvfp4.cu (included once, by nvfp4_tile.cuh
// before the columnwise fast path): the helpers of the RHT columnwise fast
// path for 16-bit inputs (kq_nvf4_col_body). Not a header of its own: it
// uses what nvfp4.cu and nvfp4_fast.cuh define before it.

// kq_rht_c is s_i * 0.25 for row i of the sign mask: x * c_i is exactly
// s_i * (x * 0.25) (a power-of-two multiply, exact for 16-bit inputs,
// and a sign flip; NaN payloads aside).
KQ_DEV float kq_rht_c(u32 signs, int i) { return __uint_as_float(0x3E800000u | (((signs >> i) & 1u) << 31)); }

// The RHT's factors c_i (kq_rht_c) of the 16-bit fast paths. SG, when not
// 0, is the sign mask as a compile-time constant (the kernels instantiate
// TransformerEngine's mask, KQ_TE_SIGNS, the one every recipe uses): the
// factors are then immediates of the multiplies, where a mask known only
// at run time costs sixteen registers or, as the compiler prefers in the
// tile loops, about fifty uniform instructions per tile to rebuild them.
// The products are the same either way.
#define KQ_TE_SIGNS 0xD7E8u
template <u32 SG>
KQ_DEV void kq_rhtf(u32 signs, float c[16]) {
#pragma unroll
	for (int i = 0; i < 16; i++) c[i] = kq_rht_c(SG != 0 ? SG : signs, i);
}

// kq_rht16x2s runs the butterfly of kq_rht16 on two columns at once up to
// stage HMAX (exclusive), from the sixteen packed words W[i] of rows
// 0..15 (column c in the low halves, c + 1 in the high halves), with the
// signs as the factors c (kq_rhtf): a and b receive the float32 values of
// columns c and c + 1. The first stage (v_i + v_i+1, v_i - v_i+1) takes
// p = x_i+1 * c_i+1 (exact) and fma(x_i, c_i, +-p), one rounding of the
// exact x_i * c_i +- p, the bits __fadd_rn / __fsub_rn give on v_i = x_i
// * c_i; the later stages are kq_butterfly16's.
template <typename H, int HMAX>
KQ_DEV void kq_rht16x2s(const u32 W[16], const float c[16], float a[16], float b[16]) {
#pragma unroll
	for (int i = 0; i < 16; i += 2) {
		const float a0 = kq_plo(H(), W[i]), a1 = kq_plo(H(), W[i + 1]);
		const float b0 = kq_phi(H(), W[i]), b1 = kq_phi(H(), W[i + 1]);
		const float pa = __fmul_rn(a1, c[i + 1]), pb = __fmul_rn(b1, c[i + 1]);
		a[i] = __fmaf_rn(a0, c[i], pa);
		a[i + 1] = __fmaf_rn(a0, c[i], -pa);
		b[i] = __fmaf_rn(b0, c[i], pb);
		b[i + 1] = __fmaf_rn(b0, c[i], -pb);
	}
#pragma unroll
	for (int h = 2; h < HMAX; h <<= 1) {
#pragma unroll
		for (int i = 0; i < 16; i++) {
			if (i & h) continue;
			const float p = a[i], q = a[i + h], r = b[i], s = b[i + h];
			a[i] = __fadd_rn(p, q);
			a[i + h] = __fsub_rn(p, q);
			b[i] = __fadd_rn(r, s);
			b[i + h] = __fsub_rn(r, s);
		}
	}
}

// kq_rht16x2c is kq_rht16 of two columns at once (kq_rht16x2s, every
// stage): P0 and P1 receive the BF16-rounded results of columns c and c +
// 1 as packed words in kq_pel's order, the bits kq_rht16 gives, NaN
// payloads aside, rounded two values per instruction (kq_bf16x2).
//
// kq_pel's order: words 2g and 2g + 1 hold the group of four y[4g..4g+3],
// word 2g + u the elements 4g + u (low half) and 4g + u + 2 (high half),
// so that the two words of a group, or the even words of two groups,
// hold elements two apart in one word (kq_q16r pairs those).
KQ_DEV float kq_pel(const u32 P[8], int t) {
	const u32 w = P[2 * (t >> 2) + (t & 1)];
	return (t & 2) ? kq_phi(kq_bf16(), w) : kq_plo(kq_bf16(), w);
}
template <typename H>
KQ_DEV void kq_rht16x2c(const u32 W[16], const float c[16], u32 P0[8], u32 P1[8]) {
	float a[16], b[16];
	kq_rht16x2s<H, 16>(W, c, a, b);
#pragma unroll
	for (int k = 0; k < 8; k++) {
		const int t = 4 * (k >> 1) + (k & 1);
		P0[k] = kq_bf16x2(a[t], a[t + 2]);
		P1[k] = kq_bf16x2(b[t], b[t + 2]);
	}
}

// kq_rht_amax2c is the largest |y| of the RHT of two columns (kq_rht16x2s
// up to the last stage), NaN results skipped, before the rounding to
// BF16, folded into m: the butterfly's last stage gives y_i = p + q and
// y_i+8 = p - q, and max(|fl(p + q)|, |fl(p - q)|) = fl(|p| + |q|) (round
// to nearest is monotonic and symmetric; a NaN or infinite p or q gives
// the same on both sides), so that stage becomes one add and one max per
// pair. The caller rounds the running maximum to BF16 once: with a
// monotonic rounding, the maximum of the rounded values is the rounded
// maximum.
template <typename H>
KQ_DEV float kq_rht_amax2c(const u32 W[16], const float c[16], float m) {
	float a[16], b[16];
	kq_rht16x2s<H, 8>(W, c, a, b);
#pragma unroll
	for (int i = 0; i < 8; i++) {
		m = fmaxf(m, __fadd_rn(fabsf(a[i]), fabsf(a[i + 8])));
		m = fmaxf(m, __fadd_rn(fabsf(b[i]), fabsf(b[i + 8])));
	}
	return m;
}


// kq_q16r is kq_q16p<kq_bf16, SR> on words in kq_pel's order, with
// cheaper packing, the same codes. Round to nearest: the four code bytes
// of group g (elements 4g..4g+3) are gathered, each element's sign is put
// on bit 3 of its byte from a sign-replicating permute of the group's
// two words (byte & 0x08), and the bytes fold into nibbles by w + (w >>
// 4) (no overlapping bits).
//
// With SR the codes come from kq_sr_h2, elements t and t + 2 of a group
// in one word (2 D + b per half, D = code << 8 | fraction): the group's
// Philox word holds r of element t in byte t, so masking its complement
// by 0x00FF00FF (t = 0, 2) or 0xFF00FF00 (t = 1, 3) and adding it shifted
// gives each half 2 D + b + 2 (255 - r), at most 0x0FFF (no half
// overflows into the other), whose bits 9-11 are the code rounded up
// exactly when r < fraction, as kq_sr_code's D + (255 - r) (b < 2 never
// carries). Byte 1 of a half is then code << 1 | junk, bit 4 clear. Per
// eight elements (groups g, g + 1) one permute gathers the even
// elements' bytes, one the odd ones' (pair words t = 0 and t = 1 of both
// groups), two sign-replicating permutes of the even and the odd words
// give their signs, which a select puts on bit 4; then the even bytes
// shifted right by one (sign << 3 | code, the junk gone) and the odd ones
// left by three (the same nibble, in bits 4-7) meet in one select: eight
// nibbles in order.
//
// F14 (with SR): f is the factor times 2^-14 (kq_tab14), so the products
// are kq_sr_h2's arguments without a multiply of their own; else they are
// scaled here.
template <bool SR, bool CL = true, bool F14 = false>
KQ_DEV u64 kq_q16r(const u32 P[8], float f, uint4 w) {
	u32 o[2];
	u32 q[4], xe[4], xo[4];
#pragma unroll
	for (int g = 0; g < 4; g++) {
		float y[4];
#pragma unroll
		for (int t = 0; t < 4; t++) {
			y[t] = __fmul_rn(kq_pel(P, 4 * g + t), f);
			if (SR && !F14) y[t] = __fmul_rn(y[t], 0x1p-14f);
		}
		if (SR) {
			const u32 wd = kq_word(w, (u32)g);
			xe[g] = kq_sr_h2(y[0], y[2]) + (kq_andn(wd, 0x00FF00FFu) << 1);
			xo[g] = kq_sr_h2(y[1], y[3]) + (kq_andn(wd, 0xFF00FF00u) >> 7);
		} else {
			// The codes of elements 4g, 4g + 1 and 4g + 2, 4g + 3 as the
			// low bytes of two words (kq_rne_code2's code bits 0-2, bits
			// 3-22 clear: c0 + (c1 << 4) leaves byte 1 clear).
#pragma unroll
			for (int u = 0; u < 2; u++)
				q[2 * (g & 1) + u] = kq_rne_code2<CL>(y[2 * u]) + (kq_rne_code2<CL>(y[2 * u + 1]) << 4);
			if (g & 1) {
				// Bytes 0, 1 of the previous group's pair, then this one's:
				// eight nibbles in order, sign bits clear.
				const u32 lo = q[0] + (q[1] << 8), hi = q[2] + (q[3] << 8);
				xe[g >> 1] = __byte_perm(lo, hi, 0x5410u);
			}
		}
	}
#pragma unroll
	for (int h = 0; h < 2; h++) {
		const int g = 2 * h;
		if (SR) {
			const u32 te = kq_sel(__byte_perm(xe[g], xe[g + 1], 0x7531u), kq_prmt(P[2 * g], P[2 * g + 2], 0xFDB9u), 0x10101010u);
			const u32 to = kq_sel(__byte_perm(xo[g], xo[g + 1], 0x7531u), kq_prmt(P[2 * g + 1], P[2 * g + 3], 0xFDB9u), 0x10101010u);
			o[h] = kq_sel(te >> 1, to << 3, 0xF0F0F0F0u);
		} else {
			// The signs of the even elements (low nibbles) and the odd
			// ones (high nibbles), sign-replicated, on bits 3 and 7.
			const u32 s = kq_sel(kq_prmt(P[2 * g], P[2 * g + 2], 0xFDB9u), kq_prmt(P[2 * g + 1], P[2 * g + 3], 0xFDB9u), 0xF0F0F0F0u);
			o[h] = xe[h] | (s & 0x88888888u);
		}
	}
	return (u64)o[0] | ((u64)o[1] << 32);
}


// kq_block16r is kq_block16p<kq_bf16, SR> (operand 1, the factor from
// tab) with the key of kq_bkey16, the Philox round keys rk and the codes
// of kq_q16r, for a NaN-free block. A block holding a NaN (key above
// 0x7F800000) gets junk here, harmlessly (its scale code is 0x7F, a table
// entry), which the caller replaces by the reference path's (kq_col_nan).
// The block is given by its Philox counter b = n0 / 16 (its first element
// n0 is a multiple of 16). F14: tab holds the factors times 2^-14
// (kq_tab14; SR only).
//
// kq_e4m3z is kq_e4m3 (the same code) as one conversion whose 32-bit
// result the compiler takes as it is: the pair's other half converts 0
// (code 0x00), so bits 8-31 are clear without a mask, and the table
// index is one shift-add.
KQ_DEV u32 kq_e4m3z(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
	return kq_e4m3(x);
#else
	u32 d;
	asm("{.reg .b16 h, z;\n\tcvt.rn.satfinite.e4m3x2.f32 h, 0f00000000, %1;\n\tmov.b16 z, 0;\n\tmov.b32 %0, {h, z};}" : "=r"(d) : "f"(x));
	return d;
#endif
}
template <bool SR, bool F14 = false>
KQ_DEV u64 kq_block16r(const u32 P[8], u32 key, float s6, const float *tab, u64 b, const u32 *rk, u32 *d) {
	*d = kq_e4m3z(__fmul_rn(__uint_as_float(key), s6));
	const float f = tab[*d];
	uint4 w = make_uint4(0u, 0u, 0u, 0u);
	if (SR) w = kq_philox_rk((u32)b, (u32)(b >> 32), 1u, 0u, rk);
	// Round to nearest without the clamp to 6 (kq_rne_code2<false>) when
	// every |y| = fl(|x| * f) is below 7: rounding is monotonic, so
	// fl(key * f) < 7 bounds them all (false for an infinite or NaN
	// product). Blocks need more only where a coarse (subnormal) or zero
	// scale code leaves key * f well above 6. Stochastic rounding keeps
	// the clamp: it may round (6, 8) up to 8.
	if (!SR && __fmul_rn(__uint_as_float(key), f) < 7.0f) return kq_q16r<SR, false>(P, f, w);
	return kq_q16r<SR, true, F14>(P, f, w);
}

