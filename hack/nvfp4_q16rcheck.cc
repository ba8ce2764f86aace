// nvfp4_q16rcheck: checks a host emulation of kq_q16r (kernels/
// nvfp4_rhtcol.cuh: words in kq_pel's order; SR from the float16 bits,
// with the factor and with the factor times 2^-14; RN with and without
// the clamp) and of kq_bkey16 against the contract's element functions
// (kq_e2m1, kq_e2m1_sr of nvfp4.cu, ported) on random blocks: every
// instruction the kernel uses is emulated as PTX defines it (prmt with
// its sign-replicating selectors, lop3, cvt.rz.f16x2.f32, min.f16x2 of
// |h|, max.NaN.xorsign.abs.bf16x2). The GPU check is hack/nvfp4_colcheck.
//
//	g++ -O2 -o /tmp/q16rcheck hack/nvfp4_q16rcheck.cc && /tmp/q16rcheck
#include "nvfp4_emu.h"

// ---- the kernels' functions, emulated ----
static float pel(const u32 P[8], int t) {
	const u32 w = P[2 * (t >> 2) + (t & 1)];
	return flt((t & 2) ? (w & 0xFFFF0000u) : (w << 16));
}
static u64 q16r(const u32 P[8], float f, const u32 w[4], bool sr, bool cl, bool f14, bool oldrn = false) {
	u32 o[2], q[4], xe[4], xo[4];
	for (int g = 0; g < 4; g++) {
		float y[4];
		for (int t = 0; t < 4; t++) {
			y[t] = fmul(pel(P, 4 * g + t), f);
			if (sr && !f14) y[t] = fmul(y[t], 0x1p-14f);
		}
		if (sr) {
			const u32 wd = w[g];
			xe[g] = sr_h2(y[0], y[2]) + (andn(wd, 0x00FF00FFu) << 1);
			xo[g] = sr_h2(y[1], y[3]) + (andn(wd, 0xFF00FF00u) >> 7);
		} else if (oldrn) {
			u32 r[4];
			for (int t = 0; t < 4; t++) r[t] = rne_code2(y[t], cl);
			const u32 c = byte_perm(byte_perm(r[0], r[1], 0x0040u), byte_perm(r[2], r[3], 0x0040u), 0x5410u) |
				(prmt(P[2 * g], P[2 * g + 1], 0xFBD9u) & 0x08080808u);
			q[g] = c + (c >> 4);
		} else {
			// Session 16: nibble pairs by shift-add, two pairs a word by
			// shift-add, one permute per eight elements; signs as SR's.
			for (int u = 0; u < 2; u++) q[2 * (g & 1) + u] = rne_code2(y[2 * u], cl) + (rne_code2(y[2 * u + 1], cl) << 4);
			if (g & 1) {
				const u32 lo = q[0] + (q[1] << 8), hi = q[2] + (q[3] << 8);
				xe[g >> 1] = byte_perm(lo, hi, 0x5410u);
			}
		}
	}
	for (int h = 0; h < 2; h++) {
		const int g = 2 * h;
		if (sr) {
			const u32 te = sel(byte_perm(xe[g], xe[g + 1], 0x7531u), prmt(P[2 * g], P[2 * g + 2], 0xFDB9u), 0x10101010u);
			const u32 to = sel(byte_perm(xo[g], xo[g + 1], 0x7531u), prmt(P[2 * g + 1], P[2 * g + 3], 0xFDB9u), 0x10101010u);
			o[h] = sel(te >> 1, to << 3, 0xF0F0F0F0u);
		} else if (oldrn) {
			o[h] = byte_perm(q[2 * h], q[2 * h + 1], 0x6420u);
		} else {
			const u32 sg = sel(prmt(P[2 * g], P[2 * g + 2], 0xFDB9u), prmt(P[2 * g + 1], P[2 * g + 3], 0xFDB9u), 0xF0F0F0F0u);
			o[h] = xe[h] | (sg & 0x88888888u);
		}
	}
	return (u64)o[0] | ((u64)o[1] << 32);
}
static u32 bkey16(const u32 P[8]) {
	u32 x = bmaxa2(bmaxa2(bmaxa2(P[0], P[1]), bmaxa2(P[2], P[3])), bmaxa2(bmaxa2(P[4], P[5]), bmaxa2(P[6], P[7])));
	return bmaxa2(x, x << 16) & 0x7FFF0000u;
}

int main() {
	// The RN packing's premise (session 16): kq_rne_code2's code is in bits
	// 0-2 and bits 3-22 are clear, with the clamp for every non-NaN float32
	// and without it for every |y| < 7 (the hot path's blocks).
	long long pb = 0;
	for (u64 i = 0; i < (1ull << 32); i++) {
		const u32 a = (u32)i & 0x7FFFFFFFu;
		if (a > 0x7F800000u) continue;
		const float y = flt((u32)i);
		if ((rne_code2(y, true) & 0x007FFFF8u) != 0 || (e2m1(y) & 7u) != (rne_code2(y, true) & 7u)) pb++;
		if (a < 0x40E00000u && ((rne_code2(y, false) & 0x007FFFF8u) != 0 || (e2m1(y) & 7u) != (rne_code2(y, false) & 7u))) pb++;
	}
	printf("rne_code2 over every float32: %lld with bits 3-22 set or another code\n", pb);
	std::mt19937_64 rng(7);
	const unsigned short sp[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x3F80, 0x40C0, 0x40E0, 0x3E80, 0x3F40, 0xBF40, 0x40A0};
	long long bad = pb, n = 0, nan = 0, nrn7 = 0;
	for (long long it = 0; it < 20000000; it++) {
		const int mode = (int)(rng() % 4);
		u32 e[16];
		for (int t = 0; t < 16; t++) {
			u32 v = (u32)rng() & 0xFFFFu;
			if (mode == 1 && rng() % 4 == 0) v = sp[rng() % (sizeof(sp) / 2)];
			if (mode == 2) v = (v & 0x80FFu) | ((u32)(0x3C + rng() % 12) << 8);
			if (mode == 3) v = (v & 0x807Fu) | ((u32)(0x3E + rng() % 4) << 7); // |x| near 0.5 .. 8
			e[t] = v;
		}
		const bool hasnan = rng() % 16 == 0;
		if (hasnan) e[rng() % 16] = 0x7FC0u | (u32)(rng() & 0x803Fu);
		u32 P[8];
		for (int k = 0; k < 8; k++) {
			const int t = 4 * (k >> 1) + (k & 1);
			P[k] = e[t] | (e[t + 2] << 16);
		}
		// The key against the largest |x| (NaN: any key above 0x7F800000).
		u32 mx = 0;
		bool isnan = false;
		for (int t = 0; t < 16; t++) {
			if ((e[t] & 0x7FFFu) > 0x7F80u) isnan = true;
			else if ((e[t] & 0x7FFFu) > mx) mx = e[t] & 0x7FFFu;
		}
		const u32 key = bkey16(P);
		if (isnan ? key <= 0x7F800000u : key != mx << 16) { if (bad < 10) printf("key: %08x want %08x\n", key, mx << 16); bad++; }
		nan += isnan;
		if (isnan) continue;
		u32 fb, w[4];
		const float f = random_factor(rng, mode, &fb, w);
		float y[16];
		for (int t = 0; t < 16; t++) y[t] = fmul(flt(e[t] << 16), f);
		u64 sr, rn;
		contract_codes(y, w, &sr, &rn);
		n++;
		if (q16r(P, f, w, true, true, false) != sr) { if (bad < 10) printf("sr: %016llx want %016llx\n", (unsigned long long)q16r(P, f, w, true, true, false), (unsigned long long)sr); bad++; }
		if (fb >= 0x07800000u && q16r(P, fmul(f, 0x1p-14f), w, true, true, true) != sr) bad++;
		if (q16r(P, f, w, false, true, false) != rn) { if (bad < 10) printf("rn: %016llx want %016llx\n", (unsigned long long)q16r(P, f, w, false, true, false), (unsigned long long)rn); bad++; }
		if (fmul(flt(key), f) < 7.0f && q16r(P, f, w, false, false, false) != rn) bad++;
		// The session-15 RN packing too (the GPU checker's old side).
		if (q16r(P, f, w, false, true, false, true) != rn) bad++;
		if (fmul(flt(key), f) < 7.0f && q16r(P, f, w, false, false, false, true) != rn) bad++;
		nrn7 += fmul(flt(key), f) < 7.0f;
	}
	printf("%s: %lld NaN-free blocks (%lld with key * f < 7), %lld with NaN, %lld mismatches\n", bad ? "FAIL" : "ok", n, nrn7, nan, bad);
	return bad != 0 || pb != 0;
}
