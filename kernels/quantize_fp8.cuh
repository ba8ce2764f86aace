// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// quantize_fp8.cuh: part of quantize.cu (included once, where the per-tensor
// FP8 kernels' bodies stood): current scaling's amax, the delayed-scaling
// update, and the per-tensor FP8 cast (rowwise) with its end-of-kernel amax
// commit. Not a header of its own: it uses what quantize.cu defines before
// it (kq_common.cuh, kq_mx.cuh and the load/convert helpers).

// kq_fp8_commit is kq_amax_commit (kq_mx.cuh) with a release-acquire
// ticket instead of two sequentially consistent fences around it: the
// block's max goes to the accumulator (a reduction, not waited for), and
// the ticket's atom.acq_rel orders it before the ticket (release: every
// block's max is in the accumulator before its ticket counts) and the last
// block's exchange after it (acquire). One fence.acq_rel (MEMBAR.ALL) on
// the last block's path where there were two fence.sc (MEMBAR.SC), the
// latency chain that every fused-amax cast ends with. The same values.
KQ_DEV float kq_fp8_commit(float block_amax, u32 *st) {
	const u32 nblocks = gridDim.x * gridDim.y * gridDim.z;
	atomicMax(&st[KQ_ST_ACC], __float_as_uint(block_amax));
	u32 ticket;
	asm volatile("atom.acq_rel.gpu.add.u32 %0, [%1], 1;" : "=r"(ticket) : "l"(st + KQ_ST_TICKET) : "memory");
	if (ticket != nblocks - 1u) return -1.0f;
	const float amax = __uint_as_float(atomicExch(&st[KQ_ST_ACC], 0u));
	atomicExch(&st[KQ_ST_TICKET], 0u);
	kq_sched_reset(st);
	return amax;
}

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

// ---- the group loop of kq_amax and kq_cast ----------------------------------

// Groups of 8 elements: one 16-byte word of 16-bit inputs, as raw bits
// (uint4), or 8 float32 values (kq_v8, two 16-byte loads). A zero group
// (R{}) is +0 in every input type.
struct kq_v8 {
	float v[8];
};

// 16-bit groups a thread of kq_amax and kq_cast loads before it uses the
// first: 128 bytes in flight per thread, as raw bits (32 registers).
#define KQ_CAST_UNROLL16 8
// Threads of a kq_amax or kq_cast block (the launcher's): the 16-bit chunk
// loop of kq_groups is for this block size (other sizes take its
// grid-stride loop).
#define KQ_CAST_THREADS 256

// kq_groups calls use(q, g) for every group g < ngroups, q = load(g) (the
// one group loop of kq_amax and kq_cast), U loads issued before the first
// use, so that enough bytes are in flight to cover the memory latency at
// the launcher's 4 blocks per SM (one load per thread reached ~80% of copy
// bandwidth). With REV the groups go from the end of the tensor to its
// start: in current scaling the amax pass has just read the tensor front
// to back, so the tail is still in L2 when the cast reads it first. With
// CHUNKS and KQ_CAST_THREADS threads per block: chunks of U *
// KQ_CAST_THREADS groups strided over the blocks (the launcher balances
// the grid so that every block takes as many chunks, or one fewer), thread
// t taking groups t + k * KQ_CAST_THREADS of its chunk: one base address
// per chunk and constant offsets for its loads and stores, where the
// grid-stride loop computes and bounds-checks a 64-bit index per group.
// Only a partial chunk (the last: groups past the end, or with REV below
// 0) checks its groups. Every use gets a group of the
// tensor: kq_amax's maxima start at +0 and the zero groups the loads
// used to pad with never raised them, so skipping them is the same.
template <typename R, int U, bool REV, bool CHUNKS, typename L, typename F>
KQ_DEV void kq_groups(long long ngroups, L load, F use) {
	if (CHUNKS && blockDim.x == KQ_CAST_THREADS) {
		constexpr long long CH = (long long)U * KQ_CAST_THREADS;
		const long long nch = (ngroups + CH - 1) / CH;
		for (long long c = blockIdx.x; c < nch; c += gridDim.x) {
			const long long base = REV ? ngroups - (c + 1) * CH : c * CH;
			const long long g0 = base + threadIdx.x;
			R q[U];
			if (REV ? base >= 0 : base + CH <= ngroups) {
#pragma unroll
				for (int k = 0; k < U; k++) q[k] = load(g0 + k * KQ_CAST_THREADS);
#pragma unroll
				for (int k = 0; k < U; k++) use(q[k], g0 + k * KQ_CAST_THREADS);
			} else {
#pragma unroll
				for (int k = 0; k < U; k++) {
					const long long g = g0 + k * KQ_CAST_THREADS;
					q[k] = R{};
					if (REV ? g >= 0 : g < ngroups) q[k] = load(g);
				}
#pragma unroll
				for (int k = 0; k < U; k++) {
					const long long g = g0 + k * KQ_CAST_THREADS;
					if (REV ? g >= 0 : g < ngroups) use(q[k], g);
				}
			}
		}
		return;
	}
	const long long nthreads = (long long)gridDim.x * blockDim.x;
	for (long long g0 = (long long)blockIdx.x * blockDim.x + threadIdx.x; g0 < ngroups; g0 += U * nthreads) {
		R q[U];
#pragma unroll
		for (int k = 0; k < U; k++) {
			const long long g = g0 + k * nthreads;
			q[k] = R{};
			if (g < ngroups) q[k] = load(REV ? ngroups - 1 - g : g);
		}
#pragma unroll
		for (int k = 0; k < U; k++) {
			const long long g = g0 + k * nthreads;
			if (g < ngroups) use(q[k], REV ? ngroups - 1 - g : g);
		}
	}
}

// kq_vgroups is kq_groups over the 8-element groups of x: 16-byte words of
// 16-bit inputs (KQ_CAST_UNROLL16 in flight, in chunks), float32 groups
// (KQ_UNROLL in flight, grid-stride); use16(q, g) or use32(v, g) each.
template <bool REV, typename T, typename F16, typename F32>
KQ_DEV void kq_vgroups(const T *x, long long ngroups, F16 use16, F32 use32) {
	if constexpr (sizeof(T) == 2) {
		const uint4 *xv = reinterpret_cast<const uint4 *>(x);
		kq_groups<uint4, KQ_CAST_UNROLL16, REV, true>(ngroups, [&](long long g) { return xv[g]; }, use16);
	} else {
		kq_groups<kq_v8, KQ_UNROLL, REV, false>(ngroups, [&](long long g) {
			kq_v8 r;
			kq_load8(x, g, r.v);
			return r;
		}, use32);
	}
}

// kq_pabs8 is the packed |x| maximum (kq_pmax) of the 8 elements of a
// 16-byte word of 16-bit inputs.
template <typename T>
KQ_DEV u32 kq_pabs8(uint4 q) {
	return kq_pmax(T(), kq_pmax(T(), q.x & 0x7FFF7FFFu, q.y & 0x7FFF7FFFu), kq_pmax(T(), q.z & 0x7FFF7FFFu, q.w & 0x7FFF7FFFu));
}

// kq_pamax is the float32 amax of a packed |x| maximum: its larger half,
// +0 for none.
template <typename T>
KQ_DEV float kq_pamax(u32 pm) {
	return fmaxf(0.0f, fmaxf(kq_plo(T(), pm), kq_phi(T(), pm)));
}

template <typename T>
KQ_DEV void kq_amax_impl(const T *x, long long n, u32 *st, float fp8max, float eps, int pow2) {
	long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	long long nthreads = (long long)gridDim.x * blockDim.x;
	bool vec = (((u64)x) & 15u) == 0u;
	long long ngroups = vec ? n / 8 : 0;
	// 16-bit inputs: the |x| maxima as packed pairs (kq_pmax), widened
	// once at the end.
	u32 pm = 0u;
	float m = 0.0f;
	kq_vgroups<false>(x, ngroups, [&](auto q, long long) { pm = kq_pmax(T(), pm, kq_pabs8<T>(q)); },
		[&](const kq_v8 &r, long long) {
#pragma unroll
			for (int k = 0; k < 8; k++) m = fmaxf(m, fabsf(r.v[k]));
		});
	if constexpr (sizeof(T) == 2) m = kq_pamax<T>(pm);
	for (long long i = ngroups * 8 + tid; i < n; i += nthreads) m = fmaxf(m, fabsf(kq_f32(x[i])));
	m = kq_block_max(m);
	if (threadIdx.x != 0) return;
	float amax = kq_fp8_commit(m, st);
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

// kq_upd_scale is the delayed update's scale from each thread's partial
// maximum m of the history and entry 0's value h0: the block's maximum
// (through s_wmax, the caller's shared per-warp maxima) or, with
// most_recent, h0 is the amax; false when it is 0 (no update at all), else
// thread 0 writes the scale (and scale_inv) of a finite positive amax. The
// one rule of kq_upd_finish and kq_delayed_update_block.
KQ_DEV bool kq_upd_scale(float m, float h0, float *s_wmax, float *scale, float *scale_inv, float fp8max, int margin,
		int most_recent, int tid, int nt) {
	m = kq_warp_max(m);
	if ((tid & 31) == 0) s_wmax[tid >> 5] = m;
	__syncthreads();
	float amax = h0;
	if (!most_recent) {
		amax = 0.0f;
		for (int w = 0; w < (nt + 31) >> 5; w++) amax = fmaxf(amax, s_wmax[w]);
	}
	if (amax == 0.0f) return false;
	if (tid == 0 && kq_finite(amax) && amax > 0.0f) {
		float num = __fmul_rn(fp8max, __uint_as_float((u32)(127 - margin) << 23));
		float sc = __fdiv_rn(num, amax);
		if (!kq_finite(sc)) sc = __uint_as_float(KQ_FLT_MAX_BITS);
		*scale = sc;
		if (scale_inv != 0) *scale_inv = __fdiv_rn(1.0f, sc);
	}
	return true;
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
	if (!kq_upd_scale(m, h0, s_wmax, scale, scale_inv, fp8max, margin, most_recent, tid, nt)) return;
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
	if (!kq_upd_scale(m, h0, s_wmax, scale, scale_inv, fp8max, margin, most_recent, tid, nt)) return;
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

// The history prefetch of kq_cast_finish: for histories of up to
// KQ_UPD_PER entries per thread in blocks of up to KQ_HPRE_THREADS
// threads, the cast's first act issues the entries that kq_upd_load would
// read at the end (thread tid's entries i + 1, i = tid + k*nt, into slot
// i of kq_hist_smem, and entry 0 by thread 0 into the last slot) as
// asynchronous copies to shared memory (cp.async: no registers held
// through the cast), which each thread waits for after its part of the
// cast: the history's latency (every block reading the same few lines of
// L2 at once) leaves the chain that ends every block, and so the launch.
// The same values: no block of the launch writes the history before every
// block has taken its ticket, which it takes after these reads completed.
#define KQ_HPRE_THREADS 256
#define KQ_HPRE_H0 (KQ_UPD_PER * KQ_HPRE_THREADS)
KQ_DEV float *kq_hist_smem() {
	__shared__ float s_hist[KQ_HPRE_H0 + 1];
	return s_hist;
}
// kq_hist_pre reports whether the cast prefetches the history.
KQ_DEV bool kq_hist_pre(const float *history, kq_upd u, int nt) {
	return history != 0 && u.len > 0 && u.len <= KQ_UPD_PER * nt && nt <= KQ_HPRE_THREADS;
}
KQ_DEV void kq_cp_async4(float *dst, const float *src) {
	asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" : : "r"((u32)__cvta_generic_to_shared(dst)), "l"(src) : "memory");
}
KQ_DEV void kq_hist_prefetch(const float *history, kq_upd u) {
	const int nt = (int)(blockDim.x * blockDim.y), tid = (int)(threadIdx.y * blockDim.x + threadIdx.x);
	if (!kq_hist_pre(history, u, nt)) return;
	float *s = kq_hist_smem();
#pragma unroll
	for (int k = 0; k < KQ_UPD_PER; k++) {
		const int i = tid + k * nt;
		if (i + 1 < u.len) kq_cp_async4(s + i, history + i + 1);
	}
	if (tid == 0) kq_cp_async4(s + KQ_HPRE_H0, history);
}

// kq_block_max2 is kq_block_max of two values with one barrier: both
// maxima in thread 0.
KQ_DEV void kq_block_max2(float &a, float &b) {
	__shared__ float wmax[2][32];
	const u32 tid = threadIdx.y * blockDim.x + threadIdx.x;
	const u32 nwarps = (blockDim.x * blockDim.y + 31u) >> 5;
	a = kq_warp_max(a);
	b = kq_warp_max(b);
	if ((tid & 31u) == 0u) {
		wmax[0][tid >> 5] = a;
		wmax[1][tid >> 5] = b;
	}
	__syncthreads();
	if (tid < 32u) {
		a = tid < nwarps ? wmax[0][tid] : 0.0f;
		b = tid < nwarps ? wmax[1][tid] : 0.0f;
		a = kq_warp_max(a);
		b = kq_warp_max(b);
	}
}

// kq_cast_finish writes the decode factor of this cast and, when the amax
// is fused (delayed scaling: history != 0), the tensor's amax into history
// entry 0 and the state; with u.len > 0 the last block to arrive then runs
// the delayed update on the history and the state's scale (one launch for
// the whole step: the update kernel's launch and its own latency chain cost
// about as much as 5% of an 8192^2 cast). Every other block has read the
// scale before it committed its amax, so the new scale reaches only the
// next launch.
//
// For histories of up to KQ_UPD_PER entries per thread, every block reads
// the history (entries 1.., which no block of this launch writes, and
// entry 0 by thread 0) and reduces the maximum of entries 1.. with its
// amax (one barrier for both) before thread 0 commits, so that after the
// ticket the last block's thread 0 computes the update's amax (the larger
// of that maximum and the new entry 0, or entry 0 alone with most_recent)
// and the scale at once, and after one barrier its threads write the roll
// from registers: the bytes of kq_upd_finish (fmaxf is order-free here:
// the maximum starts at +0 and ignores NaN; a zero amax, of either sign,
// skips the update).
KQ_DEV void kq_cast_finish(float m, float scale, u32 *st, float *scale_inv, float *history, kq_upd u) {
	if (history == 0) {
		if (threadIdx.x == 0 && threadIdx.y == 0 && blockIdx.x == 0 && blockIdx.y == 0 && scale_inv != 0)
			*scale_inv = __fdiv_rn(1.0f, scale);
		return;
	}
	__shared__ int s_last, s_roll;
	__shared__ float s_h0;
	const int nt = (int)(blockDim.x * blockDim.y), tid = (int)(threadIdx.y * blockDim.x + threadIdx.x);
	const bool pre = u.len > 0 && u.len <= KQ_UPD_PER * nt;
	const bool prefetched = kq_hist_pre(history, u, nt);
	float v[KQ_UPD_PER];
	float mh = 0.0f;
	float h0 = 0.0f;
	if (prefetched) {
		asm volatile("cp.async.wait_all;" : : : "memory");
		const float *s = kq_hist_smem();
#pragma unroll
		for (int k = 0; k < KQ_UPD_PER; k++) v[k] = tid + k * nt + 1 < u.len ? s[tid + k * nt] : 0.0f;
		if (tid == 0) h0 = s[KQ_HPRE_H0];
	} else {
		if (pre) kq_upd_load(history, u.len, tid, nt, v);
		if (tid == 0) h0 = history[0];
	}
	if (pre) {
#pragma unroll
		for (int k = 0; k < KQ_UPD_PER; k++)
			if (tid + k * nt + 1 < u.len) mh = fmaxf(mh, v[k]);
	}
	kq_block_max2(m, mh);
	float *stf = reinterpret_cast<float *>(st);
	if (tid == 0) {
		if (blockIdx.x == 0 && blockIdx.y == 0 && scale_inv != 0) *scale_inv = __fdiv_rn(1.0f, scale);
		float amax = kq_fp8_commit(m, st);
		s_last = amax >= 0.0f;
		if (amax >= 0.0f) {
			// Several quantizes of one tensor in a step (before the
			// update) keep the largest amax, as quant.State.RecordAmax
			// does.
			const float nh0 = fmaxf(h0, amax);
			history[0] = nh0;
			s_h0 = nh0;
			stf[KQ_ST_AMAX] = amax;
			if (pre) {
				// kq_upd_finish's amax and scale.
				const float au = u.most_recent ? nh0 : fmaxf(mh, nh0);
				s_roll = au != 0.0f;
				if (au != 0.0f && kq_finite(au) && au > 0.0f) {
					float num = __fmul_rn(u.fp8max, __uint_as_float((u32)(127 - u.margin) << 23));
					float sc = __fdiv_rn(num, au);
					if (!kq_finite(sc)) sc = __uint_as_float(KQ_FLT_MAX_BITS);
					stf[KQ_ST_SCALE] = sc;
					stf[KQ_ST_SCALE_INV] = __fdiv_rn(1.0f, sc);
				}
			}
		}
	}
	if (u.len <= 0) return;
	__syncthreads();
	if (!s_last) return;
	if (pre) {
		// kq_upd_finish's roll: entry i takes entry i+1, the last the new
		// entry 0, entry 0 is zeroed; nothing when the amax is 0.
		if (!s_roll) return;
		const float nh0 = s_h0;
#pragma unroll
		for (int k = 0; k < KQ_UPD_PER; k++) {
			const int i = tid + k * nt;
			if (i < u.len) history[i] = i == 0 ? 0.0f : (i + 1 < u.len ? v[k] : nh0);
		}
	} else {
		kq_delayed_update_block(history, u.len, stf + KQ_ST_SCALE, stf + KQ_ST_SCALE_INV, u.fp8max, u.margin, u.most_recent);
	}
}

// kq_cvt4f<FMT> is kq_cvt2<FMT>(a, b) | kq_cvt2<FMT>(c, d) << 16 (byte 0:
// a's code), the same two paired conversions written into one word:
// ptxas merges the second pair into the first's upper half (F2FP's merge
// operand), 2 instructions where the separate halves took 5 (two
// conversions, two masks and a byte permute).
template <int FMT>
KQ_DEV u32 kq_cvt4f(float a, float b, float c, float d) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
	return kq_cvt2<FMT>(a, b) | kq_cvt2<FMT>(c, d) << 16;
#else
	u32 r;
	if (FMT == KQ_E4M3) {
		asm("{\n\t.reg .b16 lo, hi;\n\tcvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\n\t"
		    "cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n\tmov.b32 %0, {lo, hi};\n\t}"
			: "=r"(r) : "f"(a), "f"(b), "f"(c), "f"(d));
	} else {
		asm("{\n\t.reg .b16 lo, hi;\n\tcvt.rn.satfinite.e5m2x2.f32 lo, %2, %1;\n\t"
		    "cvt.rn.satfinite.e5m2x2.f32 hi, %4, %3;\n\tmov.b32 %0, {lo, hi};\n\t}"
			: "=r"(r) : "f"(a), "f"(b), "f"(c), "f"(d));
	}
	return r;
#endif
}

// kq_cvt8f<FMT> is kq_cvt8(v, f, FMT) with every factor f[i] = s: the
// same bytes, the format fixed at compile time (no per-element select of
// the two conversions) and the words built by kq_cvt4f.
template <int FMT>
KQ_DEV uint2 kq_cvt8f(const float v[8], float s) {
	uint2 o;
	o.x = kq_cvt4f<FMT>(__fmul_rn(v[0], s), __fmul_rn(v[1], s), __fmul_rn(v[2], s), __fmul_rn(v[3], s));
	o.y = kq_cvt4f<FMT>(__fmul_rn(v[4], s), __fmul_rn(v[5], s), __fmul_rn(v[6], s), __fmul_rn(v[7], s));
	return o;
}

template <typename T, bool AMAX, int FMT>
KQ_DEV void kq_cast_body(const T *x, long long n, u32 *st, u8 *out, float *scale_inv, float *history, int fmt, kq_upd u) {
	float scale = reinterpret_cast<const float *>(st)[KQ_ST_SCALE];
	long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	long long nthreads = (long long)gridDim.x * blockDim.x;
	kq_hist_prefetch(history, u);
	// 8 elements per group (kq_groups, from the end of the tensor): 16-byte
	// loads of 16-bit inputs, 8-byte stores; the amax of 16-bit inputs as
	// packed |x| pairs (kq_pmax), widened once at the end. (An L2
	// prefetch of the next round's groups, here and in the tile kernels,
	// doubled the DRAM traffic on an H100 and is gone.)
	bool vec = ((((u64)x) & 15u) | (((u64)out) & 7u)) == 0u;
	long long ngroups = vec ? n / 8 : 0;
	uint2 *ov = reinterpret_cast<uint2 *>(out);
	u32 pm = 0u;
	float m = 0.0f;
	kq_vgroups<true>(x, ngroups,
		[&](auto q, long long g) {
			if (AMAX) pm = kq_pmax(T(), pm, kq_pabs8<T>(q));
			float v[8];
			kq_widen8<T>(q, v);
			ov[g] = kq_cvt8f<FMT>(v, scale);
		},
		[&](const kq_v8 &r, long long g) {
			if (AMAX) {
#pragma unroll
				for (int e = 0; e < 8; e++) m = fmaxf(m, fabsf(r.v[e]));
			}
			ov[g] = kq_cvt8f<FMT>(r.v, scale);
		});
	if constexpr (AMAX && sizeof(T) == 2) m = kq_pamax<T>(pm);
	for (long long i = ngroups * 8 + tid; i < n; i += nthreads) {
		float v = kq_f32(x[i]);
		if (AMAX) m = fmaxf(m, fabsf(v));
		out[i] = (u8)kq_cvt1(__fmul_rn(v, scale), fmt);
	}
	kq_cast_finish(m, scale, st, scale_inv, history, u);
}

// kq_cast_impl: the amax is reduced only with a history (delayed scaling).
// The format is a template parameter of the body (kq_cvt8f), picked here
// once: any fmt but KQ_E4M3 is E5M2, as in kq_cvt2.
template <typename T>
KQ_DEV void kq_cast_impl(const T *x, long long n, u32 *st, u8 *out, float *scale_inv, float *history, int fmt, kq_upd u) {
	if (history != 0) {
		if (fmt == KQ_E4M3) kq_cast_body<T, true, KQ_E4M3>(x, n, st, out, scale_inv, history, fmt, u);
		else kq_cast_body<T, true, KQ_E5M2>(x, n, st, out, scale_inv, history, fmt, u);
	} else {
		if (fmt == KQ_E4M3) kq_cast_body<T, false, KQ_E4M3>(x, n, st, out, scale_inv, history, fmt, u);
		else kq_cast_body<T, false, KQ_E5M2>(x, n, st, out, scale_inv, history, fmt, u);
	}
}
