// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// kquant QuantizedLinear on the GPU: dequantize kernels for the block FP8
// operands (NVFP4's is in nvfp4.cu) and a tiled float32 GEMM
// y = x . w^T of the dequantized operands (x [M, K], w [N, K], y [M, N]).
//
// The GEMM is the accuracy check's, not a production GEMM: float32 FMAs
// in k order per output (the reference sums eight interleaved partial sums,
// so the two differ by float32 summation order only). 64x64 output tiles,
// 16-deep k slices staged in shared memory, 4x4 outputs per thread.
//
// Self-contained (no includes) so that the stamp on gemm.ptx covers
// everything it came from.

typedef unsigned char u8;
typedef unsigned int u32;

#define KQ_E4M3 0

// Exact value of an FP8 byte; NaN bytes give a quiet NaN.
static __device__ __forceinline__ float kq_fp8_val(u32 b, int fmt) {
	const u32 s = (b & 0x80u) << 24;
	if (fmt == KQ_E4M3) {
		const u32 e = (b >> 3) & 0xFu, m = b & 7u;
		if (e == 15u && m == 7u) return __uint_as_float(s | 0x7FC00000u);
		if (e == 0u) return __uint_as_float(s | __float_as_uint(__fmul_rn((float)m, 0.001953125f)));
		return __uint_as_float(s | ((e + 120u) << 23) | (m << 20));
	}
	const u32 e = (b >> 2) & 0x1Fu, m = b & 3u;
	if (e == 31u) return __uint_as_float(s | (m ? 0x7FC00000u : 0x7F800000u));
	if (e == 0u) return __uint_as_float(s | __float_as_uint(__fmul_rn((float)m, 1.52587890625e-05f)));
	return __uint_as_float(s | ((e + 112u) << 23) | (m << 21));
}

// Block FP8 dequantize of an operand as stored [rows, cols]: code value x
// scale_inv in one float32 multiply. tile2d selects the 128x128 scale entry
// (i/128, j/128); otherwise the 1x128 entry (j/128, i) (the same for the
// transposed columnwise operand).
extern "C" __global__ void __launch_bounds__(256) kq_blk_dequant(const u8 *q, int rows, int cols, const float *sinv, int scols,
		int tile2d, int fmt, float *out) {
	const long long n = (long long)rows * cols;
	for (long long it = (long long)blockIdx.x * blockDim.x + threadIdx.x; it < n; it += (long long)gridDim.x * blockDim.x) {
		const int i = (int)(it / cols), j = (int)(it % cols);
		const long long si = tile2d ? (long long)(i >> 7) * scols + (j >> 7) : (long long)(j >> 7) * scols + i;
		out[it] = __fmul_rn(kq_fp8_val(q[it], fmt), sinv[si]);
	}
}

#define KQ_TM 64
#define KQ_TK 16

extern "C" __global__ void __launch_bounds__(256) kq_sgemm_nt(const float *x, const float *w, float *y, int m, int n, int k) {
	__shared__ float xs[KQ_TK][KQ_TM + 4];
	__shared__ float ws[KQ_TK][KQ_TM + 4];
	const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
	const int i0 = blockIdx.y * KQ_TM, j0 = blockIdx.x * KQ_TM;
	float acc[4][4];
#pragma unroll
	for (int a = 0; a < 4; a++) {
#pragma unroll
		for (int b = 0; b < 4; b++) acc[a][b] = 0.0f;
	}
	for (int k0 = 0; k0 < k; k0 += KQ_TK) {
		// 64 rows x 16 k of each operand: 1024 values, 4 per thread,
		// threads along k so that a warp reads two 64-byte row pieces.
#pragma unroll
		for (int r = 0; r < 4; r++) {
			const int idx = threadIdx.x + 256 * r;
			const int row = idx >> 4, kk = idx & 15;
			const int gi = i0 + row, gj = j0 + row, gk = k0 + kk;
			xs[kk][row] = gi < m && gk < k ? x[(long long)gi * k + gk] : 0.0f;
			ws[kk][row] = gj < n && gk < k ? w[(long long)gj * k + gk] : 0.0f;
		}
		__syncthreads();
#pragma unroll
		for (int kk = 0; kk < KQ_TK; kk++) {
			float xa[4], wb[4];
#pragma unroll
			for (int a = 0; a < 4; a++) xa[a] = xs[kk][ty + 16 * a];
#pragma unroll
			for (int b = 0; b < 4; b++) wb[b] = ws[kk][tx + 16 * b];
#pragma unroll
			for (int a = 0; a < 4; a++) {
#pragma unroll
				for (int b = 0; b < 4; b++) acc[a][b] = __fmaf_rn(xa[a], wb[b], acc[a][b]);
			}
		}
		__syncthreads();
	}
#pragma unroll
	for (int a = 0; a < 4; a++) {
		const int gi = i0 + ty + 16 * a;
#pragma unroll
		for (int b = 0; b < 4; b++) {
			const int gj = j0 + tx + 16 * b;
			if (gi < m && gj < n) y[(long long)gi * n + gj] = acc[a][b];
		}
	}
}
