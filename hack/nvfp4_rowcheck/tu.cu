// tu.cu: one side (old or new kernels/, by NS) of hack/nvfp4_rowcheck: the
// rowwise fast path (kq_nvf4_row_fast) as kq_nvf4_row_* dispatches it.
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
namespace CAT(ns_, NS) {
#include "pre.cuh"
}
using namespace CAT(ns_, NS);
template <typename T>
__device__ void go(const T *x, int rows, int cols, const u32 *amax, u8 *out, u8 *scales, int srows, int scols, u8 *swz, int sr,
		u64 seed, const int *offsets, int ngroups) {
	if (offsets != 0) {
		if (sr) kq_nvf4_row_fast<T, true, true>(x, rows, cols, amax, out, scales, srows, scols, swz, seed, offsets, ngroups);
		else kq_nvf4_row_fast<T, false, true>(x, rows, cols, amax, out, scales, srows, scols, swz, seed, offsets, ngroups);
	} else if (sr) {
		kq_nvf4_row_fast<T, true, false>(x, rows, cols, amax, out, scales, srows, scols, swz, seed, offsets, ngroups);
	} else {
		kq_nvf4_row_fast<T, false, false>(x, rows, cols, amax, out, scales, srows, scols, swz, seed, offsets, ngroups);
	}
}
extern "C" __global__ void __launch_bounds__(256, 3) CAT(row_bf16_, NS)(const void *x, int rows, int cols, const u32 *amax, u8 *out,
		u8 *scales, int srows, int scols, u8 *swz, int sr, u64 seed, const int *offsets, int ngroups) {
	go<kq_bf16>((const kq_bf16 *)x, rows, cols, amax, out, scales, srows, scols, swz, sr, seed, offsets, ngroups);
}
extern "C" __global__ void __launch_bounds__(256, 3) CAT(row_f16_, NS)(const void *x, int rows, int cols, const u32 *amax, u8 *out,
		u8 *scales, int srows, int scols, u8 *swz, int sr, u64 seed, const int *offsets, int ngroups) {
	go<kq_f16>((const kq_f16 *)x, rows, cols, amax, out, scales, srows, scols, swz, sr, seed, offsets, ngroups);
}
