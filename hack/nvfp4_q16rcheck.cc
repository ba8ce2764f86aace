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
#include <cstdio>
#include <cstring>
#include <cmath>
#include <cstdint>
#include <random>

typedef uint32_t u32;
typedef uint64_t u64;
static u32 bits(float f) { u32 u; memcpy(&u, &f, 4); return u; }
static float flt(u32 u) { float f; memcpy(&f, &u, 4); return f; }
static float fmul(float a, float b) { volatile float r = a * b; return r; }
static float fadd(float a, float b) { volatile float r = a + b; return r; }

// ---- contract (nvfp4.cu's kq_e2m1, kq_e2m1_sr) ----
static u32 e2m1(float x) {
	const u32 b = bits(x), a = b & 0x7FFFFFFFu;
	if (a > 0x7F800000u) return 7u;
	const u32 sign = (b >> 28) & 8u;
	const float v = flt(a);
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
static u32 e2m1_sr(float x, u32 r) {
	const u32 b = bits(x), a = b & 0x7FFFFFFFu;
	const u32 sign = (b >> 28) & 8u;
	if (a >= 0x40C00000u) return a > 0x7F800000u ? 7u : (sign | 7u);
	const float v = flt(a);
	u32 lo, frac;
	if (a >= 0x40800000u) { u32 q = (u32)fmul(v, 128.0f); lo = 6; frac = q - 512u; }
	else if (a >= 0x40000000u) { u32 q = (u32)fmul(v, 256.0f); lo = (q >> 8) + 2u; frac = q & 255u; }
	else { u32 q = (u32)fmul(v, 512.0f); lo = q >> 8; frac = q & 255u; }
	if (r < frac) lo++;
	return sign | lo;
}

// ---- PTX instructions ----
static u32 prmt(u32 a, u32 b, u32 s) {
	const u64 x = (u64)a | ((u64)b << 32);
	u32 d = 0;
	for (int i = 0; i < 4; i++) {
		const u32 n = (s >> (4 * i)) & 0xFu;
		u32 byte = (u32)(x >> (8 * (n & 7u))) & 0xFFu;
		if (n & 8u) byte = (byte & 0x80u) ? 0xFFu : 0u;
		d |= byte << (8 * i);
	}
	return d;
}
static u32 byte_perm(u32 a, u32 b, u32 s) { return prmt(a, b, s & 0x7777u); }
static u32 sel(u32 a, u32 b, u32 m) { return (a & ~m) | (b & m); }
static u32 andn(u32 a, u32 m) { return ~a & m; }
// cvt.rz.f16 of a non-NaN float32.
static u32 rz16(float z) {
	const u32 b = bits(z), s = (b >> 16) & 0x8000u, a = b & 0x7FFFFFFFu;
	if (a >= 0x7F800000u) return s | 0x7C00u;
	const int E = (a >> 23) ? (int)(a >> 23) - 127 : -126;
	const u32 m = (a >> 23) ? ((a & 0x7FFFFFu) | 0x800000u) : a;
	if (E > 15) return s | 0x7BFFu;
	if (E >= -14) return s | (u32)((E + 15) << 10) | ((m >> 13) & 0x3FFu);
	const int sh = -1 - E;
	return s | (sh >= 32 ? 0u : (m >> sh));
}
// kq_sr_h2: cvt.rz.f16x2 then min.f16x2 of |h| with 0x0E00 (non-NaN halves
// order as their bits).
static u32 sr_h2(float z0, float z1) {
	u32 d = 0;
	const float z[2] = {z0, z1};
	for (int i = 0; i < 2; i++) {
		u32 h = rz16(z[i]) & 0x7FFFu;
		d |= (h < 0x0E00u ? h : 0x0E00u) << (16 * i);
	}
	return d;
}
static u32 rne_code2(float y, bool cl) {
	const float v = cl ? fminf(fabsf(y), 6.0f) : fabsf(y);
	const u32 t = bits(fmaxf(v, 1.0f)) >> 23;
	return bits(fadd(v, flt(t * 0x800002u + ((22u << 23) - 254u))));
}
// max.NaN.xorsign.abs.bf16x2.
static u32 bmaxa2(u32 a, u32 b) {
	u32 d = 0;
	for (int i = 0; i < 2; i++) {
		const u32 x = (a >> (16 * i)) & 0xFFFFu, y = (b >> (16 * i)) & 0xFFFFu;
		u32 r;
		if ((x & 0x7FFFu) > 0x7F80u || (y & 0x7FFFu) > 0x7F80u) r = 0x7FFFu;
		else r = (x & 0x7FFFu) > (y & 0x7FFFu) ? (x & 0x7FFFu) : (y & 0x7FFFu);
		r |= (x ^ y) & 0x8000u;
		d |= r << (16 * i);
	}
	return d;
}

// ---- the kernels' functions, emulated ----
static float pel(const u32 P[8], int t) {
	const u32 w = P[2 * (t >> 2) + (t & 1)];
	return flt((t & 2) ? (w & 0xFFFF0000u) : (w << 16));
}
static u64 q16r(const u32 P[8], float f, const u32 w[4], bool sr, bool cl, bool f14) {
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
		} else {
			u32 r[4];
			for (int t = 0; t < 4; t++) r[t] = rne_code2(y[t], cl);
			const u32 c = byte_perm(byte_perm(r[0], r[1], 0x0040u), byte_perm(r[2], r[3], 0x0040u), 0x5410u) |
				(prmt(P[2 * g], P[2 * g + 1], 0xFBD9u) & 0x08080808u);
			q[g] = c + (c >> 4);
		}
	}
	for (int h = 0; h < 2; h++) {
		if (sr) {
			const int g = 2 * h;
			const u32 te = sel(byte_perm(xe[g], xe[g + 1], 0x7531u), prmt(P[2 * g], P[2 * g + 2], 0xFDB9u), 0x10101010u);
			const u32 to = sel(byte_perm(xo[g], xo[g + 1], 0x7531u), prmt(P[2 * g + 1], P[2 * g + 3], 0xFDB9u), 0x10101010u);
			o[h] = sel(te >> 1, to << 3, 0xF0F0F0F0u);
		} else {
			o[h] = byte_perm(q[2 * h], q[2 * h + 1], 0x6420u);
		}
	}
	return (u64)o[0] | ((u64)o[1] << 32);
}
static u32 bkey16(const u32 P[8]) {
	u32 x = bmaxa2(bmaxa2(bmaxa2(P[0], P[1]), bmaxa2(P[2], P[3])), bmaxa2(bmaxa2(P[4], P[5]), bmaxa2(P[6], P[7])));
	return bmaxa2(x, x << 16) & 0x7FFF0000u;
}

int main() {
	std::mt19937_64 rng(7);
	const unsigned short sp[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x3F80, 0x40C0, 0x40E0, 0x3E80, 0x3F40, 0xBF40, 0x40A0};
	long long bad = 0, n = 0, nan = 0;
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
		// Factors: any positive float32 below the maximum, or near 1.
		u32 fb = (u32)rng() & 0x7FFFFFFFu;
		if (fb >= 0x7F800000u) fb = 0x7F7FFFFFu;
		if (mode >= 2) fb = (fb & 0x007FFFFFu) | ((u32)(120 + rng() % 16) << 23);
		if (fb == 0) fb = 1;
		const float f = flt(fb);
		u32 w[4];
		for (int i = 0; i < 4; i++) w[i] = (u32)rng();
		u64 sr = 0, rn = 0;
		for (int t = 0; t < 16; t++) {
			const float y = fmul(flt(e[t] << 16), f);
			sr |= (u64)e2m1_sr(y, (w[t >> 2] >> (8 * (t & 3))) & 0xFFu) << (4 * t);
			rn |= (u64)e2m1(y) << (4 * t);
		}
		n++;
		if (q16r(P, f, w, true, true, false) != sr) { if (bad < 10) printf("sr: %016llx want %016llx\n", (unsigned long long)q16r(P, f, w, true, true, false), (unsigned long long)sr); bad++; }
		if (fb >= 0x07800000u && q16r(P, fmul(f, 0x1p-14f), w, true, true, true) != sr) bad++;
		if (q16r(P, f, w, false, true, false) != rn) { if (bad < 10) printf("rn: %016llx want %016llx\n", (unsigned long long)q16r(P, f, w, false, true, false), (unsigned long long)rn); bad++; }
		if (fmul(flt(key), f) < 7.0f && q16r(P, f, w, false, false, false) != rn) bad++;
	}
	printf("%s: %lld NaN-free blocks, %lld with NaN, %lld mismatches\n", bad ? "FAIL" : "ok", n, nan, bad);
	return bad != 0;
}
