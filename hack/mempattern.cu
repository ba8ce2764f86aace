// mempattern: the memory access patterns of kquant's tiled "both operand"
// kernels without their arithmetic, against cudaMemcpy on the same GPU
// (session 13's microbenchmark; docs/benchmarks.md has its output on an
// H200 and an H100). Every kernel reads a BF16 [rows, cols] matrix (2 bytes
// an element) and writes two 1-byte outputs (the bytes of a copy); each
// step is timed with events after a 256 MiB read sweep, as kquant's
// benchmarks are (kernels.LeadIn), the median of 22 runs.
//
// It separates a tiled kernel's grid from its arithmetic: k_macro is the
// MXFP8 macro tile's shape (kq_mxfp8_both: 128 x 128 tiles, or with MAP 1
// 32 x 512 strips), its resident blocks striding statically (PF 1: the next
// tile's loads issued first) or one block a tile (the grid is the tiles);
// k_dyn the same with the tiles after the first two rounds claimed from a
// counter (kquant's kq_sched_claim); k_trans the cast + transpose's shape
// (kq_cast_trw). CM adds the per-block amax commit (1: kquant's fenced
// pair; 2: spread over 64 slots in two levels). Occupancy is pinned with
// dynamic shared memory (the "N/SM" in each line; "0/SM": not pinned).
//
// Build and run on a GPU machine (no Go needed):
//
//	nvcc -std=c++17 -O3 -arch=sm_90 -o /tmp/mempattern hack/mempattern.cu && /tmp/mempattern
//
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

typedef unsigned int u32;
typedef unsigned long long u64;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void __launch_bounds__(256) sweep(const uint4 *p, long long n, u32 *sink) {
	const long long stride = (long long)gridDim.x * blockDim.x;
	uint4 acc = make_uint4(0, 0, 0, 0);
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
		uint4 a = p[i];
		acc.x ^= a.x; acc.y ^= a.y; acc.z ^= a.z; acc.w ^= a.w;
	}
	if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x12345u) *sink = 1;
}

// The per-element "work": codes = high byte (row operand) and low byte (col
// operand) of each bf16; 8 elements (one uint4) -> two uint2.
__device__ __forceinline__ void split8(uint4 v, uint2 &hi, uint2 &lo) {
	hi.x = __byte_perm(v.x, v.y, 0x7531); hi.y = __byte_perm(v.z, v.w, 0x7531);
	lo.x = __byte_perm(v.x, v.y, 0x6420); lo.y = __byte_perm(v.z, v.w, 0x6420);
}

// 1. linear stream: thread takes 8 consecutive elements, grid-stride, 4 in flight.
__global__ void __launch_bounds__(256) k_stream(const uint4 *x, long long n8, uint2 *a, uint2 *b) {
	const long long stride = (long long)gridDim.x * blockDim.x;
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	for (; i + 3 * stride < n8; i += 4 * stride) {
		uint4 v[4];
#pragma unroll
		for (int k = 0; k < 4; k++) v[k] = __ldg(x + i + k * stride);
#pragma unroll
		for (int k = 0; k < 4; k++) { uint2 h, l; split8(v[k], h, l); a[i + k * stride] = h; b[i + k * stride] = l; }
	}
	for (; i < n8; i += stride) { uint2 h, l; split8(__ldg(x + i), h, l); a[i] = h; b[i] = l; }
}

// 2. macro tile 128x128 as kq_mxfp8_both: warp w the 32x64 piece (band w/2,
// half w%2), lane (rq = lane/8, cg = lane%8) rows rq + 4i (i < 8), columns
// 8cg..; all 8 loads then 8 pairs of 8-byte stores. Persistent (grid = nb
// blocks/SM), prefetching the next tile into registers when PF.
// MAP 0: 128x128 macro tiles (warp: band w/2, half w%2); MAP 1: 32x512
// strips (warp w: columns 64w..). CM: the per-block amax commit (0 none, 1
// kquant's fenced same-address pair, 2 spread over 64 slots + 2 levels).
__device__ u32 g_acc[1024], g_tk[1024];
__device__ __forceinline__ void commit(int cm, u32 v) {
	if (cm == 0 || threadIdx.x != 0) return;
	const u32 nb = gridDim.x;
	if (cm == 1) {
		atomicMax(&g_acc[0], v);
		__threadfence();
		u32 t = atomicAdd(&g_tk[0], 1u);
		if (t == nb - 1) { __threadfence(); g_acc[1] = atomicExch(&g_acc[0], 0u); atomicExch(&g_tk[0], 0u); }
	} else {
		const u32 sl = blockIdx.x & 63u;
		atomicMax(&g_acc[64 + sl], v);
		__threadfence();
		const u32 per = nb / 64 + (sl < nb % 64 ? 1u : 0u);
		u32 t = atomicAdd(&g_tk[64 + sl], 1u);
		if (t != per - 1) return;
		__threadfence();
		atomicMax(&g_acc[0], atomicExch(&g_acc[64 + sl], 0u));
		g_tk[64 + sl] = 0u;
		__threadfence();
		const u32 nsl = nb < 64 ? nb : 64;
		u32 t2 = atomicAdd(&g_tk[0], 1u);
		if (t2 == nsl - 1) { __threadfence(); g_acc[1] = atomicExch(&g_acc[0], 0u); atomicExch(&g_tk[0], 0u); }
	}
}
// Place: the tiles of k_macro and k_dyn (MAP 0: 128 x 128, warp w the 32 x
// 64 piece of band w / 2, half w % 2; MAP 1: 32 x 512 strips, warp w
// columns 64w..) and base(m), the lane's first 16-byte word of tile m (lane
// (rq, cg) = (lane / 8, lane % 8) takes rows rq + 4i, columns 8cg..8cg + 7).
template <int MAP>
struct Place {
	int cols, nmc, r0, c0;
	long long nt;
	static constexpr int TR = MAP ? 32 : 128, TC = MAP ? 512 : 128;
	__device__ Place(int rows, int cols_) : cols(cols_), nmc(cols_ / TC) {
		const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
		r0 = 32 * (MAP ? 0 : warp >> 1) + (lane >> 3);
		c0 = 64 * (MAP ? warp : warp & 1) + 8 * (lane & 7);
		nt = (long long)nmc * (rows / TR);
	}
	__device__ long long base(long long m) const {
		const int R = (int)(m / nmc), C = (int)(m % nmc);
		return ((long long)(TR * R + r0) * cols + TC * C + c0) / 8;
	}
};
template <int PF, int MAP = 0, int CM = 0>
__global__ void __launch_bounds__(256, 2) k_macro(const uint4 *x, int rows, int cols, uint2 *a, uint2 *b) {
	const Place<MAP> pl(rows, cols);
	const long long nt = pl.nt, c8 = cols / 8;
	auto base = [&](long long m) { return pl.base(m); };
	u32 acc = 0;
	uint4 nx[8];
	long long m = blockIdx.x;
	if (PF && m < nt) {
		const long long p = base(m);
#pragma unroll
		for (int i = 0; i < 8; i++) nx[i] = __ldg(x + p + i * 4 * c8);
	}
	for (; m < nt; m += gridDim.x) {
		const long long p = base(m);
		uint4 cur[8];
		if (PF) {
#pragma unroll
			for (int i = 0; i < 8; i++) cur[i] = nx[i];
			if (m + gridDim.x < nt) {
				const long long pn = base(m + gridDim.x);
#pragma unroll
				for (int i = 0; i < 8; i++) nx[i] = __ldg(x + pn + i * 4 * c8);
			}
		} else {
#pragma unroll
			for (int i = 0; i < 8; i++) cur[i] = __ldg(x + p + i * 4 * c8);
		}
#pragma unroll
		for (int i = 0; i < 8; i++) { uint2 h, l; split8(cur[i], h, l); a[p + i * 4 * c8] = h; b[p + i * 4 * c8] = l; acc ^= h.x; }
	}
	if (CM) { __syncthreads(); commit(CM, acc & 0x7f); }
	if (acc == 0x1234567) a[0] = make_uint2(acc, 0);
}


__device__ unsigned long long g_ctr[4];
__global__ void zero_ctr() { g_ctr[0] = g_ctr[1] = g_ctr[2] = g_ctr[3] = 0; g_acc[0] = g_acc[1] = 0; g_tk[0] = 0; for (int i = 64; i < 128; i++) g_acc[i] = g_tk[i] = 0; }
// Persistent macro/strip kernel whose tiles come from an atomic counter
// (the window of tiles in flight stays contiguous), next tile prefetched.
template <int MAP, int CM, int NB>
__global__ void __launch_bounds__(256, NB) k_dyn(const uint4 *x, int rows, int cols, uint2 *a, uint2 *b) {
	__shared__ long long s_n[2];
	const Place<MAP> pl(rows, cols);
	const long long nt = pl.nt, c8 = cols / 8;
	auto base = [&](long long m) { return pl.base(m); };
	u32 acc = 0;
	uint4 nx[8];
	long long cur = blockIdx.x, nxt = blockIdx.x + gridDim.x;
	if (cur < nt) {
		const long long p = base(cur);
#pragma unroll
		for (int i = 0; i < 8; i++) nx[i] = __ldg(x + p + i * 4 * c8);
	}
	int sb = 0;
	while (cur < nt) {
		if (threadIdx.x == 0) s_n[sb] = 2LL * gridDim.x + (long long)atomicAdd(&g_ctr[0], 1ULL);
		uint4 c[8];
#pragma unroll
		for (int i = 0; i < 8; i++) c[i] = nx[i];
		if (nxt < nt) {
			const long long pn = base(nxt);
#pragma unroll
			for (int i = 0; i < 8; i++) nx[i] = __ldg(x + pn + i * 4 * c8);
		}
		const long long p = base(cur);
#pragma unroll
		for (int i = 0; i < 8; i++) { uint2 h, l; split8(c[i], h, l); a[p + i * 4 * c8] = h; b[p + i * 4 * c8] = l; acc ^= h.x; }
		__syncthreads();
		cur = nxt;
		nxt = s_n[sb];
		sb ^= 1;
	}
	if (CM) { __syncthreads(); commit(CM, acc & 0x7f); }
	if (acc == 0x1234567) a[0] = make_uint2(acc, 0);
}

// 5. cast + transpose shape (kq_cast_trw without the arithmetic): 128x128
// tile, thread (rg, cg) loads its 8x8 patch (8 16-byte loads), writes 8 bytes
// a row to a (row-major codes), and the transposed codes via shared memory
// as 16-byte runs to b [cols, rows]. One block a tile, 4 blocks/SM.
template <int CM = 0>
__global__ void __launch_bounds__(256, 4) k_trans(const uint4 *x, int rows, int cols, uint2 *a, unsigned char *b) {
	__shared__ u32 tile[32 * 129];
	const int ntc = cols / 128;
	const long long nt = (long long)ntc * (rows / 128);
	u32 acc = 0;
	for (long long m = blockIdx.x; m < nt; m += gridDim.x) {
	__syncthreads();
	const int r0 = (int)(m / ntc) * 128, c0 = (int)(m % ntc) * 128;
	const int tid = threadIdx.x, cg = tid & 15, rg = tid >> 4;
	const int r = r0 + 8 * rg, c = c0 + 8 * cg;
	uint4 v[8];
#pragma unroll
	for (int j = 0; j < 8; j++) v[j] = __ldg(x + ((long long)(r + j) * cols + c) / 8);
	u32 w[8][2];
#pragma unroll
	for (int j = 0; j < 8; j++) {
		uint2 h, l; split8(v[j], h, l);
		a[((long long)(r + j) * cols + c) / 8] = h;
		w[j][0] = l.x; w[j][1] = l.y;
	}
#pragma unroll
	for (int hr = 0; hr < 2; hr++) {
		u32 *t = tile + (2 * rg + hr) * 129 + 8 * cg;
#pragma unroll
		for (int h = 0; h < 2; h++) {
			u32 a0 = __byte_perm(w[4 * hr][h], w[4 * hr + 1][h], 0x5140), b0 = __byte_perm(w[4 * hr + 2][h], w[4 * hr + 3][h], 0x5140);
			u32 a1 = __byte_perm(w[4 * hr][h], w[4 * hr + 1][h], 0x7362), b1 = __byte_perm(w[4 * hr + 2][h], w[4 * hr + 3][h], 0x7362);
			t[4 * h + 0] = __byte_perm(a0, b0, 0x5410);
			t[4 * h + 1] = __byte_perm(a0, b0, 0x7632);
			t[4 * h + 2] = __byte_perm(a1, b1, 0x5410);
			t[4 * h + 3] = __byte_perm(a1, b1, 0x7632);
		}
	}
	__syncthreads();
	const int q = tid & 7;
	const int rr = r0 + 16 * q;
#pragma unroll
	for (int h = 0; h < 4; h++) {
		const int tc = (tid + 256 * h) >> 3;
		const u32 *sp = tile + 4 * q * 129 + tc;
		*reinterpret_cast<uint4 *>(b + (long long)(c0 + tc) * rows + rr) = make_uint4(sp[0], sp[129], sp[258], sp[387]);
	}
	acc ^= w[0][0];
	}
	if (CM) { __syncthreads(); commit(CM, acc & 0x7f); }
}

int main(int argc, char **argv) {
	int dev = 0;
	CK(cudaSetDevice(dev));
	cudaDeviceProp pr;
	CK(cudaGetDeviceProperties(&pr, dev));
	const int sms = pr.multiProcessorCount;
	printf("# %s, %d SMs\n", pr.name, sms);
	const long long sweepN = 256LL << 20;
	uint4 *sw; u32 *sink;
	CK(cudaMalloc(&sw, sweepN)); CK(cudaMemset(sw, 0, sweepN)); CK(cudaMalloc(&sink, 4));
	int shapes[][2] = {{8192, 8192}, {16384, 16384}};
	for (auto &sh : shapes) {
		const int rows = sh[0], cols = sh[1];
		const long long n = (long long)rows * cols;
		uint4 *x; uint2 *a, *b; void *cpy;
		CK(cudaMalloc(&x, 2 * n)); CK(cudaMalloc(&a, n)); CK(cudaMalloc(&b, n)); CK(cudaMalloc(&cpy, 2 * n));
		CK(cudaMemset(x, 0x3c, 2 * n));
		cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
		auto timeit = [&](const char *name, auto launch) {
			std::vector<float> ts;
			for (int it = 0; it < 25; it++) {
				zero_ctr<<<1, 1>>>();
				sweep<<<sms * 8, 256>>>(sw, sweepN / 16, sink);
				CK(cudaEventRecord(e0));
				launch();
				CK(cudaEventRecord(e1));
				CK(cudaEventSynchronize(e1));
				CK(cudaGetLastError());
				float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
				if (it >= 3) ts.push_back(ms * 1000.0f);
			}
			std::sort(ts.begin(), ts.end());
			return ts[ts.size() / 2];
		};
		const float tc = timeit("memcpy", [&] { CK(cudaMemcpyAsync(cpy, x, 2 * n, cudaMemcpyDeviceToDevice)); });
		printf("%dx%d memcpy %.1f us (%.2f TB/s)\n", rows, cols, tc, 4.0 * n / tc / 1e6);
		auto rep = [&](const char *name, float t) { printf("%dx%d %-28s %8.1f us  %.3f of memcpy\n", rows, cols, name, t, tc / t); };
		const long long n8 = n / 8;
		rep("stream g=sms*4", timeit("", [&] { k_stream<<<sms * 4, 256>>>(x, n8, a, b); }));
		const long long nt = (long long)(rows / 128) * (cols / 128);
		// occupancy forced with dynamic shared memory: 2/SM ~ 100 KiB, 3/SM ~ 70 KiB, 4/SM ~ 52 KiB
		auto occ = [](int k) { return k == 2 ? 100 << 10 : k == 3 ? 70 << 10 : k == 4 ? 50 << 10 : 0; };
#define MAC(PF, MAP, CM, BPS, ONE)                                                                                       \
	{                                                                                                                   \
		auto k = k_macro<PF, MAP, CM>;                                                                                  \
		CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, occ(BPS)));                            \
		const long long g = ONE ? nt : (long long)sms * BPS;                                                            \
		rep("macro pf" #PF " map" #MAP " cm" #CM " " #BPS "/SM one" #ONE, timeit("", [&] { k<<<g, 256, occ(BPS)>>>(x, rows, cols, a, b); })); \
	}
		MAC(1, 0, 0, 2, 0) MAC(1, 0, 1, 2, 0) MAC(0, 0, 0, 2, 1) MAC(0, 0, 1, 2, 1) MAC(0, 0, 0, 3, 1) MAC(0, 0, 1, 3, 1) MAC(0, 0, 1, 4, 1)
#define DYN(MAP, CM, NB)                                                                                                 \
	{                                                                                                                   \
		auto k = k_dyn<MAP, CM, NB>;                                                                                    \
		CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, occ(NB)));                             \
		rep("dyn map" #MAP " cm" #CM " " #NB "/SM", timeit("", [&] { k<<<sms * NB, 256, occ(NB)>>>(x, rows, cols, a, b); })); \
	}
		DYN(0, 0, 2) DYN(0, 1, 2) DYN(1, 1, 2) DYN(0, 1, 3) DYN(1, 1, 3) DYN(0, 1, 4) DYN(1, 1, 4)
#define TRN(CM, BPS, ONE)                                                                                                \
	{                                                                                                                   \
		auto k = k_trans<CM>;                                                                                           \
		CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, BPS == 4 ? 40 << 10 : 0));   \
		const long long g = ONE ? nt : (long long)sms * BPS;                                                            \
		rep("trans cm" #CM " " #BPS "/SM one" #ONE, timeit("", [&] { k<<<g, 256, BPS == 4 ? 40 << 10 : 0>>>(x, rows, cols, a, (unsigned char *)b); })); \
	}
		TRN(0, 0, 1) TRN(0, 4, 1) TRN(0, 4, 0) TRN(1, 4, 0) TRN(1, 4, 1) TRN(2, 4, 1) TRN(1, 0, 1) TRN(2, 0, 1)
		CK(cudaFree(x)); CK(cudaFree(a)); CK(cudaFree(b)); CK(cudaFree(cpy));
	}
	return 0;
}
