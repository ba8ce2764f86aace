// nvfp4_rhtcol.cuh: part of nvfp4.cu (included once, by nvfp4_tile.cuh
// before the columnwise fast path): the helpers of the RHT columnwise fast
// path for 16-bit inputs (kq_nvf4_col_body). Not a header of its own: it
// uses what nvfp4.cu and nvfp4_fast.cuh define before it.

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
	const float v = CL ? fminf(fabsf(y), 6.0f) : fabsf(y);
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
// session-14 kq_sr_code2) for every float32 y but NaN
// (hack/nvfp4_srcheck.cc). The arguments are y 2^-14 (kq_q16r scales
// them, or its factor already carries the 2^-14).
KQ_DEV u32 kq_sr_h2(float z0, float z1) {
	u32 h;
	asm("cvt.rz.f16x2.f32 %0, %1, %2;" : "=r"(h) : "f"(z1), "f"(z0));
	u32 d;
	asm("{.reg .b32 t;\n\tabs.f16x2 t, %1;\n\tmin.f16x2 %0, t, %2;}" : "=r"(d) : "r"(h), "r"(0x0E000E00u));
	return d;
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
			u32 r[4];
#pragma unroll
			for (int t = 0; t < 4; t++) r[t] = kq_rne_code2<CL>(y[t]);
			const u32 c = __byte_perm(__byte_perm(r[0], r[1], 0x0040u), __byte_perm(r[2], r[3], 0x0040u), 0x5410u) |
				(kq_prmt(P[2 * g], P[2 * g + 1], 0xFBD9u) & 0x08080808u);
			q[g] = c + (c >> 4);
		}
	}
#pragma unroll
	for (int h = 0; h < 2; h++) {
		if (SR) {
			const int g = 2 * h;
			const u32 te = kq_sel(__byte_perm(xe[g], xe[g + 1], 0x7531u), kq_prmt(P[2 * g], P[2 * g + 2], 0xFDB9u), 0x10101010u);
			const u32 to = kq_sel(__byte_perm(xo[g], xo[g + 1], 0x7531u), kq_prmt(P[2 * g + 1], P[2 * g + 3], 0xFDB9u), 0x10101010u);
			o[h] = kq_sel(te >> 1, to << 3, 0xF0F0F0F0u);
		} else {
			o[h] = __byte_perm(q[2 * h], q[2 * h + 1], 0x6420u);
		}
	}
	return (u64)o[0] | ((u64)o[1] << 32);
}

// The columnwise RHT loop's per-launch words in shared memory (KQ_RK
// words, written once per block by threads 0..10; the caller
// synchronises): the Philox 4x32-10 round keys of the seed (rk[2r],
// rk[2r + 1]: the key of round r) with the group folded into round 0's
// second key (rk[1] = key ^ group: round 0 xors counter word 3, the
// group, and that key into the same word), then the seed, the group, 1 /
// S and S / 6 for the NaN blocks' reference path (kq_col_nan), which thus
// keeps no registers of the loop. kq_philox_rk is kq_philox with them,
// read as 16-byte broadcasts instead of two additions per round.
#define KQ_RK 25
KQ_DEV void kq_philox_keys(u64 seed, u32 group, const kq_tscale &ts, u32 *rk) {
	const u32 r = threadIdx.x;
	if (r < 10) {
		rk[2 * r] = (u32)seed + r * 0x9E3779B9u;
		rk[2 * r + 1] = ((u32)(seed >> 32) + r * 0xBB67AE85u) ^ (r == 0 ? group : 0u);
	}
	if (r == 10) {
		rk[20] = (u32)seed;
		rk[21] = (u32)(seed >> 32);
		rk[22] = group;
		rk[23] = __float_as_uint(ts.sinv);
		rk[24] = __float_as_uint(ts.s6);
	}
}
// kq_philox_rk: the Philox block of counter (c0, c1, 1, group), the
// columnwise operand's (the group from rk[1]).
KQ_DEV uint4 kq_philox_rk(u32 c0, u32 c1, const u32 *rk) {
	u32 c2 = 1u, c3 = 0u;
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

// kq_block16r is kq_block16p<kq_bf16, SR> (operand 1, the factor from
// tab) with the key of kq_bkey16, the Philox round keys rk and the codes
// of kq_q16r, for a NaN-free block. A block holding a NaN (key above
// 0x7F800000) gets junk here, harmlessly (its scale code is 0x7F, a table
// entry), which the caller replaces by the reference path's (kq_col_nan).
// The block is given by its Philox counter b = n0 / 16 (its first element
// n0 is a multiple of 16). F14: tab holds the factors times 2^-14
// (kq_tab14; SR only).
template <bool SR, bool F14 = false>
KQ_DEV u64 kq_block16r(const u32 P[8], u32 key, float s6, const float *tab, u64 b, const u32 *rk, u32 *d) {
	*d = kq_e4m3(__fmul_rn(__uint_as_float(key), s6));
	const float f = tab[*d];
	uint4 w = make_uint4(0u, 0u, 0u, 0u);
	if (SR) w = kq_philox_rk((u32)b, (u32)(b >> 32), rk);
	// Round to nearest without the clamp to 6 (kq_rne_code2<false>) when
	// every |y| = fl(|x| * f) is below 7: rounding is monotonic, so
	// fl(key * f) < 7 bounds them all (false for an infinite or NaN
	// product). Blocks need more only where a coarse (subnormal) or zero
	// scale code leaves key * f well above 6. Stochastic rounding keeps
	// the clamp: it may round (6, 8) up to 8.
	if (!SR && __fmul_rn(__uint_as_float(key), f) < 7.0f) return kq_q16r<SR, false>(P, f, w);
	return kq_q16r<SR, true, F14>(P, f, w);
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
