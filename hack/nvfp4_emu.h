// nvfp4_emu.h: what the NVFP4 host checks (nvfp4_q16rcheck.cc,
// nvfp4_rowcheck.cc) share: the contract's element functions of
// kernels/nvfp4.cu (kq_e2m1, kq_e2m1_sr), ported, and host emulations of
// the PTX instructions the fast paths use, as PTX defines them. A check
// includes it and emulates its kernel's functions on top.
#pragma once
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

// ---- random blocks ----
// random_factor draws a block's factor: any positive finite float32, or
// (mode >= 2) one near 1, where codes land on every rounding boundary;
// and its Philox words w (the SR bytes).
static float random_factor(std::mt19937_64 &rng, int mode, u32 *fbits, u32 w[4]) {
	u32 fb = (u32)rng() & 0x7FFFFFFFu;
	if (fb >= 0x7F800000u) fb = 0x7F7FFFFFu;
	if (mode >= 2) fb = (fb & 0x007FFFFFu) | ((u32)(120 + rng() % 16) << 23);
	if (fb == 0) fb = 1;
	*fbits = fb;
	for (int i = 0; i < 4; i++) w[i] = (u32)rng();
	return flt(fb);
}
// contract_codes packs the contract's codes of a block's products y (SR
// with the Philox words w, 8 bits an element; RN), element t in nibble t.
static void contract_codes(const float y[16], const u32 w[4], u64 *sr, u64 *rn) {
	*sr = *rn = 0;
	for (int t = 0; t < 16; t++) {
		*sr |= (u64)e2m1_sr(y[t], (w[t >> 2] >> (8 * (t & 3))) & 0xFFu) << (4 * t);
		*rn |= (u64)e2m1(y[t]) << (4 * t);
	}
}
