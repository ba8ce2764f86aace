// main.cu: hack/nvfp4_colcheck's driver (run.sh): old against new on the GPU.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <random>
#include <cuda_runtime.h>
typedef unsigned int u32;
typedef unsigned long long u64;
extern "C" __global__ void srd_old(u32, u32 *);
extern "C" __global__ void srd_new(u32, u32 *);
extern "C" __global__ void q16_old(const u32 *, const float *, const uint4 *, int, u64 *);
extern "C" __global__ void q16_new(const u32 *, const float *, const uint4 *, int, u64 *);
extern "C" __global__ void key_old(const u32 *, int, u32 *);
extern "C" __global__ void key_new(const u32 *, int, u32 *);
extern "C" __global__ void body_old(const unsigned short *, const u32 *, u64, int, u64 *, u32 *);
extern "C" __global__ void body_new(const unsigned short *, const u32 *, u64, int, u64 *, u32 *);
extern "C" __global__ void bodyrn_old(const unsigned short *, const u32 *, u64, int, u64 *, u32 *);
extern "C" __global__ void bodyrn_new(const unsigned short *, const u32 *, u64, int, u64 *, u32 *);
extern "C" __global__ void bodyref_new(const unsigned short *, const u32 *, u64, int, u64 *, u32 *);
extern "C" __global__ void bodyrnref_new(const unsigned short *, const u32 *, u64, int, u64 *, u32 *);
typedef void (*bodyk)(const unsigned short *, const u32 *, u64, int, u64 *, u32 *);
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)
static float flt(u32 u) { float f; memcpy(&f, &u, 4); return f; }
int main() {
	const u32 CH = 1u << 28;
	u32 *a, *b;
	CK(cudaMalloc(&a, CH * 4ull)); CK(cudaMalloc(&b, CH * 4ull));
	std::vector<u32> ha(CH), hb(CH);
	long long bad = 0;
	for (u64 base = 0; base < (1ull << 32); base += CH) {
		srd_old<<<CH / 256, 256>>>((u32)base, a);
		srd_new<<<CH / 256, 256>>>((u32)base, b);
		CK(cudaMemcpy(ha.data(), a, CH * 4ull, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(hb.data(), b, CH * 4ull, cudaMemcpyDeviceToHost));
		for (u32 i = 0; i < CH; i++) {
			const u32 y = (u32)base + i;
			if ((y & 0x7FFFFFFFu) > 0x7F800000u) continue;
			if (ha[i] != hb[i]) { if (bad < 10) printf("y %08x old %04x new %04x\n", y, ha[i], hb[i]); bad++; }
		}
	}
	printf("sr code over all float32: %lld mismatches\n", bad);
	// Random blocks: bf16 words from a mix of specials and random bits,
	// factors of random tensor scales and codes, random Philox words.
	const int N = 1 << 22;
	std::mt19937_64 rng(12345);
	std::vector<u32> P(8 * (size_t)N);
	std::vector<float> F(N);
	std::vector<uint4> W(N);
	const unsigned short sp[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x3F80, 0x40C0, 0x40E0, 0x3E80, 0x3F40};
	for (int i = 0; i < N; i++) {
		const int mode = (int)(rng() % 4);
		for (int k = 0; k < 8; k++) {
			u32 w = 0;
			for (int h = 0; h < 2; h++) {
				u32 e = (u32)rng() & 0xFFFFu;
				if (mode == 1 && rng() % 4 == 0) e = sp[rng() % (sizeof(sp) / 2)];
				if (mode == 2) e = (e & 0x80FFu) | ((u32)(0x3C + rng() % 12) << 8); // |x| near 2^-7..2^4
				if ((e & 0x7FFFu) > 0x7F80u) e &= 0xFF80u; // no NaN (those blocks take the reference path)
				w |= e << (16 * h);
			}
			P[8 * i + k] = w;
		}
		// f: |x| * f lands around the E2M1 range for mode 2; any positive float otherwise.
		u32 fb = (u32)rng() & 0x7FFFFFFFu;
		if (fb >= 0x7F800000u) fb = 0x7F7FFFFFu;
		if (mode == 2) fb = (fb & 0x007FFFFFu) | ((u32)(120 + rng() % 16) << 23);
		if (fb == 0) fb = 1;
		F[i] = flt(fb);
		W[i] = make_uint4((u32)rng(), (u32)rng(), (u32)rng(), (u32)rng());
	}
	u32 *dP; float *dF; uint4 *dW; u64 *o1, *o2;
	CK(cudaMalloc(&dP, P.size() * 4)); CK(cudaMalloc(&dF, N * 4)); CK(cudaMalloc(&dW, N * 16)); CK(cudaMalloc(&o1, N * 24)); CK(cudaMalloc(&o2, N * 24));
	CK(cudaMemcpy(dP, P.data(), P.size() * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dF, F.data(), N * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dW, W.data(), N * 16, cudaMemcpyHostToDevice));
	q16_old<<<N / 256, 256>>>(dP, dF, dW, N, o1);
	q16_new<<<N / 256, 256>>>(dP, dF, dW, N, o2);
	std::vector<u64> r1(3 * (size_t)N), r2(3 * (size_t)N);
	CK(cudaMemcpy(r1.data(), o1, N * 24, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(r2.data(), o2, N * 24, cudaMemcpyDeviceToHost));
	long long bq[3] = {0, 0, 0};
	for (int i = 0; i < 3 * N; i++) if (r1[i] != r2[i]) { if (bq[i % 3] < 5) printf("block %d %d: old %016llx new %016llx\n", i / 3, i % 3, r1[i], r2[i]); bq[i % 3]++; }
	printf("kq_q16r over %d blocks: sr %lld, rn %lld, sr with factor 2^-14 %lld mismatches\n", N, bq[0], bq[1], bq[2]);
	// Keys, NaN blocks included (some NaN words kept).
	for (int i = 0; i < N; i++) if (rng() % 8 == 0) P[8 * i + rng() % 8] |= 0x7FC00000u ^ ((u32)(rng() % 2) << 31);
	CK(cudaMemcpy(dP, P.data(), P.size() * 4, cudaMemcpyHostToDevice));
	u32 *k1, *k2;
	CK(cudaMalloc(&k1, N * 4)); CK(cudaMalloc(&k2, N * 4));
	key_old<<<N / 256, 256>>>(dP, N, k1);
	key_new<<<N / 256, 256>>>(dP, N, k2);
	std::vector<u32> hk1(N), hk2(N);
	CK(cudaMemcpy(hk1.data(), k1, N * 4, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hk2.data(), k2, N * 4, cudaMemcpyDeviceToHost));
	long long bk = 0, nk = 0;
	for (int i = 0; i < N; i++) {
		const bool n1 = hk1[i] > 0x7F800000u, n2 = hk2[i] > 0x7F800000u;
		nk += n1;
		if (n1 != n2 || (!n1 && hk1[i] != hk2[i])) { if (bk < 5) printf("key %d: old %08x new %08x\n", i, hk1[i], hk2[i]); bk++; }
	}
	printf("kq_bkey16 over %d blocks (%lld NaN): %lld mismatches\n", N, nk, bk);
	// Whole tile bodies: random tiles, specials, NaNs, amaxes from tiny to 2^127.
	const int T = 1 << 14;
	std::vector<unsigned short> X((size_t)T * 8192);
	std::vector<u32> AM(T);
	for (int t = 0; t < T; t++) {
		const int mode = t % 8;
		for (int i = 0; i < 8192; i++) {
			u32 e;
			const double g = std::normal_distribution<double>(0.0, 1.0)(rng);
			float v = (float)(mode == 1 ? g * g * g * g * g : g);
			if (mode == 2) v = (float)(g * 1e30);
			if (mode == 3) v = (float)(g * 1e-38);
			u32 b; memcpy(&b, &v, 4);
			e = b >> 16;
			if (mode == 4 && rng() % 64 == 0) e = sp[rng() % (sizeof(sp) / 2)];
			if (mode == 5 && rng() % 2048 == 0) e = 0x7FC0u | ((u32)(rng() % 2) << 15);
			if (mode == 6) e = (u32)rng() & 0xFFFFu;
			X[(size_t)t * 8192 + i] = (unsigned short)e;
		}
		const u32 ams[] = {0x00000000u, 0x3F800000u, 0x7F7FFFFFu, 0x7B000000u, 0x7A000000u, 0x00800000u, 0x00000001u, 0x4B000000u, 0x7F800000u, 0x7FC00000u};
		AM[t] = (t % 3 == 0) ? ams[rng() % 10] : ((u32)rng() & 0x7FFFFFFFu);
		if (t % 3 == 1) AM[t] = (AM[t] & 0x007FFFFFu) | ((u32)(100 + rng() % 60) << 23);
	}
	unsigned short *dX; u32 *dA; u64 *s1, *s2; u32 *d1, *d2;
	CK(cudaMalloc(&dX, X.size() * 2)); CK(cudaMalloc(&dA, T * 4));
	CK(cudaMalloc(&s1, (size_t)T * 512 * 8)); CK(cudaMalloc(&s2, (size_t)T * 512 * 8));
	CK(cudaMalloc(&d1, (size_t)T * 128 * 4)); CK(cudaMalloc(&d2, (size_t)T * 128 * 4));
	CK(cudaMemcpy(dX, X.data(), X.size() * 2, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dA, AM.data(), T * 4, cudaMemcpyHostToDevice));
	// Pairs of tile bodies: old and new SR, old and new RN (the input
	// role), and the new fast path against the reference path
	// (kq_col_nan for every block) for SR and RN.
	const bodyk ka[4] = {body_old, bodyrn_old, bodyref_new, bodyrnref_new}, kb[4] = {body_new, bodyrn_new, body_new, bodyrn_new};
	const char *kn[4] = {"sr old/new", "rn old/new", "sr new/ref", "rn new/ref"};
	long long bb = 0, bp[4] = {0, 0, 0, 0};
	for (int rep = 0; rep < 4; rep++) {
		const u64 seed = rng();
		const int rows = 64 << (rep * 3);
		for (int p = 0; p < 4; p++) {
			ka[p]<<<T, 256>>>(dX, dA, seed, rows, s1, d1);
			kb[p]<<<T, 256>>>(dX, dA, seed, rows, s2, d2);
			CK(cudaDeviceSynchronize());
			std::vector<u64> hs1((size_t)T * 512), hs2((size_t)T * 512);
			std::vector<u32> hd1((size_t)T * 128), hd2((size_t)T * 128);
			CK(cudaMemcpy(hs1.data(), s1, hs1.size() * 8, cudaMemcpyDeviceToHost));
			CK(cudaMemcpy(hs2.data(), s2, hs2.size() * 8, cudaMemcpyDeviceToHost));
			CK(cudaMemcpy(hd1.data(), d1, hd1.size() * 4, cudaMemcpyDeviceToHost));
			CK(cudaMemcpy(hd2.data(), d2, hd2.size() * 4, cudaMemcpyDeviceToHost));
			for (size_t i = 0; i < hs1.size(); i++) if (hs1[i] != hs2[i]) { if (bp[p] < 5) printf("%s: tile %zu run %zu: %016llx / %016llx\n", kn[p], i / 512, i % 512, hs1[i], hs2[i]); bp[p]++; }
			for (size_t i = 0; i < hd1.size(); i++) if (hd1[i] != hd2[i]) { if (bp[p] < 5) printf("%s: tile %zu scales %zu: %08x / %08x\n", kn[p], i / 128, i % 128, hd1[i], hd2[i]); bp[p]++; }
		}
	}
	for (int p = 0; p < 4; p++) { printf("tile bodies %s: %lld mismatches\n", kn[p], bp[p]); bb += bp[p]; }
	printf("tile bodies: %d tiles x 4 seeds/shapes, 4 pairs: %lld mismatches\n", T, bb);
	return (bad || bq[0] || bq[1] || bq[2] || bk || bb) ? 1 : 0;
}
