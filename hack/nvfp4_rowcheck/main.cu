// main.cu: hack/nvfp4_rowcheck's driver (run.sh): old against new on the GPU.
// Random tensors (BF16 and FP16; random bits with NaNs, finite values of
// mixed magnitudes with specials, values near the rounding boundaries),
// amaxes from tiny to huge (2^120: the SR path without the 2^-14 factors),
// RN and SR, ungrouped and grouped (128-row groups, the last rows past the
// groups), random grids: every output byte compared.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <random>
#include <cuda_runtime.h>
typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned char u8;
#define DECL(n) extern "C" __global__ void n(const void *, int, int, const u32 *, u8 *, u8 *, int, int, u8 *, int, u64, const int *, int);
DECL(row_bf16_old) DECL(row_bf16_new) DECL(row_f16_old) DECL(row_f16_new)
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)
static float flt(u32 u) { float f; memcpy(&f, &u, 4); return f; }
static u32 bits(float f) { u32 u; memcpy(&u, &f, 4); return u; }
int main(int argc, char **argv) {
	const int cases = argc > 1 ? atoi(argv[1]) : 400;
	std::mt19937_64 rng(2016);
	long long bad = 0, bytes = 0;
	const unsigned short spb[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0x3F80, 0x40C0, 0x40E0, 0x3E80};
	const unsigned short sph[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x3C00, 0x4600, 0x4700, 0x3400};
	for (int c = 0; c < cases; c++) {
		const bool f16 = c & 1, sr = (c >> 1) & 1, grouped = (c % 7) == 3;
		const int rows = 1 + (int)(rng() % 700), cols = 64 * (1 + (int)(rng() % 24));
		const int srows = (rows + 127) / 128 * 128, scols = cols / 16;
		const int mode = (int)(rng() % 4);
		std::vector<unsigned short> x((size_t)rows * cols);
		const int rowexp = (int)(rng() % 40);
		for (size_t i = 0; i < x.size(); i++) {
			u32 v = (u32)rng() & 0xFFFFu;
			if (mode == 1) { // finite, exponent per row band
				if (!f16) v = (v & 0x807Fu) | ((u32)((100 + rowexp + (i / cols) % 20 + rng() % 6) & 0xFF) << 7);
				else v = (v & 0x83FFu) | ((u32)(1 + (rowexp + (i / cols) % 7 + rng() % 6) % 30) << 10);
				if (rng() % 64 == 0) v = f16 ? sph[rng() % 15] : spb[rng() % 15];
			} else if (mode == 2) { // near the E2M1 boundaries of a block scale near 1
				if (!f16) v = (v & 0x800Fu) | ((u32)(0x3E + rng() % 4) << 7) | ((u32)(rng() % 8) << 4);
				else v = (v & 0x80FFu) | ((u32)(0x1C + rng() % 4) << 9) | ((u32)(rng() % 2) << 8);
				if (rng() % 256 == 0) v = f16 ? sph[rng() % 15] : spb[rng() % 15];
			} else if (mode == 3) { // finite, no specials
				if (!f16) { if ((v & 0x7F80u) == 0x7F80u) v &= 0xBFFFu; }
				else { if ((v & 0x7C00u) == 0x7C00u) v &= 0xBFFFu; }
			}
			x[i] = (unsigned short)v;
		}
		int ng = 0;
		std::vector<int> off;
		if (grouped) {
			ng = 1 + (int)(rng() % 4);
			off.push_back(0);
			for (int g = 0; g < ng; g++) off.push_back(off.back() + 128 * (int)(rng() % 3));
			if (off.back() > rows) for (auto &o : off) o = o > rows ? rows : o; // may end early or past
		}
		std::vector<u32> am(ng > 0 ? ng : 1);
		for (auto &a : am) {
			const int k = (int)(rng() % 6);
			if (k == 0) a = bits(flt(0x3F800000u + (u32)(rng() % 0x800000u)) * 2.0f);
			else if (k == 1) a = 0x7F800000u - 1 - (u32)(rng() % 0x4000000u); // huge: 2^114 .. 2^128
			else if (k == 2) a = (u32)(rng() % 0x05000000u); // tiny
			else if (k == 3) a = 0;
			else a = (u32)(0x30000000u + rng() % 0x20000000u);
		}
		const u64 seed = rng();
		const size_t nout = (size_t)rows * cols / 2, nsc = (size_t)srows * scols;
		void *dx; u32 *dam; int *doff = 0; u8 *o[2], *s[2], *w[2];
		CK(cudaMalloc(&dx, x.size() * 2)); CK(cudaMalloc(&dam, am.size() * 4));
		CK(cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
		CK(cudaMemcpy(dam, am.data(), am.size() * 4, cudaMemcpyHostToDevice));
		if (grouped) { CK(cudaMalloc(&doff, off.size() * 4)); CK(cudaMemcpy(doff, off.data(), off.size() * 4, cudaMemcpyHostToDevice)); }
		for (int k = 0; k < 2; k++) {
			CK(cudaMalloc(&o[k], nout)); CK(cudaMalloc(&s[k], nsc)); CK(cudaMalloc(&w[k], nsc));
			CK(cudaMemset(o[k], 0xAB, nout)); CK(cudaMemset(s[k], 0xCD, nsc)); CK(cudaMemset(w[k], 0xEF, nsc));
		}
		const int grid = 1 + (int)(rng() % 300);
		auto fo = f16 ? row_f16_old : row_bf16_old;
		auto fn = f16 ? row_f16_new : row_bf16_new;
		fo<<<grid, 256>>>(dx, rows, cols, dam, o[0], s[0], srows, scols, w[0], sr, seed, doff, ng);
		fn<<<grid, 256>>>(dx, rows, cols, dam, o[1], s[1], srows, scols, w[1], sr, seed, doff, ng);
		CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
		std::vector<u8> h[2][3];
		for (int k = 0; k < 2; k++) {
			h[k][0].resize(nout); h[k][1].resize(nsc); h[k][2].resize(nsc);
			CK(cudaMemcpy(h[k][0].data(), o[k], nout, cudaMemcpyDeviceToHost));
			CK(cudaMemcpy(h[k][1].data(), s[k], nsc, cudaMemcpyDeviceToHost));
			CK(cudaMemcpy(h[k][2].data(), w[k], nsc, cudaMemcpyDeviceToHost));
		}
		long long cb = 0;
		for (int q = 0; q < 3; q++)
			for (size_t i = 0; i < h[0][q].size(); i++)
				if (h[0][q][i] != h[1][q][i]) { if (cb < 3) printf("case %d (%s sr %d g %d mode %d %dx%d amax %08x) part %d byte %zu old %02x new %02x\n", c, f16 ? "f16" : "bf16", sr, ng, mode, rows, cols, am[0], q, i, h[0][q][i], h[1][q][i]); cb++; }
		bad += cb; bytes += nout + 2 * nsc;
		cudaFree(dx); cudaFree(dam); if (doff) cudaFree(doff);
		for (int k = 0; k < 2; k++) { cudaFree(o[k]); cudaFree(s[k]); cudaFree(w[k]); }
	}
	printf("%s: %d cases, %lld bytes compared, %lld mismatches\n", bad ? "FAIL" : "ok", cases, bytes, bad);
	return bad != 0;
}
