// kquant quantize kernels: amax, per-tensor scales (current and delayed
// scaling), per-tensor FP8 cast (rowwise, and fused cast+transpose for the
// columnwise operand), MXFP8 rowwise and columnwise (TE and OCP scale
// rounding), and the matching dequantize kernels.
//
// The numbers these kernels produce are fixed by
// docs/quantization-formats.md and must equal the pure-Go reference
// (internal/quant) bit for bit. Hence the build flags in hack/gen-kernels.sh
// keep IEEE float32 semantics (no fast math, no flush to zero, correctly
// rounded division, no FMA contraction), and every arithmetic step that the
// contract names is written with an explicitly rounded intrinsic.
//
// Graph safety: every kernel reads its scale from device memory and writes
// its results there; reductions finish in the last block to arrive (a ticket
// counter) and reset their own accumulators, so a step is a fixed sequence
// of launches that can be captured once and replayed.
//
// The shared prelude (types, formats, state words) is kq_common.cuh, the
// E8M0 rules kq_mx.cuh; the MXFP8 bodies (quantize_mxfp8.cuh) and the
// grouped kernels (quantize_grouped.cuh, quantize_grouped_delayed.cuh) are
// parts of this file in headers of their own. The hash stamped on
// quantize.ptx covers every kernels/*.cuh.

#include "kq_common.cuh"

// Four consecutive float32 elements from a 4-element-aligned group g.
KQ_DEV void kq_load4(const float *x, long long g, float v[4]) {
	float4 q = reinterpret_cast<const float4 *>(x)[g];
	v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
}
KQ_DEV float kq_fp8_max(int fmt) { return fmt == KQ_E4M3 ? 448.0f : 57344.0f; }

// kq_cvt2 converts two floats with one rounding, round to nearest even,
// saturating (satfinite: finite overflow and +-inf become +-max, NaN becomes
// 0x7F). lo lands in the low byte: the lower-index element goes first in
// memory. PTX puts its first source operand in the upper half.
KQ_DEV u32 kq_cvt2(float lo, float hi, int fmt) { return kq_fp8x2(lo, hi, fmt == KQ_E4M3); }
KQ_DEV u32 kq_cvt1(float x, int fmt) { return kq_cvt2(x, 0.0f, fmt) & 0xFFu; }

// kq_cvt1_sw is the same conversion in integer arithmetic, written from the
// contract (kq_fp8_sw.cuh); kq_cvt_check compares it with the hardware over
// every float32 bit pattern, which pins down the contract's rules exactly.
KQ_DEV u32 kq_cvt1_sw(float x, int fmt) { return kq_fp8_sw(x, fmt == KQ_E4M3); }

// kq_fp8_decode widens an FP8 byte to float32 exactly; NaN bytes become a
// quiet NaN with the byte's sign.
KQ_DEV float kq_fp8_decode(u32 b, int fmt) {
	u32 s = (b & 0x80u) << 24;
	if (fmt == KQ_E4M3) {
		u32 e = (b >> 3) & 0xFu, m = b & 7u;
		if (e == 15u && m == 7u) return __uint_as_float(s | KQ_QNAN_BITS);
		if (e == 0u) return __uint_as_float(s | __float_as_uint(__fmul_rn((float)m, 0.001953125f)));
		return __uint_as_float(s | ((e + 120u) << 23) | (m << 20));
	}
	u32 e = (b >> 2) & 0x1Fu, m = b & 3u;
	if (e == 31u) return __uint_as_float(s | (m ? KQ_QNAN_BITS : 0x7F800000u));
	if (e == 0u) return __uint_as_float(s | __float_as_uint(__fmul_rn((float)m, 1.52587890625e-05f)));
	return __uint_as_float(s | ((e + 112u) << 23) | (m << 21));
}

// Eight consecutive elements from an 8-element-aligned group g (16-byte
// loads for 16-bit inputs, two for float32), and their conversion with one
// factor each into 8 bytes (one 8-byte store). The vectorised kernels use
// them where the shape and alignment allow; the scalar paths compute the
// same bytes.
KQ_DEV void kq_load8(const float *x, long long g, float v[8]) {
	kq_load4(x, 2 * g, v);
	kq_load4(x, 2 * g + 1, v + 4);
}
template <typename H>
KQ_DEV void kq_load8(const H *x, long long g, float v[8]) {
	kq_widen8<H>(reinterpret_cast<const uint4 *>(x)[g], v);
}
KQ_DEV void kq_zero8(float v[8]) {
#pragma unroll
	for (int k = 0; k < 8; k++) v[k] = 0.0f;
}
// An 8-element group as raw bits (one 16-byte word for 16-bit inputs, two
// for float32), so that a thread can hold several loads in flight in half
// the registers of their float32 values, and its widening to float32.
KQ_DEV void kq_ldraw8(const float *x, long long g, uint4 q[2]) {
	q[0] = reinterpret_cast<const uint4 *>(x)[2 * g];
	q[1] = reinterpret_cast<const uint4 *>(x)[2 * g + 1];
}
template <typename T>
KQ_DEV void kq_ldraw8(const T *x, long long g, uint4 q[2]) {
	q[0] = reinterpret_cast<const uint4 *>(x)[g];
	q[1] = q[0];
}
KQ_DEV void kq_unpack8(const float *, const uint4 q[2], float v[8]) {
	u32 w[8] = {q[0].x, q[0].y, q[0].z, q[0].w, q[1].x, q[1].y, q[1].z, q[1].w};
#pragma unroll
	for (int k = 0; k < 8; k++) v[k] = __uint_as_float(w[k]);
}
template <typename H>
KQ_DEV void kq_unpack8(const H *, const uint4 q[2], float v[8]) {
	kq_widen8<H>(q[0], v);
}
// Independent 8-element groups a thread loads before it uses the first, in
// the grid-stride kernels (amax, cast, MXFP8 rowwise).
#define KQ_UNROLL 4
KQ_DEV uint2 kq_cvt8(const float v[8], const float f[8], int fmt) {
	uint2 o;
	o.x = kq_cvt2(__fmul_rn(v[0], f[0]), __fmul_rn(v[1], f[1]), fmt) |
	      (kq_cvt2(__fmul_rn(v[2], f[2]), __fmul_rn(v[3], f[3]), fmt) << 16);
	o.y = kq_cvt2(__fmul_rn(v[4], f[4]), __fmul_rn(v[5], f[5]), fmt) |
	      (kq_cvt2(__fmul_rn(v[6], f[6]), __fmul_rn(v[7], f[7]), fmt) << 16);
	return o;
}

#include "kq_mx.cuh"

// ---- current scaling: amax, then the scale, in one launch -------------------

// kq_scale_from_amax is the contract's "Per-tensor scale from an amax":
// the epsilon, scale 1 for an amax of 0, inf or NaN, float32 max for an
// overflow, and the power-of-2 option.
KQ_DEV float kq_scale_from_amax(float amax, float fp8max, float eps, int pow2) {
	float a = fmaxf(amax, eps);
	float scale;
	if (a == 0.0f || !kq_finite(a)) {
		scale = 1.0f;
	} else {
		scale = __fdiv_rn(fp8max, a);
		if (!kq_finite(scale)) scale = __uint_as_float(KQ_FLT_MAX_BITS);
	}
	if (pow2) scale = __uint_as_float(__float_as_uint(scale) & 0xFF800000u);
	return scale;
}

template <typename T>
KQ_DEV void kq_amax_impl(const T *x, long long n, u32 *st, float fp8max, float eps, int pow2) {
	long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	long long nthreads = (long long)gridDim.x * blockDim.x;
	float m = 0.0f;
	// 8 elements per group: one 16-byte load for 16-bit inputs. Each thread
	// issues KQ_UNROLL independent loads before it uses the first, so that
	// enough bytes are in flight to cover the memory latency at the
	// launcher's 4 blocks per SM (one load per thread reached ~80% of copy
	// bandwidth).
	bool vec = (((u64)x) & 15u) == 0u;
	long long ngroups = vec ? n / 8 : 0;
	if constexpr (sizeof(T) == 2) {
		// 16-bit inputs: 8 raw 16-byte words in flight per thread, their
		// |x| maxima as packed pairs (kq_pmax), widened once at the end.
		constexpr int U = 8;
		const uint4 *xv = reinterpret_cast<const uint4 *>(x);
		u32 pm = 0u;
		for (long long g0 = tid; g0 < ngroups; g0 += U * nthreads) {
			uint4 q[U];
#pragma unroll
			for (int u = 0; u < U; u++) {
				long long g = g0 + u * nthreads;
				q[u] = make_uint4(0u, 0u, 0u, 0u);
				if (g < ngroups) q[u] = xv[g];
			}
#pragma unroll
			for (int u = 0; u < U; u++) {
				pm = kq_pmax(T(), pm, kq_pmax(T(), kq_pmax(T(), q[u].x & 0x7FFF7FFFu, q[u].y & 0x7FFF7FFFu),
					kq_pmax(T(), q[u].z & 0x7FFF7FFFu, q[u].w & 0x7FFF7FFFu)));
			}
		}
		m = fmaxf(0.0f, fmaxf(kq_plo(T(), pm), kq_phi(T(), pm)));
	} else {
		for (long long g0 = tid; g0 < ngroups; g0 += KQ_UNROLL * nthreads) {
			float v[KQ_UNROLL][8];
#pragma unroll
			for (int u = 0; u < KQ_UNROLL; u++) {
				long long g = g0 + u * nthreads;
				if (g < ngroups) kq_load8(x, g, v[u]);
				else kq_zero8(v[u]);
			}
#pragma unroll
			for (int u = 0; u < KQ_UNROLL; u++)
#pragma unroll
				for (int k = 0; k < 8; k++) m = fmaxf(m, fabsf(v[u][k]));
		}
	}
	for (long long i = ngroups * 8 + tid; i < n; i += nthreads) m = fmaxf(m, fabsf(kq_f32(x[i])));
	m = kq_block_max(m);
	if (threadIdx.x != 0) return;
	float amax = kq_amax_commit(m, st);
	if (amax < 0.0f) return;
	// The state keeps the raw amax (as TE's amax tensor does); the
	// epsilon only enters the scale.
	float *stf = reinterpret_cast<float *>(st);
	const float scale = kq_scale_from_amax(amax, fp8max, eps, pow2);
	stf[KQ_ST_AMAX] = amax;
	stf[KQ_ST_SCALE] = scale;
	stf[KQ_ST_SCALE_INV] = __fdiv_rn(1.0f, scale);
}

// ---- per-tensor FP8 cast ----------------------------------------------------

// Delayed scaling update (contract, "Delayed scaling") by one block of any
// shape: the new amax from the history (its maximum, or with most_recent
// entry 0), the new scale (and scale_inv, unless 0) when it is finite and
// positive, then the roll: entry i takes entry i+1, the last takes the old
// entry 0, entry 0 is zeroed; nothing at all when the amax is 0. Histories
// of up to KQ_UPD_PER entries per thread are held in registers: thread t
// reads, for each entry i = t + k*threads it will write, the entry it takes
// (i+1, or 0 for the last), so the values it reads for the maximum are the
// ones it writes back after one barrier. Longer histories roll in chunks,
// each reading entries i+1 before any thread writes. Every thread of the
// block must call it.
#define KQ_UPD_PER 4
// kq_upd_load: for a history of len <= KQ_UPD_PER * nt entries, thread
// tid's share of the roll: v[k] = entry i+1, the entry that entry i = tid +
// k*nt takes (the last entry takes entry 0, which kq_upd_finish supplies).
KQ_DEV void kq_upd_load(const float *history, int len, int tid, int nt, float (&v)[KQ_UPD_PER]) {
#pragma unroll
	for (int k = 0; k < KQ_UPD_PER; k++) {
		const int i = tid + k * nt;
		v[k] = i + 1 < len ? history[i + 1] : 0.0f;
	}
}
// kq_upd_finish is the update from kq_upd_load's values and entry 0's
// value h0 (the same in every thread): the maximum of them all (or h0),
// the scale, and the roll written back after one barrier.
KQ_DEV void kq_upd_finish(float *history, int len, float (&v)[KQ_UPD_PER], float h0, float *scale, float *scale_inv,
		float fp8max, int margin, int most_recent, int tid, int nt) {
	__shared__ float s_wmax[32];
	float m = 0.0f;
#pragma unroll
	for (int k = 0; k < KQ_UPD_PER; k++) {
		const int i = tid + k * nt;
		if (i < len) {
			if (i + 1 >= len) v[k] = h0;
			m = fmaxf(m, v[k]);
		}
	}
	m = kq_warp_max(m);
	if ((tid & 31) == 0) s_wmax[tid >> 5] = m;
	__syncthreads();
	float amax = h0;
	if (!most_recent) {
		amax = 0.0f;
		for (int w = 0; w < (nt + 31) >> 5; w++) amax = fmaxf(amax, s_wmax[w]);
	}
	if (amax == 0.0f) return;
	if (tid == 0 && kq_finite(amax) && amax > 0.0f) {
		float num = __fmul_rn(fp8max, __uint_as_float((u32)(127 - margin) << 23));
		float sc = __fdiv_rn(num, amax);
		if (!kq_finite(sc)) sc = __uint_as_float(KQ_FLT_MAX_BITS);
		*scale = sc;
		if (scale_inv != 0) *scale_inv = __fdiv_rn(1.0f, sc);
	}
#pragma unroll
	for (int k = 0; k < KQ_UPD_PER; k++) {
		const int i = tid + k * nt;
		if (i < len) history[i] = i == 0 ? 0.0f : v[k];
	}
}
KQ_DEV void kq_delayed_update_block(float *history, int len, float *scale, float *scale_inv, float fp8max, int margin,
		int most_recent) {
	__shared__ float s_wmax[32];
	const int nt = (int)(blockDim.x * blockDim.y), tid = (int)(threadIdx.y * blockDim.x + threadIdx.x);
	if (len <= KQ_UPD_PER * nt) {
		float v[KQ_UPD_PER];
		kq_upd_load(history, len, tid, nt, v);
		kq_upd_finish(history, len, v, history[0], scale, scale_inv, fp8max, margin, most_recent, tid, nt);
		return;
	}
	float m = 0.0f;
	for (int i = tid; i < len; i += nt) m = fmaxf(m, history[i]);
	const float h0 = history[0];
	m = kq_warp_max(m);
	if ((tid & 31) == 0) s_wmax[tid >> 5] = m;
	__syncthreads();
	float amax = h0;
	if (!most_recent) {
		amax = 0.0f;
		for (int w = 0; w < (nt + 31) >> 5; w++) amax = fmaxf(amax, s_wmax[w]);
	}
	if (amax == 0.0f) return;
	if (tid == 0 && kq_finite(amax) && amax > 0.0f) {
		float num = __fmul_rn(fp8max, __uint_as_float((u32)(127 - margin) << 23));
		float sc = __fdiv_rn(num, amax);
		if (!kq_finite(sc)) sc = __uint_as_float(KQ_FLT_MAX_BITS);
		*scale = sc;
		if (scale_inv != 0) *scale_inv = __fdiv_rn(1.0f, sc);
	}
	for (int base = 0; base < len; base += nt) {
		const int i = base + tid;
		float x = 0.0f;
		if (i < len) x = i + 1 < len ? history[i + 1] : h0;
		__syncthreads();
		if (i < len) history[i] = i == 0 ? 0.0f : x;
		__syncthreads();
	}
}

// kq_upd is a cast's optional end-of-step update (delayed scaling): len 0
// for none, else the history length and the update's parameters.
struct kq_upd {
	int len;
	float fp8max;
	int margin, most_recent;
};

// kq_cast_finish writes the decode factor of this cast and, when the amax
// is fused (delayed scaling: history != 0), the tensor's amax into history
// entry 0 and the state; with u.len > 0 the last block to arrive then runs
// the delayed update on the history and the state's scale (one launch for
// the whole step: the update kernel's launch and its own latency chain cost
// about as much as 5% of an 8192^2 cast). Every other block has read the
// scale before it committed its amax, so the new scale reaches only the
// next launch.
KQ_DEV void kq_cast_finish(float m, float scale, u32 *st, float *scale_inv, float *history, kq_upd u) {
	if (history == 0) {
		if (threadIdx.x == 0 && threadIdx.y == 0 && blockIdx.x == 0 && blockIdx.y == 0 && scale_inv != 0)
			*scale_inv = __fdiv_rn(1.0f, scale);
		return;
	}
	__shared__ int s_last;
	__shared__ float s_h0;
	const int nt = (int)(blockDim.x * blockDim.y), tid = (int)(threadIdx.y * blockDim.x + threadIdx.x);
	// Every block reads the history (entries 1.., which no block of this
	// launch writes, and entry 0 by thread 0) while thread 0 commits the
	// amax, so that the last block's update starts with its values in
	// registers instead of a round trip to memory after the ticket.
	const bool pre = u.len > 0 && u.len <= KQ_UPD_PER * nt;
	float v[KQ_UPD_PER];
	if (pre) kq_upd_load(history, u.len, tid, nt, v);
	const float h0 = tid == 0 ? history[0] : 0.0f;
	m = kq_block_max(m);
	if (tid == 0) {
		if (blockIdx.x == 0 && blockIdx.y == 0 && scale_inv != 0) *scale_inv = __fdiv_rn(1.0f, scale);
		float amax = kq_amax_commit(m, st);
		s_last = amax >= 0.0f;
		if (amax >= 0.0f) {
			// Several quantizes of one tensor in a step (before the
			// update) keep the largest amax, as quant.State.RecordAmax
			// does.
			const float nh0 = fmaxf(h0, amax);
			history[0] = nh0;
			s_h0 = nh0;
			reinterpret_cast<float *>(st)[KQ_ST_AMAX] = amax;
		}
	}
	if (u.len <= 0) return;
	__syncthreads();
	if (!s_last) return;
	float *stf = reinterpret_cast<float *>(st);
	if (pre) {
		kq_upd_finish(history, u.len, v, s_h0, stf + KQ_ST_SCALE, stf + KQ_ST_SCALE_INV, u.fp8max, u.margin, u.most_recent, tid, nt);
	} else {
		kq_delayed_update_block(history, u.len, stf + KQ_ST_SCALE, stf + KQ_ST_SCALE_INV, u.fp8max, u.margin, u.most_recent);
	}
}

// 16-bit groups a thread of kq_cast loads before it uses the first: 128
// bytes in flight per thread, as raw bits (32 registers).
#define KQ_CAST_UNROLL16 8

template <typename T, bool AMAX>
KQ_DEV void kq_cast_body(const T *x, long long n, u32 *st, u8 *out, float *scale_inv, float *history, int fmt, kq_upd u) {
	float scale = reinterpret_cast<const float *>(st)[KQ_ST_SCALE];
	long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	long long nthreads = (long long)gridDim.x * blockDim.x;
	float m = 0.0f;
	// 8 elements per group: 16-byte loads of 16-bit inputs, 8-byte stores,
	// several loads in flight per thread. The groups go from the end of
	// the tensor to its start: in current scaling the amax pass has just
	// read the tensor front to back, so its tail is still in L2 and the
	// first groups read here hit there instead of in device memory.
	bool vec = ((((u64)x) & 15u) | (((u64)out) & 7u)) == 0u;
	long long ngroups = vec ? n / 8 : 0;
	float fs[8] = {scale, scale, scale, scale, scale, scale, scale, scale};
	if constexpr (sizeof(T) == 2) {
		// Raw 16-byte words, KQ_CAST_UNROLL16 in flight; the amax as
		// packed |x| pairs (kq_pmax), widened once at the end. (An L2
		// prefetch of the next round's groups, here and in the tile
		// kernels, doubled the DRAM traffic on an H100 and is gone.)
		constexpr int U = KQ_CAST_UNROLL16;
		u32 pm = 0u;
		const uint4 *xv = reinterpret_cast<const uint4 *>(x);
		for (long long g0 = tid; g0 < ngroups; g0 += U * nthreads) {
			uint4 q[U];
#pragma unroll
			for (int k = 0; k < U; k++) {
				long long g = g0 + k * nthreads;
				q[k] = make_uint4(0u, 0u, 0u, 0u);
				if (g < ngroups) q[k] = xv[ngroups - 1 - g];
			}
#pragma unroll
			for (int k = 0; k < U; k++) {
				long long g = g0 + k * nthreads;
				if (AMAX) {
					const u32 a = kq_pmax(T(), kq_pmax(T(), q[k].x & 0x7FFF7FFFu, q[k].y & 0x7FFF7FFFu),
						kq_pmax(T(), q[k].z & 0x7FFF7FFFu, q[k].w & 0x7FFF7FFFu));
					pm = kq_pmax(T(), pm, a);
				}
				float v[8];
				kq_widen8<T>(q[k], v);
				if (g < ngroups) reinterpret_cast<uint2 *>(out)[ngroups - 1 - g] = kq_cvt8(v, fs, fmt);
			}
		}
		if (AMAX) m = fmaxf(0.0f, fmaxf(kq_plo(T(), pm), kq_phi(T(), pm)));
	} else {
		for (long long g0 = tid; g0 < ngroups; g0 += KQ_UNROLL * nthreads) {
			float v[KQ_UNROLL][8];
#pragma unroll
			for (int k = 0; k < KQ_UNROLL; k++) {
				long long g = g0 + k * nthreads;
				if (g < ngroups) kq_load8(x, ngroups - 1 - g, v[k]);
				else kq_zero8(v[k]);
			}
#pragma unroll
			for (int k = 0; k < KQ_UNROLL; k++) {
				long long g = g0 + k * nthreads;
				if (AMAX) {
#pragma unroll
					for (int e = 0; e < 8; e++) m = fmaxf(m, fabsf(v[k][e]));
				}
				if (g < ngroups) reinterpret_cast<uint2 *>(out)[ngroups - 1 - g] = kq_cvt8(v[k], fs, fmt);
			}
		}
	}
	for (long long i = ngroups * 8 + tid; i < n; i += nthreads) {
		float v = kq_f32(x[i]);
		if (AMAX) m = fmaxf(m, fabsf(v));
		out[i] = (u8)kq_cvt1(__fmul_rn(v, scale), fmt);
	}
	kq_cast_finish(m, scale, st, scale_inv, history, u);
}

// kq_cast_impl: the amax is reduced only with a history (delayed scaling).
template <typename T>
KQ_DEV void kq_cast_impl(const T *x, long long n, u32 *st, u8 *out, float *scale_inv, float *history, int fmt, kq_upd u) {
	if (history != 0) kq_cast_body<T, true>(x, n, st, out, scale_inv, history, fmt, u);
	else kq_cast_body<T, false>(x, n, st, out, scale_inv, history, fmt, u);
}

// Fused cast + transpose over 32x32 tiles with a (32, 8) block: out_row is
// [rows, cols] (may be 0), out_col is the transpose [cols, rows].
template <typename T>
KQ_DEV void kq_cast_tr_impl(const T *x, int rows, int cols, u32 *st, u8 *out_row, u8 *out_col,
		float *scale_inv, float *history, int fmt, kq_upd u) {
	__shared__ u32 tile[32][33];
	float scale = reinterpret_cast<const float *>(st)[KQ_ST_SCALE];
	int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
	float m = 0.0f;
	for (int j = 0; j < 32; j += 8) {
		int r = r0 + (int)threadIdx.y + j, c = c0 + (int)threadIdx.x;
		if (r < rows && c < cols) {
			long long i = (long long)r * cols + c;
			float v = kq_f32(x[i]);
			m = fmaxf(m, fabsf(v));
			u32 q = kq_cvt1(__fmul_rn(v, scale), fmt);
			if (out_row != 0) out_row[i] = (u8)q;
			tile[threadIdx.y + j][threadIdx.x] = q;
		}
	}
	__syncthreads();
	for (int j = 0; j < 32; j += 8) {
		int c = c0 + (int)threadIdx.y + j, r = r0 + (int)threadIdx.x;
		if (r < rows && c < cols) out_col[(long long)c * rows + r] = (u8)tile[threadIdx.x][threadIdx.y + j];
	}
	kq_cast_finish(m, scale, st, scale_inv, history, u);
}

// Fused cast + transpose over 128x128 tiles with 256 threads, for rows % 16
// == 0 and cols % 8 == 0 with a 16-byte aligned input and out_col and an
// 8-byte aligned out_row. Thread (rg, cg) = (tid / 16, tid % 16) loads the
// 8x8 patch of tile rows 8rg..8rg+7 and columns 8cg..8cg+7: eight 16-byte
// loads issued together (128 bytes in flight per thread; a warp's load
// covers two whole 256-byte row segments). It writes each row's 8 codes to
// out_row (8-byte stores) and transposes each 4x8 half of its codes in
// registers with byte permutes into 8 words, one per column holding 4 rows.
// Through shared memory as words, each thread then writes four runs of 16
// consecutive codes of a transposed row with 16-byte stores (a warp covers
// 4 whole 128-byte column segments). Word (w, c) of the shared tile holds
// tile column c, rows 4w..4w+3; the odd pitch of 129 words makes the column
// reads conflict free (the word stores meet four to a bank, a small part
// of the shared-memory pipe at this tile rate). The first version (64x64
// byte tiles, two loads in flight per thread) stalled on its loads and ran
// at 74-77% of copy bandwidth on an H200.
//
// Tiles are taken from the last to the first: in current scaling the amax
// pass has just read the tensor front to back, so the first tiles read here
// still sit in L2. Blocks stride over the tiles; without the fused amax the
// launcher gives one block per tile, with it (delayed scaling) a grid of
// the resident blocks, so that the amax commits once per block: one
// same-address atomic per tile cost more than the cast at 16384^2. It
// computes the same bytes as the 32x32 kernel above. The tile itself
// (kq_trw_tile) is also the grouped kernels' cast + transpose.
#define KQ_TRW 128
#define KQ_TRW_PITCH 129

// kq_trw_tile: the 128x128 tile at (r0, c0) of cast + transpose, for
// rows % 8 == 0 and cols % 8 == 0 with a 16-byte aligned input and out_col
// and an 8-byte aligned out_row (the patches are wholly in or out):
// thread (rg, cg) = (tid/16, tid%16) loads its 8x8 patch at rows r0 + 8rg,
// columns c0 + 8cg as raw bits (32 registers for 16-bit inputs, all 8
// loads in flight at once; float32 ones 4 rows at a time: held as float32
// values, the 8 rows spilled), casts it with its scale s, stores the
// rowwise codes (when out_row is not NULL), byte-permutes them into the
// shared tile (column word: byte j is row j's code of that column), and
// the 16-row column runs go to the transposed [cols, rows] matrix, or with
// offsets (grouped) to the transposed [cols, n_g] matrix of their group at
// cols * offsets[g] (16-byte aligned: offsets and sizes are multiples of
// 16; a tile may span groups, but its 8-row patches and 16-row runs never
// do). With AMAX m rises to the max |x| of the patch.
template <typename T, bool AMAX>
KQ_DEV void kq_trw_tile(const T *x, int rows, int cols, const int *offsets, int ngroups, int r0, int c0, float s,
		u8 *out_row, u8 *out_col, int fmt, u32 *tile, float &m) {
	const u32 tid = threadIdx.x;
	const int cg = (int)(tid & 15u), rg = (int)(tid >> 4);
	const int q = (int)(tid & 7u); // the 16-row run of the store phase
	const int c = c0 + 8 * cg, r = r0 + 8 * rg;
	const bool in = r < rows && c < cols;
	const float fs[8] = {s, s, s, s, s, s, s, s};
	uint4 raw[8][2];
#pragma unroll
	for (int hr = 0; hr < 2; hr++) {
		if (hr == 0 || sizeof(T) == 4) {
#pragma unroll
			for (int j = 0; j < 8; j++) {
				if (sizeof(T) == 4 && j / 4 != hr) continue;
				raw[j][0] = raw[j][1] = make_uint4(0u, 0u, 0u, 0u);
				if (in) kq_ldraw8(x, ((long long)(r + j) * cols + c) / 8, raw[j]);
			}
		}
		u32 w[4][2];
#pragma unroll
		for (int j = 0; j < 4; j++) {
			float vj[8];
			kq_unpack8(x, raw[4 * hr + j], vj);
			if (AMAX) {
#pragma unroll
				for (int e = 0; e < 8; e++) m = fmaxf(m, fabsf(vj[e]));
			}
			uint2 qq = kq_cvt8(vj, fs, fmt);
			w[j][0] = qq.x;
			w[j][1] = qq.y;
			if (in && out_row != 0) *reinterpret_cast<uint2 *>(out_row + (long long)(r + 4 * hr + j) * cols + c) = qq;
		}
		u32 *t = tile + (2 * rg + hr) * KQ_TRW_PITCH + 8 * cg;
#pragma unroll
		for (int h = 0; h < 2; h++) {
			u32 a0 = __byte_perm(w[0][h], w[1][h], 0x5140), b0 = __byte_perm(w[2][h], w[3][h], 0x5140);
			u32 a1 = __byte_perm(w[0][h], w[1][h], 0x7362), b1 = __byte_perm(w[2][h], w[3][h], 0x7362);
			t[4 * h + 0] = __byte_perm(a0, b0, 0x5410);
			t[4 * h + 1] = __byte_perm(a0, b0, 0x7632);
			t[4 * h + 2] = __byte_perm(a1, b1, 0x5410);
			t[4 * h + 3] = __byte_perm(a1, b1, 0x7632);
		}
	}
	__syncthreads();
	const int rr = r0 + 16 * q;
	int goff = 0, gn = rows;
	if (offsets != 0 && rr < rows) {
		const int g = kq_group(offsets, ngroups, rr);
		goff = offsets[g];
		gn = offsets[g + 1] - goff;
	}
	u8 *ob = out_col + (long long)cols * goff + (rr - goff);
#pragma unroll
	for (int h = 0; h < 4; h++) {
		const int tc = ((int)tid + 256 * h) >> 3;
		const int cc = c0 + tc;
		if (cc < cols && rr < rows) {
			const u32 *sp = tile + 4 * q * KQ_TRW_PITCH + tc;
			*reinterpret_cast<uint4 *>(ob + (long long)cc * gn) =
				make_uint4(sp[0], sp[KQ_TRW_PITCH], sp[2 * KQ_TRW_PITCH], sp[3 * KQ_TRW_PITCH]);
		}
	}
	// The next tile overwrites the shared tile.
	__syncthreads();
}

// Blocks per SM of kq_cast_trw (its __launch_bounds__; CastTranspose sizes
// the delayed-scaling grid to it).
#define KQ_TRW_BLOCKS 4

template <typename T>
KQ_DEV void kq_cast_trw_impl(const T *x, int rows, int cols, u32 *st, u8 *out_row, u8 *out_col,
		float *scale_inv, float *history, int fmt, kq_upd u) {
	__shared__ u32 tile[(KQ_TRW / 4) * KQ_TRW_PITCH];
	const float scale = reinterpret_cast<const float *>(st)[KQ_ST_SCALE];
	const int ntx = (cols + KQ_TRW - 1) / KQ_TRW;
	const long long ntiles = (long long)ntx * ((rows + KQ_TRW - 1) / KQ_TRW);
	float m = 0.0f;
	for (long long k = blockIdx.x; k < ntiles; k += gridDim.x) {
		const long long tl = ntiles - 1 - k;
		kq_trw_tile<T, true>(x, rows, cols, 0, 1, (int)(tl / ntx) * KQ_TRW, (int)(tl % ntx) * KQ_TRW, scale, out_row, out_col, fmt, tile, m);
	}
	kq_cast_finish(m, scale, st, scale_inv, history, u);
}

#include "quantize_mxfp8.cuh"
#include "quantize_mxfp8_mxm.cuh"

// ---- entry points -----------------------------------------------------------

#define KQ_TYPED_KERNELS(SUF, T)                                                                        \
	extern "C" __global__ void __launch_bounds__(256, 4) kq_amax_##SUF(const T *x, long long n, u32 *st, \
			float fp8max, float eps, int pow2) {                                                    \
		kq_amax_impl<T>(x, n, st, fp8max, eps, pow2);                                               \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 4) kq_cast_##SUF(const T *x, long long n, u32 *st, \
			u8 *out, float *scale_inv, float *history, int fmt, int ulen, float fp8max, int margin,  \
			int most_recent) {                                                                      \
		kq_cast_impl<T>(x, n, st, out, scale_inv, history, fmt, kq_upd{ulen, fp8max, margin, most_recent}); \
	}                                                                                                   \
	extern "C" __global__ void kq_cast_tr_##SUF(const T *x, int rows, int cols, u32 *st, u8 *out_row,   \
			u8 *out_col, float *scale_inv, float *history, int fmt, int ulen, float fp8max,          \
			int margin, int most_recent) {                                                          \
		kq_cast_tr_impl<T>(x, rows, cols, st, out_row, out_col, scale_inv, history, fmt,            \
			kq_upd{ulen, fp8max, margin, most_recent});                                         \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, KQ_TRW_BLOCKS) kq_cast_trw_##SUF(const T *x, int rows,        \
			int cols, u32 *st, u8 *out_row, u8 *out_col, float *scale_inv, float *history, int fmt, \
			int ulen, float fp8max, int margin, int most_recent) {                                  \
		kq_cast_trw_impl<T>(x, rows, cols, st, out_row, out_col, scale_inv, history, fmt,           \
			kq_upd{ulen, fp8max, margin, most_recent});                                         \
	}                                                                                                   \
	extern "C" __global__ void kq_mxfp8_row_##SUF(const T *x, int rows, int cols, u8 *out, u8 *scales,  \
			int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {                                      \
		kq_mxfp8_row_impl<T>(x, rows, cols, out, scales, srows, scols, fmt, ocp, st, swz);              \
	}                                                                                                   \
	extern "C" __global__ void kq_mxfp8_col_##SUF(const T *x, int rows, int cols, u8 *out, u8 *scales,  \
			int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {                                      \
		kq_mxfp8_col_impl<T>(x, rows, cols, out, scales, srows, scols, fmt, ocp, st, swz);              \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 4) kq_mxfp8_row8_##SUF(const T *x, int rows,      \
			int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) { \
		kq_mxfp8_row8_impl<T>(x, rows, cols, out, scales, srows, scols, fmt, ocp, st, swz);             \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256) kq_mxfp8_colt_##SUF(const T *x, int rows, int cols,     \
			u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {          \
		kq_mxfp8_colt_impl<T>(x, rows, cols, out, scales, srows, scols, fmt, ocp, st, swz);         \
	}                                                                                                   \
	extern "C" __global__ void kq_mxfp8_col8_##SUF(const T *x, int rows, int cols, u8 *out, u8 *scales, \
			int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) {                                      \
		kq_mxfp8_col8_impl<T>(x, rows, cols, out, scales, srows, scols, fmt, ocp, st, swz);             \
	}

KQ_TYPED_KERNELS(f32, float)
KQ_TYPED_KERNELS(bf16, kq_bf16)
KQ_TYPED_KERNELS(f16, kq_f16)

// The MXFP8 macro-tile kernels (quantize_mxfp8.cuh, kq_mxm_impl) are for
// 16-bit inputs only (their tiles live in registers as pairs); float32
// inputs take the other kernels. kq_mxfp8_both writes both operands, or
// one of them when the other's data pointer is NULL; kq_mxfp8_colw is the
// columnwise-only entry with the one-operand signature, kq_mxfp8_roww
// (quantize_mxfp8_mxm.cuh, kq_mxr_impl: no prefetch, no shared memory, 64
// registers, 4 blocks per SM) the rowwise-only one. With the
// prefetch, at most 128 registers, 2 blocks (16 warps, each with 8 KiB of
// loads in flight: registers and shared-memory staging, KQ_MXM_STAGE) per
// SM; the launchers size their grids to that (mxfp8TileKernel,
// mxfp8Macro). The exponent buffers and staging slots are the kernel's
// shared array, one for every instantiation.
#define KQ_HALF_KERNELS(SUF, T)                                                                         \
	extern "C" __global__ void __launch_bounds__(256, 2) kq_mxfp8_both_##SUF(const T *x, int rows,      \
			int cols, u8 *out_row, u8 *sc_row, int scols_row, u8 *out_col, u8 *sc_col, int srows_col, \
			int scols_col, int fmt, int ocp, u32 *st, u8 *swz_row, u8 *swz_col) {                   \
		__shared__ __align__(16) u8 esm[KQ_MXM_SMEM];                                                  \
		if (out_col == 0)                                                                           \
			kq_mxfp8_tiles<T, KQ_MX_ROW>(x, rows, cols, out_row, sc_row, swz_row, scols_row, 0, 0, 0, \
				srows_col, scols_col, fmt, ocp, st, esm);                                        \
		else if (out_row == 0)                                                                      \
			kq_mxfp8_tiles<T, KQ_MX_COL>(x, rows, cols, 0, 0, 0, scols_row, out_col, sc_col, swz_col, \
				srows_col, scols_col, fmt, ocp, st, esm);                                        \
		else                                                                                        \
			kq_mxfp8_tiles<T, KQ_MX_ROW | KQ_MX_COL>(x, rows, cols, out_row, sc_row, swz_row, scols_row, \
				out_col, sc_col, swz_col, srows_col, scols_col, fmt, ocp, st, esm);              \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 2) kq_mxfp8_colw_##SUF(const T *x, int rows,      \
			int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) { \
		__shared__ __align__(16) u8 esm[KQ_MXM_SMEM];                                                  \
		kq_mxfp8_tiles<T, KQ_MX_COL>(x, rows, cols, 0, 0, 0, 0, out, scales, swz, srows, scols, fmt, ocp, st, esm); \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 4) kq_mxfp8_roww_##SUF(const T *x, int rows,      \
			int cols, u8 *out, u8 *scales, int srows, int scols, int fmt, int ocp, u32 *st, u8 *swz) { \
		kq_mxfp8_rows<T>(x, rows, cols, out, scales, srows, scols, fmt, ocp, st, swz);                \
	}

KQ_HALF_KERNELS(bf16, kq_bf16)
KQ_HALF_KERNELS(f16, kq_f16)

// Delayed scaling update, after a step: one block. Contract, "Delayed
// scaling". The history roll runs in chunks of blockDim.x entries; each
// chunk reads entries i+1 (never yet written) before any thread writes.
// scale (and scale_inv, unless 0) receive the new scale. Every thread of
// the block must call it.
KQ_DEV void kq_delayed_update_impl(float *history, int len, float *scale, float *scale_inv, float fp8max, int margin,
		int most_recent) {
	__shared__ float s_amax;
	float m = 0.0f;
	if (most_recent) {
		if (threadIdx.x == 0) m = history[0];
	} else {
		for (int i = threadIdx.x; i < len; i += blockDim.x) m = fmaxf(m, history[i]);
	}
	m = kq_block_max(m);
	if (threadIdx.x == 0) s_amax = most_recent ? history[0] : m;
	__syncthreads();
	float amax = s_amax;
	if (amax == 0.0f) return;
	if (threadIdx.x == 0 && kq_finite(amax) && amax > 0.0f) {
		float num = __fmul_rn(fp8max, __uint_as_float((u32)(127 - margin) << 23));
		float sc = __fdiv_rn(num, amax);
		if (!kq_finite(sc)) sc = __uint_as_float(KQ_FLT_MAX_BITS);
		*scale = sc;
		if (scale_inv != 0) *scale_inv = __fdiv_rn(1.0f, sc);
	}
	float first = history[0];
	__syncthreads();
	for (int base = 0; base < len; base += blockDim.x) {
		int i = base + (int)threadIdx.x;
		float v = 0.0f;
		if (i < len) v = i + 1 < len ? history[i + 1] : first;
		__syncthreads();
		if (i < len) history[i] = i == 0 ? 0.0f : v;
		__syncthreads();
	}
}

// The update alone (a step whose casts did not run it), with
// kq_delayed_update_block: the same bytes as kq_delayed_update_impl.
extern "C" __global__ void kq_delayed_update(float *history, int len, u32 *st, float fp8max, int margin, int most_recent) {
	float *stf = reinterpret_cast<float *>(st);
	kq_delayed_update_block(history, len, stf + KQ_ST_SCALE, stf + KQ_ST_SCALE_INV, fp8max, margin, most_recent);
}

// out = decode(q) * scale_inv, float32.
extern "C" __global__ void kq_dequant_fp8(const u8 *q, long long n, const float *scale_inv, float *out, int fmt) {
	float s = *scale_inv;
	long long nthreads = (long long)gridDim.x * blockDim.x;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += nthreads)
		out[i] = __fmul_rn(kq_fp8_decode(q[i], fmt), s);
}

// out = decode(q) * 2^(e-127) with e the element's block scale.
extern "C" __global__ void kq_mxfp8_dequant(const u8 *q, int rows, int cols, const u8 *scales, int scols, int colwise,
		float *out, int fmt) {
	long long n = (long long)rows * cols;
	long long nthreads = (long long)gridDim.x * blockDim.x;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += nthreads) {
		int r = (int)(i / cols), c = (int)(i % cols);
		long long si = colwise ? (long long)(r / 32) * scols + c : (long long)r * scols + c / 32;
		out[i] = __fmul_rn(kq_fp8_decode(q[i], fmt), kq_e8m0_decode_factor(scales[si]));
	}
}

// ---- self tests -------------------------------------------------------------

// Raw conversion of float32 values, as the hardware does it.
extern "C" __global__ void kq_cvt_f32(const float *x, long long n, u8 *out, int fmt) {
	long long nthreads = (long long)gridDim.x * blockDim.x;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += nthreads)
		out[i] = (u8)kq_cvt1(x[i], fmt);
}

// Hardware against kq_cvt1_sw for bit patterns [start, start+count):
// res[0] counts mismatches, res[1..8] keep some mismatching patterns.
extern "C" __global__ void kq_cvt_check(u64 start, u64 count, u64 *res, int fmt) {
	u64 nthreads = (u64)gridDim.x * blockDim.x;
	for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += nthreads) {
		u32 bits = (u32)(start + i);
		float x = __uint_as_float(bits);
		u32 hw = kq_cvt1(x, fmt), sw = kq_cvt1_sw(x, fmt);
		if (hw != sw) {
			u64 k = atomicAdd(&res[0], 1ull);
			if (k < 8ull) res[1 + k] = ((u64)hw << 40) | ((u64)sw << 32) | bits;
		}
	}
}

#include "quantize_grouped.cuh"

#include "quantize_grouped_delayed.cuh"

