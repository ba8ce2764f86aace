// nvfp4_2dcheck: checks a host emulation of the 2D (16x16) fast path's
// per-tile work on 16-bit inputs (kernels/nvfp4_2d.cuh: kq_nvf4_2d_code,
// kq_nvf4_2d_quant) against the contract: the tile amax is the largest
// |x| of the tile, NaNs skipped (kq_block_amax), and every code of a
// NaN-free block is kq_e2m1(fl(x f)). The kernel's form: block keys by
// kq_rkey16 (BF16: max.NaN.xorsign.abs.bf16x2, kq_bkey16; FP16: the
// 16-bit maximum, kq_key16), a NaN block's key replaced by its amax, the
// tile amax a the largest; codes by kq_q16w<T, false, CL> with CL =
// !(fl(a f) < 7). Random tiles (BF16 and FP16 bit patterns, specials
// mixed in: NaN, infinity, zeros, subnormals) and factors, half of them
// drawn to put fl(a f) near 7.
//
//	g++ -O2 -o /tmp/2dcheck hack/nvfp4_2dcheck.cc && /tmp/2dcheck
#include "nvfp4_emu.h"

static float h2f(u32 h) {
	const u32 s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
	if (e == 31) return flt(s | 0x7F800000u | (m << 13));
	if (e == 0) { float v = (float)m * 0x1p-24f; return s ? -v : v; }
	return flt(s | ((e + 112u) << 23) | (m << 13));
}
static float wel(const u32 P[8], int t, bool f16) {
	const u32 h = (t & 1) ? (P[t >> 1] >> 16) : (P[t >> 1] & 0xFFFFu);
	return f16 ? h2f(h) : flt(h << 16);
}
static u32 pack4s(u32 r0, u32 r1, u32 r2, u32 r3, u32 pa, u32 pb) {
	const u32 w = byte_perm(byte_perm(r0, r1, 0x0040u), byte_perm(r2, r3, 0x0040u), 0x5410u) | (prmt(pa, pb, 0xFDB9u) & 0x08080808u);
	return w + (w >> 4);
}
static u64 q16w_rn(const u32 P[8], float f, bool f16, bool cl) {
	u32 r[16];
	for (int t = 0; t < 16; t++) r[t] = rne_code2(fmul(wel(P, t, f16), f), cl);
	const u32 q0 = pack4s(r[0], r[1], r[2], r[3], P[0], P[1]), q1 = pack4s(r[4], r[5], r[6], r[7], P[2], P[3]);
	const u32 q2 = pack4s(r[8], r[9], r[10], r[11], P[4], P[5]), q3 = pack4s(r[12], r[13], r[14], r[15], P[6], P[7]);
	return (u64)byte_perm(q0, q1, 0x6420u) | ((u64)byte_perm(q2, q3, 0x6420u) << 32);
}
static u32 bkey16(const u32 P[8]) {
	u32 x = bmaxa2(bmaxa2(bmaxa2(P[0], P[1]), bmaxa2(P[2], P[3])), bmaxa2(bmaxa2(P[4], P[5]), bmaxa2(P[6], P[7])));
	return bmaxa2(x, x << 16) & 0x7FFF0000u;
}
static u32 key16_f16(const u32 P[8]) { // kq_key16(kq_f16): 16-bit max of |h|
	u32 k = 0;
	for (int t = 0; t < 16; t++) { const u32 h = ((t & 1) ? P[t >> 1] >> 16 : P[t >> 1]) & 0x7FFFu; if (h > k) k = h; }
	return k > 0x7C00u ? 0xFFFFFFFFu : bits(h2f(k));
}
static u32 rand16(std::mt19937_64 &rng, bool f16) {
	const u32 s = (u32)(rng() & 1) << 15;
	switch (rng() % 16) {
	case 0: return s | (f16 ? 0x7C00u | (1 + rng() % 0x3FF) : 0x7F80u | (1 + rng() % 0x7F)); // NaN
	case 1: return s | (f16 ? 0x7C00u : 0x7F80u);
	case 2: return s;
	case 3: return s | (u32)(rng() % (f16 ? 0x400 : 0x80)); // subnormal
	default: {
		// a narrow exponent band, so that tiles have a spread of magnitudes
		const u32 m = (u32)rng();
		return f16 ? s | ((10 + m % 8) << 10) | ((m >> 8) & 0x3FFu) : s | ((120 + m % 8) << 7) | ((m >> 8) & 0x7Fu);
	}
	}
}

int main() {
	std::mt19937_64 rng(2016);
	long long bad = 0, ntile = 0, nblk = 0, nnocl = 0, nnan = 0;
	for (int it = 0; it < 1500000; it++) {
		const bool f16 = it & 1;
		const int nanrate = (it >> 1) % 4; // 0: specials as drawn, else no NaN or infinity
		u32 T[16][8];                      // tile: 16 rows of 8 words (16 values)
		for (int r = 0; r < 16; r++)
			for (int k = 0; k < 8; k++) {
				u32 lo, hi;
				do { lo = rand16(rng, f16); } while (nanrate && ((lo & 0x7FFFu) > (f16 ? 0x7BFFu : 0x7F7Fu)));
				do { hi = rand16(rng, f16); } while (nanrate && ((hi & 0x7FFFu) > (f16 ? 0x7BFFu : 0x7F7Fu)));
				T[r][k] = lo | (hi << 16);
			}
		// Pieces: lane (cx, ry) in {0,1}^2 holds rows 8ry..+7, words 4cx..+3;
		// block j of a piece is rows 2j, 2j+1 of it (8 words).
		u32 P[4][4][8], key[4][4], a = 0;
		float camax = 0.0f; // contract: largest |x|, NaNs skipped
		for (int r = 0; r < 16; r++)
			for (int t = 0; t < 16; t++) {
				const float x = wel(T[r], t, f16);
				if (!(x != x) && fabsf(x) > camax) camax = fabsf(x);
			}
		for (int l = 0; l < 4; l++)
			for (int j = 0; j < 4; j++) {
				const int cx = l & 1, ry = l >> 1;
				for (int h = 0; h < 2; h++)
					for (int k = 0; k < 4; k++) P[l][j][4 * h + k] = T[8 * ry + 2 * j + h][4 * cx + k];
				key[l][j] = f16 ? key16_f16(P[l][j]) : bkey16(P[l][j]);
				u32 aj = key[l][j];
				if (aj > 0x7F800000u) {
					float am = 0.0f;
					for (int t = 0; t < 16; t++) { const float x = wel(P[l][j], t, f16); if (!(x != x) && fabsf(x) > am) am = fabsf(x); }
					aj = bits(am);
				}
				if (aj > a) a = aj;
			}
		if (a != bits(camax)) { if (bad < 10) printf("amax %08x want %08x\n", a, bits(camax)); bad++; }
		// factor: any positive finite, or one putting fl(a f) near 7
		u32 fb, w[4];
		float f = random_factor(rng, (int)(rng() % 3), &fb, w);
		if ((rng() & 1) && camax > 0.0f && camax < 3e38f) {
			const float tgt = flt(bits(7.0f) + (u32)(rng() % 2001) - 1000u);
			const float g = tgt / camax;
			if (g > 0.0f && g < 3e38f) f = g;
		}
		const bool cl = !(fmul(flt(a), f) < 7.0f);
		if (!cl) nnocl++;
		for (int l = 0; l < 4; l++)
			for (int j = 0; j < 4; j++) {
				if (key[l][j] > 0x7F800000u) { nnan++; continue; } // reference path
				const u64 got = q16w_rn(P[l][j], f, f16, cl);
				u64 want = 0;
				for (int t = 0; t < 16; t++) want |= (u64)e2m1(fmul(wel(P[l][j], t, f16), f)) << (4 * t);
				if (got != want) { if (bad < 10) printf("codes f16=%d f=%08x a=%08x cl=%d got %016llx want %016llx\n", f16, bits(f), a, cl, (unsigned long long)got, (unsigned long long)want); bad++; }
				nblk++;
			}
		ntile++;
	}
	printf("2D: %lld tiles, %lld NaN-free blocks (tiles without the clamp: %lld), %lld NaN blocks, %lld mismatches\n", ntile, nblk, nnocl, nnan, bad);
	return bad != 0;
}
