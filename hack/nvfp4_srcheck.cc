// nvfp4_srcheck: checks kq_sr_h2 (kernels/nvfp4_rhtcol.cuh), the SR code
// and fraction from float16 bits, against kq_sr_code2, the float32
// magic-number form it replaced, for every float32 y but NaN, and the
// rounding step of kq_q16r (2 D + b + 2 (255 - r), bits 9-11) against D
// + (255 - r) (bits 8-11) for every D, b and r. Host emulation: float32
// multiplies round to nearest (no flush to zero), the float16 conversion
// truncates (cvt.rz: finite values past the float16 range give 0x7BFF).
//
//	g++ -O2 -fopenmp -o /tmp/srcheck hack/nvfp4_srcheck.cc && /tmp/srcheck
#include <cstdio>
#include <cstring>
#include <cmath>
#include <cstdint>

typedef uint32_t u32;
static u32 bits(float f) { u32 u; memcpy(&u, &f, 4); return u; }
static float flt(u32 u) { float f; memcpy(&f, &u, 4); return f; }

// a + b rounded toward zero for a, b >= 0 finite: the nearest sum, one
// step down when it is above the exact sum (TwoSum's error is exact).
static float fadd_rz(float a, float b) {
	volatile float s = a + b;
	volatile float bb = s - a;
	volatile float err = (a - (s - bb)) + (b - bb);
	if (err < 0.0f) return flt(bits(s) - 1u);
	return s;
}

// kq_sr_code2's low 16 bits.
static u32 old_d(float y) {
	const float v = fminf(fabsf(y), 6.0f);
	const u32 t = bits(fmaxf(v, 1.0f)) >> 23;
	return bits(fadd_rz(v, flt(t * 0x800200u + ((14u << 23) - (254u << 8))))) & 0xFFFFu;
}

// float32 to float16 bits, truncating; z >= 0, not NaN.
static u32 rz16(float z) {
	const u32 b = bits(z);
	if (b >= 0x7F800000u) return 0x7C00u;
	const int e = (int)(b >> 23) - 127;
	const u32 m = (b >> 23) ? ((b & 0x7FFFFFu) | 0x800000u) : (b & 0x7FFFFFu);
	const int E = (b >> 23) ? e : -126;
	if (E > 15) return 0x7BFFu;
	if (E >= -14) return (u32)((E + 15) << 10) | ((m >> 13) & 0x3FFu);
	const int sh = -1 - E;
	return sh >= 32 ? 0u : (m >> sh);
}

// kq_sr_h2's half for z = y 2^-14: min(|rz16(z)|, 0x0E00).
static u32 h_of(float z) {
	const u32 h = rz16(fabsf(z));
	return h < 0x0E00u ? h : 0x0E00u;
}
static u32 new_h(float y) {
	volatile float z = y * 0x1p-14f;
	return h_of(z);
}

int main() {
	long long bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static, 1 << 16)
	for (long long i = 0; i < (1LL << 32); i++) {
		const float y = flt((u32)i);
		if (y != y) continue;
		const u32 d = old_d(y), h = new_h(y);
		if (d > 0x700u || (h >> 1) != d) {
			if (bad < 10) printf("y %08llx: old %04x new %04x\n", i, d, h);
			bad++;
		}
	}
	for (u32 d = 0; d <= 0x700u; d++)
		for (u32 b = 0; b < 2; b++)
			for (u32 r = 0; r < 256; r++) {
				const u32 x = 2 * d + b + 2 * (255 - r);
				if (x > 0x0FFFu || ((x >> 9) & 7u) != (((d + 255 - r) >> 8) & 0xFu) || ((d + 255 - r) >> 8) > 7u) bad++;
			}
	// Factors times 2^-14: x f14 against (x f) 2^-14.
	static float fs[40000];
	u32 seed = 1;
	const u32 edge[] = {0x07800000u, 0x07800001u, 0x07FFFFFFu, 0x7F7FFFFFu, 0x7F7FFFFEu, 0x3F800000u, 0x3F800001u, 0x3FFFFFFFu, 0x43800000u, 0x4B000000u};
	for (int i = 0; i < 40000; i++) {
		seed = seed * 1664525u + 1013904223u;
		u32 b = 0x07800000u + (seed >> 1) % (0x7F7FFFFFu - 0x07800000u + 1u);
		if (i < 10) b = edge[i];
		fs[i] = flt(b);
	}
#pragma omp parallel for reduction(+ : bad)
	for (int i = 0; i < 40000; i++) {
		const float f = fs[i];
		volatile float f14 = f * 0x1p-14f;
		if (f14 * 0x1p14f != f) { bad++; continue; }
		for (u32 xb = 0; xb < 0x10000u; xb++) {
			const float x = flt(xb << 16);
			if (x != x) continue;
			volatile float y = x * f, z = x * f14;
			if (new_h(y) != h_of(z)) {
				if (bad < 10) printf("x %04x f %08x: %04x %04x\n", xb, bits(f), new_h(y), h_of(z));
				bad++;
			}
		}
	}
	printf("%s: %lld mismatches\n", bad ? "FAIL" : "ok", bad);
	return bad != 0;
}
