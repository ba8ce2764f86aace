// tu.cu: one side (old or new kernels/, by NS and NEW) of hack/nvfp4_colcheck (run.sh).
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
namespace CAT(ns_, NS) {
#include "pre.cuh"
}
using namespace CAT(ns_, NS);
// Every float32 y from base: the SR code/fraction word of each half.
extern "C" __global__ void CAT(srd_, NS)(u32 base, u32 *out) {
	const u32 i = base + blockIdx.x * blockDim.x + threadIdx.x;
	const float y = __uint_as_float(i);
#ifdef NEW
	const u32 h = kq_sr_h2(__fmul_rn(y, 0x1p-14f), 0.0f) & 0xFFFFu;
	out[blockIdx.x * blockDim.x + threadIdx.x] = h >> 1;
#else
	out[blockIdx.x * blockDim.x + threadIdx.x] = kq_sr_code2(y) & 0xFFFFu;
#endif
}
// Blocks: P (8 words), factor, Philox word w: kq_q16r<true> and <false>.
extern "C" __global__ void CAT(q16_, NS)(const u32 *P, const float *f, const uint4 *w, int n, u64 *out) {
	const int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	u32 p[8];
	for (int k = 0; k < 8; k++) p[k] = P[8 * i + k];
#ifdef NEW
	// The same elements in kq_pel's order (words 2g + u: elements 4g + u,
	// 4g + u + 2), the input words being in element order.
	u32 e[16];
	for (int t = 0; t < 16; t++) e[t] = (p[t >> 1] >> (16 * (t & 1))) & 0xFFFFu;
	for (int k = 0; k < 8; k++) {
		const int t = 4 * (k >> 1) + (k & 1);
		p[k] = e[t] | (e[t + 2] << 16);
	}
#endif
	out[3 * i] = kq_q16r<true>(p, f[i], w[i]);
	out[3 * i + 1] = kq_q16r<false>(p, f[i], w[i]);
#ifdef NEW
	out[3 * i + 2] = f[i] >= 0x1p-112f ? kq_q16r<true, true, true>(p, __fmul_rn(f[i], 0x1p-14f), w[i]) : 0ull;
#else
	out[3 * i + 2] = f[i] >= 0x1p-112f ? kq_q16r<true>(p, f[i], w[i]) : 0ull;
#endif
}
// Key of eight packed words (old: masks and max.NaN; new: xorsign).
extern "C" __global__ void CAT(key_, NS)(const u32 *P, int n, u32 *out) {
	const int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	u32 p[8];
	for (int k = 0; k < 8; k++) p[k] = P[8 * i + k];
	out[i] = kq_bkey16(p);
}
// One tile body of the RHT columnwise path (TE signs; SR, or RN: the
// input role) per block: tile t of x (64 x 128 BF16 from x + t * 8192),
// amax bits am[t], seed, group, k0 = 128 * (t & 1), m0 = 64 * (t >> 1)
// in a tensor of rows x 256; out: stage (128 x 4 u64) and dstage (128
// u32) per tile. REF (new API only): every block by kq_col_nan, the
// reference path (kq_block16_ref) from the staged words, instead of the
// fast path: the contract's bits, independently of kq_q16r and kq_bkey16.
template <bool SR, bool REF>
__device__ void body(const u16 *x, const u32 *am, u64 seed, int rows, u64 *ost, u32 *ods) {
	__shared__ __align__(16) u32 tile[KQ_TILE_WORDS(kq_bf16)];
	__shared__ __align__(16) u64 stage[128][4];
	__shared__ u32 dstage[128];
	__shared__ float tab[128];
#ifdef NEW
	__shared__ __align__(16) u32 rk[KQ_RK];
#else
	__shared__ __align__(16) u32 rk[20];
#endif
	const int t = blockIdx.x;
	const u32 group = (u32)t * 2654435761u;
	kq_load_tile((const kq_bf16 *)(x + (size_t)t * 8192), 128, 0, 0, tile);
	const kq_tscale ts = kq_tscale_of(am + t);
	float rc[16];
	kq_rhtf<KQ_TE_SIGNS>(0, rc);
	const int k0 = 128 * (t & 1), m0 = 64 * ((t >> 1) % (rows / 64));
#ifdef NEW
	// As kq_nvf4_col_fast: the factors times 2^-14 for SR where exact.
	const bool f14 = SR && kq_tab14(ts.sinv);
	if (f14) kq_fill_tab14(tab, ts.sinv);
	else kq_fill_tab(tab, ts.sinv);
	kq_philox_keys(seed, group, ts, rk);
	__syncthreads();
	if (REF) {
		const int j = threadIdx.x & 63, run = threadIdx.x >> 6;
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const int c = 2 * j + h, k = k0 + c;
			uint4 r = make_uint4(0u, 0u, 0u, 0u);
			const u64 b = (u64)(u32)k * (u32)(rows >> 4) + (u32)((m0 >> 4) + run);
			if (k < 256) r = h ? kq_col_nan<kq_bf16, SR, KQ_TE_SIGNS, 1>(tile, 0, b, rk) : kq_col_nan<kq_bf16, SR, KQ_TE_SIGNS, 0>(tile, 0, b, rk);
			stage[c][run] = (u64)r.x | ((u64)r.y << 32);
			reinterpret_cast<u8 *>(dstage)[c * 4 + run] = (u8)r.z;
		}
	} else if (f14) {
		kq_nvf4_col_body<kq_bf16, true, SR, SR, KQ_TE_SIGNS>((const kq_bf16 *)0, rows, 256, tile, tab, ts, stage, dstage, k0, m0, 0, seed, group, rc, rk);
	} else {
		kq_nvf4_col_body<kq_bf16, true, SR, false, KQ_TE_SIGNS>((const kq_bf16 *)0, rows, 256, tile, tab, ts, stage, dstage, k0, m0, 0, seed, group, rc, rk);
	}
#else
	kq_fill_tab(tab, ts.sinv);
	kq_philox_keys(seed, rk);
	__syncthreads();
	kq_nvf4_col_body<kq_bf16, true, SR>((const kq_bf16 *)0, rows, 256, tile, tab, ts, stage, dstage, k0, m0, 0, seed, group, rc, rk);
#endif
	__syncthreads();
	for (int i = threadIdx.x; i < 512; i += 256) ost[(size_t)t * 512 + i] = stage[i >> 2][i & 3];
	if (threadIdx.x < 128) ods[(size_t)t * 128 + threadIdx.x] = dstage[threadIdx.x];
}
extern "C" __global__ void __launch_bounds__(256) CAT(body_, NS)(const u16 *x, const u32 *am, u64 seed, int rows, u64 *ost, u32 *ods) {
	body<true, false>(x, am, seed, rows, ost, ods);
}
extern "C" __global__ void __launch_bounds__(256) CAT(bodyrn_, NS)(const u16 *x, const u32 *am, u64 seed, int rows, u64 *ost, u32 *ods) {
	body<false, false>(x, am, seed, rows, ost, ods);
}
#ifdef NEW
extern "C" __global__ void __launch_bounds__(256) CAT(bodyref_, NS)(const u16 *x, const u32 *am, u64 seed, int rows, u64 *ost, u32 *ods) {
	body<true, true>(x, am, seed, rows, ost, ods);
}
extern "C" __global__ void __launch_bounds__(256) CAT(bodyrnref_, NS)(const u16 *x, const u32 *am, u64 seed, int rows, u64 *ost, u32 *ods) {
	body<false, true>(x, am, seed, rows, ost, ods);
}
#endif
