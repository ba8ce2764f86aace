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
// 1 as packed words (y[2k] low, y[2k + 1] high), the bits kq_rht16 gives,
// NaN payloads aside, rounded two values per instruction (kq_bf16x2).
template <typename H>
KQ_DEV void kq_rht16x2c(const u32 W[16], const float c[16], u32 P0[8], u32 P1[8]) {
	float a[16], b[16];
	kq_rht16x2s<H, 16>(W, c, a, b);
#pragma unroll
	for (int k = 0; k < 8; k++) {
		P0[k] = kq_bf16x2(a[2 * k], a[2 * k + 1]);
		P1[k] = kq_bf16x2(b[2 * k], b[2 * k + 1]);
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
// NaN block's key.
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

// kq_rne_code2 and kq_sr_code2 are kq_rne_code and kq_sr_code (the same
// bits) with the magic number from the exponent t = 127 + e of max(v, 1)
// by one multiply-add: eb + (eb >> 22) = t * (2^23 + 2) and eb + (eb >>
// 14) = t * (2^23 + 2^9) for eb = t << 23.
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
KQ_DEV u32 kq_sr_code2(float y) {
	const float v = fminf(fabsf(y), 6.0f);
	const u32 t = __float_as_uint(fmaxf(v, 1.0f)) >> 23;
	return __float_as_uint(__fadd_rz(v, __uint_as_float(t * 0x800200u + ((14u << 23) - (254u << 8)))));
}

// kq_q16r is kq_q16p<kq_bf16, SR> with cheaper packing, the same codes:
// the four code bytes of elements 4q..4q+3 are gathered, each element's
// sign is put on bit 3 of its byte from a sign-replicating permute of the
// packed words (byte & 0x08), and the bytes fold into nibbles by w + (w
// >> 4) (no overlapping bits). With SR, two elements' low 16 bits (code
// << 8 | fraction, below 0x800) share a word, and one add of 0xFF - r per
// half (no half can borrow or overflow into the other) rounds up exactly
// when r < fraction, as kq_sr_code's + (255 - r); the codes are then
// bytes 1 and 3 of the pair words.
template <bool SR, bool CL = true>
KQ_DEV u64 kq_q16r(const u32 P[8], float f, uint4 w) {
	u32 q[4];
#pragma unroll
	for (int g = 0; g < 4; g++) {
		u32 r[4];
#pragma unroll
		for (int t = 0; t < 4; t++) {
			const u32 pw = P[2 * g + (t >> 1)];
			const float x = (t & 1) ? kq_phi(kq_bf16(), pw) : kq_plo(kq_bf16(), pw);
			const float y = __fmul_rn(x, f);
			r[t] = SR ? kq_sr_code2(y) : kq_rne_code2<CL>(y);
		}
		u32 c;
		if (SR) {
			const u32 wd = kq_word(w, (u32)g);
			const u32 x01 = __byte_perm(r[0], r[1], 0x5410u) + 0x00FF00FFu - __byte_perm(wd, 0u, 0x4140u);
			const u32 x23 = __byte_perm(r[2], r[3], 0x5410u) + 0x00FF00FFu - __byte_perm(wd, 0u, 0x4342u);
			c = __byte_perm(x01, x23, 0x7531u);
		} else {
			c = __byte_perm(__byte_perm(r[0], r[1], 0x0040u), __byte_perm(r[2], r[3], 0x0040u), 0x5410u);
		}
		c |= kq_prmt(P[2 * g], P[2 * g + 1], 0xFDB9u) & 0x08080808u;
		q[g] = c + (c >> 4);
	}
	return (u64)__byte_perm(q[0], q[1], 0x6420u) | ((u64)__byte_perm(q[2], q[3], 0x6420u) << 32);
}

// Philox 4x32-10 round keys of a seed (rk[2r], rk[2r + 1]: the key of
// round r), written once per block to shared memory by threads 0..9 (the
// caller synchronises): kq_philox_rk is kq_philox with them, read as
// 16-byte broadcasts instead of two additions per round.
KQ_DEV void kq_philox_keys(u64 seed, u32 *rk) {
	const u32 r = threadIdx.x;
	if (r < 10) {
		rk[2 * r] = (u32)seed + r * 0x9E3779B9u;
		rk[2 * r + 1] = (u32)(seed >> 32) + r * 0xBB67AE85u;
	}
}
KQ_DEV uint4 kq_philox_rk(u32 c0, u32 c1, u32 c2, u32 c3, const u32 *rk) {
	const uint4 *k4 = reinterpret_cast<const uint4 *>(rk);
#pragma unroll
	for (int r = 0; r < 10; r += 2) {
		const uint4 k = k4[r >> 1];
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const u32 hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
			const u32 hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
			const u32 n0 = hi1 ^ c1 ^ (h ? k.z : k.x), n2 = hi0 ^ c3 ^ (h ? k.w : k.y);
			c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
		}
	}
	uint4 w;
	w.x = c0; w.y = c1; w.z = c2; w.w = c3;
	return w;
}

// kq_block16r is kq_block16p<kq_bf16, SR> (operand 1, the factor from
// tab) with the key of kq_bkey16, the Philox round keys rk and the codes
// of kq_q16r (a block holding a NaN takes kq_block16_ref).
template <bool SR>
KQ_DEV u64 kq_block16r(const u32 P[8], u32 key, float s6, float sinv, const float *tab, u64 n0, u32 group, u64 seed,
		const u32 *rk, u32 *d) {
	if (key > 0x7F800000u) {
		float v[16];
		kq_widen<kq_bf16, 8>(P, v);
		return kq_block16_ref<SR>(v, s6, sinv, n0, 1u, group, seed, d);
	}
	*d = kq_e4m3(__fmul_rn(__uint_as_float(key), s6));
	const float f = tab[*d];
	uint4 w = make_uint4(0u, 0u, 0u, 0u);
	if (SR) {
		const u64 b = n0 >> 4;
		w = kq_philox_rk((u32)b, (u32)(b >> 32), 1u, group, rk);
	}
	// Round to nearest without the clamp to 6 (kq_rne_code2<false>) when
	// every |y| = fl(|x| * f) is below 7: rounding is monotonic, so
	// fl(key * f) < 7 bounds them all (false for an infinite or NaN
	// product). Blocks need more only where a coarse (subnormal) or zero
	// scale code leaves key * f well above 6. Stochastic rounding keeps
	// the clamp: it may round (6, 8) up to 8.
	if (!SR && __fmul_rn(__uint_as_float(key), f) < 7.0f) return kq_q16r<SR, false>(P, f, w);
	return kq_q16r<SR>(P, f, w);
}
