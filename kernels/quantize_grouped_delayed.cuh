// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// quantize_grouped_delayed.cuh: part of quantize.cu (included once, at its
// end): the grouped (MoE) delayed-scaling casts and the per-group update.
// Not a header of its own: it uses what quantize.cu defines before it.

// ---- grouped (MoE) quantize: delayed scaling --------------------------------
//
// As the grouped current-scaling kernels above (offsets and *flag from
// kq_grp_offsets, groups of 16-row multiples, every kernel a no-op while
// *flag is set), but group g casts with its state's scale[g] (the previous
// update's) and records its amax: the cast reduces each group's max |x|
// (NaN ignored) into amax[g] (float bits, zeroed by kq_grp_offsets), and
// kq_grp_dupdate raises history entry 0 of group g to it and, at the end of
// a step, runs group g's update, one block per group. The per-group state
// is contiguous: scale[G] floats and history[G][len]. Block 0 of the cast
// writes scale_inv[g] = 1/scale[g] for every group.
//
// The amax reduction is what costs: one same-address atomic per tile cost
// more than the whole cast at 16384^2 (kq_cast_trw). So each warp (or block)
// takes a contiguous range of work items rather than striding over them,
// keeps its running maximum while its group stays the same, and commits it
// (one atomicMax on the float's bits, amaxes being >= 0) only when the group
// changes and at the end: a few atomics per warp instead of one per item.

// kq_grp_commit merges a warp's running maximum into amax[g] (g < 0: none).
// Every lane of the warp must call it (warp-uniform g).
KQ_DEV void kq_grp_commit(u32 *amax, int g, float m) {
	m = kq_warp_max(m);
	if (g >= 0 && (threadIdx.x & 31u) == 0u && m > 0.0f) atomicMax(&amax[g], __float_as_uint(m));
}

// kq_grp_run is a warp's walk over its items in the grouped delayed casts:
// the current group g (-1: none yet, or past the rows), the running maximum
// m of its values and its scale s. to() moves to an item's group, committing
// the previous group's maximum when the group changes; done() commits the
// last one.
struct kq_grp_run {
	u32 *amax;
	const float *scale;
	int g;
	float m, s;
	__device__ __forceinline__ kq_grp_run(u32 *amax_, const float *scale_) : amax(amax_), scale(scale_), g(-1), m(0.0f), s(1.0f) {}
	__device__ __forceinline__ void to(int gn) {
		if (gn == g) return;
		kq_grp_commit(amax, g, m);
		g = gn;
		m = 0.0f;
		s = gn >= 0 ? scale[gn] : 1.0f;
	}
	__device__ __forceinline__ void done() { kq_grp_commit(amax, g, m); }
};

// kq_block_tiles walks block b's contiguous share [b*n/grid, (b+1)*n/grid)
// of the n = nty x ntx tiles (th x tw elements each) of a grid, in
// row-major order: next gives the next tile's first row and column.
struct kq_block_tiles {
	long long t, t1;
	int ntx, th, tw;
	__device__ __forceinline__ kq_block_tiles(int nty, int ntx_, int th_, int tw_) : ntx(ntx_), th(th_), tw(tw_) {
		const long long n = (long long)ntx_ * nty;
		t = n * blockIdx.x / gridDim.x;
		t1 = n * (blockIdx.x + 1) / gridDim.x;
	}
	__device__ __forceinline__ bool next(int &r0, int &c0) {
		if (t >= t1) return false;
		c0 = (int)(t % ntx) * tw;
		r0 = (int)(t / ntx) * th;
		t++;
		return true;
	}
};

// kq_grp_dscale_inv writes scale_inv[g] = 1/scale[g] for every group (block
// 0 only).
KQ_DEV void kq_grp_dscale_inv(const float *scale, float *scale_inv, int ngroups) {
	if (blockIdx.x != 0 || scale_inv == 0) return;
	for (int g = (int)threadIdx.x; g < ngroups; g += (int)blockDim.x) scale_inv[g] = __fdiv_rn(1.0f, scale[g]);
}

// kq_grp_dcast_tiles is the walk of the grouped delayed cast+transposes:
// nothing while *flag is set; block 0 writes the decode scales; the block
// takes its share of the nty x ntx tiles of th x tw elements
// (kq_block_tiles) and casts each with cast(r0, c0, run, smem), run
// following the groups (kq_grp_run); smem is the caller's shared tile.
template <typename S, typename F>
KQ_DEV void kq_grp_dcast_tiles(const int *flag, u32 *amax, const float *scale, float *scale_inv, int ngroups, int nty, int ntx,
		int th, int tw, S smem, F cast) {
	if (*flag != 0) return;
	kq_grp_dscale_inv(scale, scale_inv, ngroups);
	kq_block_tiles bt(nty, ntx, th, tw);
	kq_grp_run run(amax, scale);
	for (int r0, c0; bt.next(r0, c0);) cast(r0, c0, run, smem);
	run.done();
}

// Rowwise cast, the items of kq_grp_cast (kq_grp_band), warp w taking
// items [w*items/nwarps, (w+1)*items/nwarps). 3 blocks per SM: at
// kq_grp_cast's 4 (64 registers) the running maximum and group spilled
// about 600 bytes per thread.
template <typename T>
KQ_DEV void kq_grp_dcast_impl(const T *x, int rows, int cols, const int *offsets, int ngroups, const int *flag, u32 *amax,
		u8 *out, const float *scale, float *scale_inv, int fmt, int vec) {
	if (*flag != 0) return;
	kq_grp_dscale_inv(scale, scale_inv, ngroups);
	kq_grp_run run(amax, scale);
	kq_grp_band_walk(rows, cols, true, [&](int r0, int c) {
		run.to(kq_group(offsets, ngroups, r0));
		kq_grp_band<T, true, true>(x, cols, r0, c, run.s, out, fmt, vec, run.m);
	});
	run.done();
}

// Cast + transpose over the 128x128 tiles of kq_trw_tile, block b
// taking tiles [b*tiles/grid, (b+1)*tiles/grid) in row-major order, so
// that its warps mostly stay in one 128-row band. Warp w holds tile rows
// 16w..16w+15 (rg = 2w, 2w+1): one group, whose maximum it keeps.
template <typename T>
KQ_DEV void kq_grp_dcast_trw_impl(const T *x, int rows, int cols, const int *offsets, int ngroups, const int *flag, u32 *amax,
		u8 *out_row, u8 *out_col, const float *scale, float *scale_inv, int fmt) {
	__shared__ u32 tile[(KQ_TRW / 4) * KQ_TRW_PITCH];
	kq_grp_dcast_tiles(flag, amax, scale, scale_inv, ngroups, (rows + KQ_TRW - 1) / KQ_TRW, (cols + KQ_TRW - 1) / KQ_TRW, KQ_TRW,
		KQ_TRW, tile, [&](int r0, int c0, kq_grp_run &run, u32 *sm) {
			// The warp's 16 rows (warp-uniform group; -1 past the rows).
			const int rb = r0 + 16 * (int)(threadIdx.x >> 5);
			run.to(rb < rows ? kq_group(offsets, ngroups, rb) : -1);
			kq_trw_tile<T, true>(x, rows, cols, offsets, ngroups, r0, c0, run.s, out_row, out_col, fmt, sm, run.m);
		});
}

// Cast + transpose for any shape and alignment: the 16x32 tiles of
// kq_grp_tr_tile (one group each), block b taking a contiguous range.
template <typename T>
KQ_DEV void kq_grp_dcast_tr_impl(const T *x, int rows, int cols, const int *offsets, int ngroups, const int *flag, u32 *amax,
		u8 *out_row, u8 *out_col, const float *scale, float *scale_inv, int fmt) {
	__shared__ u8 tile[16][33];
	kq_grp_dcast_tiles(flag, amax, scale, scale_inv, ngroups, rows / 16, (cols + 31) / 32, 16, 32, tile,
		[&](int r0, int c0, kq_grp_run &run, u8 (*sm)[33]) {
			const int g = kq_group(offsets, ngroups, r0);
			const int goff = offsets[g], gn = offsets[g + 1] - goff;
			run.to(g);
			kq_grp_tr_tile<T, true>(x, cols, r0, c0, goff, gn, run.s, out_row, out_col, fmt, sm, run.m);
		});
}

// kq_grp_dupdate, one block per group g: raises history[g][0] to amax[g]
// (as quant.State.RecordAmax: only a larger amax replaces it) and, with
// update, runs group g's delayed update (kq_delayed_update_impl) on its
// history and scale[g].
extern "C" __global__ void __launch_bounds__(1024) kq_grp_dupdate(const int *flag, const u32 *amax, float *scale,
		float *history, int len, float fp8max, int margin, int most_recent, int update) {
	if (*flag != 0) return;
	const int g = (int)blockIdx.x;
	float *h = history + (long long)g * len;
	if (threadIdx.x == 0) {
		float a = __uint_as_float(amax[g]);
		if (a > h[0]) h[0] = a;
	}
	if (!update) return;
	__syncthreads();
	kq_delayed_update_impl(h, len, scale + g, 0, fp8max, margin, most_recent);
}

#define KQ_GROUPED_DELAYED_KERNELS(SUF, T)                                                              \
	extern "C" __global__ void __launch_bounds__(256, 3) kq_grp_dcast_##SUF(const T *x, int rows,       \
			int cols, const int *offsets, int ngroups, const int *flag, u32 *amax, u8 *out,           \
			const float *scale, float *scale_inv, int fmt, int vec) {                                 \
		kq_grp_dcast_impl<T>(x, rows, cols, offsets, ngroups, flag, amax, out, scale, scale_inv, fmt, vec); \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256, 3) kq_grp_dcast_trw_##SUF(const T *x, int rows,   \
			int cols, const int *offsets, int ngroups, const int *flag, u32 *amax, u8 *out_row,       \
			u8 *out_col, const float *scale, float *scale_inv, int fmt) {                             \
		kq_grp_dcast_trw_impl<T>(x, rows, cols, offsets, ngroups, flag, amax, out_row, out_col, scale,  \
			scale_inv, fmt);                                                                        \
	}                                                                                                   \
	extern "C" __global__ void __launch_bounds__(256) kq_grp_dcast_tr_##SUF(const T *x, int rows,       \
			int cols, const int *offsets, int ngroups, const int *flag, u32 *amax, u8 *out_row,       \
			u8 *out_col, const float *scale, float *scale_inv, int fmt) {                             \
		kq_grp_dcast_tr_impl<T>(x, rows, cols, offsets, ngroups, flag, amax, out_row, out_col, scale,   \
			scale_inv, fmt);                                                                        \
	}

KQ_GROUPED_DELAYED_KERNELS(f32, float)
KQ_GROUPED_DELAYED_KERNELS(bf16, kq_bf16)
KQ_GROUPED_DELAYED_KERNELS(f16, kq_f16)
