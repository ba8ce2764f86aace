// nvfp4_rowcheck: checks host emulations of the rowwise fast path's
// helpers (kernels/nvfp4_fast.cuh, nvfp4_bits.cuh) against the contract's
// element functions (kq_e2m1, kq_e2m1_sr of nvfp4.cu, ported) and the
// Philox 4x32-10 of nvfp4.cu (kq_philox, ported):
//  - kq_rne_code2<true> for every non-NaN float32, kq_rne_code2<false>
//    for every float32 with |y| < 7, against kq_e2m1's magnitude;
//  - kq_q16w (words in element order; BF16 and FP16; SR from the float16
//    bits with the factor and with the factor times 2^-14; RN with and
//    without the clamp) and kq_rkey16 on random blocks;
//  - kq_philox_rk as the row path calls it (round keys without a group,
//    counter word 2 zero) against kq_philox.
// Every instruction the kernel uses is emulated as PTX defines it (prmt
// with its sign-replicating selectors, lop3, cvt.rz.f16x2.f32, min.f16x2
// of |h|, max.NaN.xorsign.abs.bf16x2). The GPU check (old kernels against
// new) is hack/nvfp4_rowcheck/.
//
//	g++ -O2 -o /tmp/rowcheck hack/nvfp4_rowcheck.cc && /tmp/rowcheck
#include "nvfp4_emu.h"

// ---- the kernels' functions, emulated ----
static float h2f(u32 h) { // float16 bits to float32, exact
	const u32 s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
	if (e == 31) return flt(s | 0x7F800000u | (m << 13));
	if (e == 0) { float v = (float)m * 0x1p-24f; return s ? -v : v; }
	return flt(s | ((e + 112u) << 23) | (m << 13));
}
static float wel(const u32 P[8], int t, bool f16) { // element t, element order
	const u32 h = (t & 1) ? (P[t >> 1] >> 16) : (P[t >> 1] & 0xFFFFu);
	return f16 ? h2f(h) : flt(h << 16);
}
static u32 pack4s(u32 r0, u32 r1, u32 r2, u32 r3, u32 pa, u32 pb) {
	const u32 w = byte_perm(byte_perm(r0, r1, 0x0040u), byte_perm(r2, r3, 0x0040u), 0x5410u) | (prmt(pa, pb, 0xFDB9u) & 0x08080808u);
	return w + (w >> 4);
}
static u64 q16w(const u32 P[8], float f, const u32 w[4], bool f16, bool sr, bool cl, bool f14) {
	float y[16];
	for (int t = 0; t < 16; t++) {
		y[t] = fmul(wel(P, t, f16), f);
		if (sr && !f14) y[t] = fmul(y[t], 0x1p-14f);
	}
	if (!sr) {
		u32 r[16];
		for (int t = 0; t < 16; t++) r[t] = rne_code2(y[t], cl);
		const u32 q0 = pack4s(r[0], r[1], r[2], r[3], P[0], P[1]), q1 = pack4s(r[4], r[5], r[6], r[7], P[2], P[3]);
		const u32 q2 = pack4s(r[8], r[9], r[10], r[11], P[4], P[5]), q3 = pack4s(r[12], r[13], r[14], r[15], P[6], P[7]);
		return (u64)byte_perm(q0, q1, 0x6420u) | ((u64)byte_perm(q2, q3, 0x6420u) << 32);
	}
	u32 xe[4], xo[4], sg[4], o[2];
	for (int g = 0; g < 4; g++) {
		const u32 wd = w[g];
		xe[g] = sr_h2(y[4 * g], y[4 * g + 2]) + (andn(wd, 0x00FF00FFu) << 1);
		xo[g] = sr_h2(y[4 * g + 1], y[4 * g + 3]) + (andn(wd, 0xFF00FF00u) >> 7);
		sg[g] = prmt(P[2 * g], P[2 * g + 1], 0xFBD9u);
	}
	for (int h = 0; h < 2; h++) {
		const int g = 2 * h;
		const u32 te = sel(byte_perm(xe[g], xe[g + 1], 0x7531u), byte_perm(sg[g], sg[g + 1], 0x5410u), 0x10101010u);
		const u32 to = sel(byte_perm(xo[g], xo[g + 1], 0x7531u), byte_perm(sg[g], sg[g + 1], 0x7632u), 0x10101010u);
		o[h] = sel(te >> 1, to << 3, 0xF0F0F0F0u);
	}
	return (u64)o[0] | ((u64)o[1] << 32);
}
static u32 rkey16(const u32 P[8]) {
	u32 x = bmaxa2(bmaxa2(bmaxa2(P[0], P[1]), bmaxa2(P[2], P[3])), bmaxa2(bmaxa2(P[4], P[5]), bmaxa2(P[6], P[7])));
	return bmaxa2(x, x << 16) & 0x7FFF0000u;
}
// The sm_80 form: masked words, max.NaN.bf16x2 (NaN result: canonical 0x7FFF).
static u32 bmaxn2(u32 a, u32 b) {
	u32 d = 0;
	for (int i = 0; i < 2; i++) {
		const u32 x = (a >> (16 * i)) & 0xFFFFu, y = (b >> (16 * i)) & 0xFFFFu; // both non-negative
		const u32 r = (x > 0x7F80u || y > 0x7F80u) ? 0x7FFFu : (x > y ? x : y);
		d |= r << (16 * i);
	}
	return d;
}
static u32 rkey16_80(const u32 P[8]) {
	u32 m[8];
	for (int k = 0; k < 8; k++) m[k] = P[k] & 0x7FFF7FFFu;
	auto mx = [](u32 a, u32 b) { return bmaxn2(a & 0x7FFF7FFFu, b & 0x7FFF7FFFu); };
	u32 x = mx(mx(mx(m[0], m[1]), mx(m[2], m[3])), mx(mx(m[4], m[5]), mx(m[6], m[7])));
	return mx(x, x << 16) & 0x7FFF0000u;
}
// Philox 4x32-10 as nvfp4.cu's kq_philox, and kq_philox_rk.
static void philox(u32 c[4], u32 k0, u32 k1) {
	for (int r = 0; r < 10; r++) {
		if (r > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
		const u64 p0 = (u64)0xD2511F53u * c[0], p1 = (u64)0xCD9E8D57u * c[2];
		const u32 n0 = (u32)(p1 >> 32) ^ c[1] ^ k0, n2 = (u32)(p0 >> 32) ^ c[3] ^ k1;
		c[0] = n0; c[1] = (u32)p1; c[2] = n2; c[3] = (u32)p0;
	}
}
static void philox_row(u32 c0, u32 c1, u32 c3, const u32 rk[20], u32 out[4]) {
	u32 c2 = 0u;
	for (int r = 0; r < 10; r += 2)
		for (int h = 0; h < 2; h++) {
			const u32 kx = rk[2 * r + (h ? 2 : 0)], ky = rk[2 * r + (h ? 3 : 1)];
			const u64 p0 = (u64)c0 * 0xD2511F53u, p1 = (u64)c2 * 0xCD9E8D57u;
			const u32 n0 = (u32)(p1 >> 32) ^ c1 ^ kx, n2 = (u32)(p0 >> 32) ^ c3 ^ ky;
			c0 = n0; c1 = (u32)p1; c2 = n2; c3 = (u32)p0;
		}
	out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

int main() {
	long long bad = 0;
	// kq_rne_code2 over every float32.
	long long nrc = 0;
	for (u64 i = 0; i < (1ull << 32); i++) {
		const u32 u = (u32)i;
		if ((u & 0x7FFFFFFFu) > 0x7F800000u) continue;
		const float y = flt(u);
		const u32 want = e2m1(y) & 7u;
		if ((rne_code2(y, true) & 0xFFu) != want) { if (bad < 10) printf("rcode<true> %08x\n", u); bad++; }
		if ((u & 0x7FFFFFFFu) < 0x40E00000u && (rne_code2(y, false) & 0xFFu) != want) { if (bad < 10) printf("rcode<false> %08x\n", u); bad++; }
		nrc++;
	}
	printf("kq_rne_code2: %lld float32, %lld mismatches\n", nrc, bad);
	std::mt19937_64 rng(16);
	// Philox: random seeds, counters, groups.
	for (int it = 0; it < 2000000; it++) {
		const u64 seed = rng(), b = (it & 1) ? rng() : (rng() >> 40);
		const u32 group = (it & 2) ? (u32)rng() : 0u;
		u32 rk[20];
		for (u32 r = 0; r < 10; r++) { rk[2 * r] = (u32)seed + r * 0x9E3779B9u; rk[2 * r + 1] = (u32)(seed >> 32) + r * 0xBB67AE85u; }
		u32 c[4] = {(u32)b, (u32)(b >> 32), 0u, group}, o[4];
		philox(c, (u32)seed, (u32)(seed >> 32));
		philox_row((u32)b, (u32)(b >> 32), group, rk, o);
		if (memcmp(c, o, 16) != 0) { if (bad < 10) printf("philox %llx %llx %x\n", (unsigned long long)seed, (unsigned long long)b, group); bad++; }
	}
	printf("kq_philox_rk (row): 2000000 counters, %lld mismatches so far\n", bad);
	const unsigned short sp[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x3F80, 0x40C0, 0x40E0, 0x3E80, 0x3F40, 0xBF40, 0x40A0};
	const unsigned short sph[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x3C00, 0x4600, 0x4700, 0x3400, 0x3A00, 0xBA00, 0x4500};
	long long n = 0, nan = 0;
	for (long long it = 0; it < 20000000; it++) {
		const bool f16 = it & 1;
		const int mode = (int)(rng() % 4);
		u32 e[16];
		for (int t = 0; t < 16; t++) {
			u32 v = (u32)rng() & 0xFFFFu;
			if (!f16) {
				if (mode == 1 && rng() % 4 == 0) v = sp[rng() % (sizeof(sp) / 2)];
				if (mode == 2) v = (v & 0x80FFu) | ((u32)(0x3C + rng() % 12) << 8);
				if (mode == 3) v = (v & 0x807Fu) | ((u32)(0x3E + rng() % 4) << 7); // |x| near 0.5 .. 8
			} else {
				if ((v & 0x7C00u) == 0x7C00u && (v & 0x3FFu) && rng() % 8) v &= 0xBFFFu; // fewer NaNs
				if (mode == 1 && rng() % 4 == 0) v = sph[rng() % (sizeof(sph) / 2)];
				if (mode == 2) v = (v & 0x83FFu) | ((u32)(10 + rng() % 12) << 10);
				if (mode == 3) v = (v & 0x81FFu) | ((u32)(0x1C + rng() % 4) << 9); // |x| near 0.5 .. 8
			}
			e[t] = v;
		}
		const bool hasnan = rng() % 16 == 0;
		if (hasnan) e[rng() % 16] = f16 ? (0x7E00u | (u32)(rng() & 0x81FFu)) : (0x7FC0u | (u32)(rng() & 0x803Fu));
		u32 P[8];
		for (int k = 0; k < 8; k++) P[k] = e[2 * k] | (e[2 * k + 1] << 16); // element order
		bool isnan = false;
		u32 mx = 0;
		float fmx = 0.0f;
		for (int t = 0; t < 16; t++) {
			const float x = wel(P, t, f16);
			if (x != x) isnan = true;
			else if (fabsf(x) > fmx) fmx = fabsf(x);
			if (!f16 && (e[t] & 0x7FFFu) <= 0x7F80u && (e[t] & 0x7FFFu) > mx) mx = e[t] & 0x7FFFu;
		}
		u32 key = bits(fmx);
		if (!f16) {
			key = rkey16(P);
			const u32 k80 = rkey16_80(P);
			if (isnan ? (key <= 0x7F800000u || k80 <= 0x7F800000u) : (key != mx << 16 || k80 != mx << 16)) { if (bad < 10) printf("key: %08x %08x want %08x\n", key, k80, mx << 16); bad++; }
		}
		nan += isnan;
		if (isnan) continue;
		u32 fb, w[4];
		const float f = random_factor(rng, mode, &fb, w);
		float y[16];
		for (int t = 0; t < 16; t++) y[t] = fmul(wel(P, t, f16), f);
		u64 sr, rn;
		contract_codes(y, w, &sr, &rn);
		n++;
		if (q16w(P, f, w, f16, true, true, false) != sr) { if (bad < 10) printf("sr: %016llx want %016llx\n", (unsigned long long)q16w(P, f, w, f16, true, true, false), (unsigned long long)sr); bad++; }
		if (fb >= 0x07800000u && q16w(P, fmul(f, 0x1p-14f), w, f16, true, true, true) != sr) { if (bad < 10) printf("sr14\n"); bad++; }
		if (q16w(P, f, w, f16, false, true, false) != rn) { if (bad < 10) printf("rn: %016llx want %016llx\n", (unsigned long long)q16w(P, f, w, f16, false, true, false), (unsigned long long)rn); bad++; }
		if (fmul(flt(key), f) < 7.0f && q16w(P, f, w, f16, false, false, false) != rn) { if (bad < 10) printf("rn<false>\n"); bad++; }
	}
	printf("%s: %lld NaN-free blocks, %lld with NaN, %lld mismatches\n", bad ? "FAIL" : "ok", n, nan, bad);
	return bad != 0;
}
