// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// kq_common.cuh: what every quantize kernel source shares (quantize.cu,
// block.cu, nvfp4.cu, mx2d.cu): the integer types, the inline-function
// qualifier, the element formats and per-tensor state words as the host
// passes them, the 16-bit input types and their exact widening to float32,
// the two-element FP8 conversion, the finiteness test and the group
// search of the grouped kernels. One definition each, so that a rule the
// contract (docs/quantization-formats.md) fixes is written once. A kernel's PTX stamp covers every kernels/*.cuh.
#pragma once

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define KQ_DEV static __device__ __forceinline__
#define KQ_FLT_MAX_BITS 0x7F7FFFFFu
#define KQ_QNAN_BITS 0x7FC00000u

#include "kq_constants.cuh"
#include "kq_fp8_sw.cuh"

// Element formats, as the host passes them.
#define KQ_E4M3 0
#define KQ_E5M2 1

// Per-tensor state: 8 words of device memory, zeroed once at allocation.
// ACC and TICKET are the amax reduction's scratch, NEXT and DONE the tile
// counter and the end ticket of kq_sched_claim, left zero by every kernel
// that uses them; AMAX, SCALE and SCALE_INV are the recipe state.
#define KQ_ST_ACC 0
#define KQ_ST_TICKET 1
#define KQ_ST_AMAX 2
#define KQ_ST_SCALE 3
#define KQ_ST_SCALE_INV 4
#define KQ_ST_NEXT 5
#define KQ_ST_DONE 6

// TransformerEngine's device-side no-op flag (TE PRs 3246 and 3271): a
// step kernel given a flag that holds exactly 1.0f returns before it reads
// or writes anything, so that a captured CUDA graph can skip a quantize
// at replay, chosen by a value in device memory, without being captured
// again. A null flag, or any other value (NaN included), runs the kernel.
// Every kernel of a step checks it, the amax and state kernels too: a
// skipped step leaves its outputs, its amax and the delayed-scaling
// history and scale as they were.
KQ_DEV bool kq_noop(const float *noop) { return noop != 0 && *noop == 1.0f; }

// The tile order of the persistent tiled kernels. A block's first AHEAD
// tiles are static (block b's k-th: b + k nblocks, nblocks the grid's
// blocks); each later one it claims, AHEAD rounds before it needs it
// (thread 0, once a round, the result passed on through shared memory),
// from the state's counter: tile AHEAD nblocks + NEXT++. The tiles in
// progress then stay one contiguous window of the row-major tile order,
// as with one block a tile, where static striding lets the blocks drift
// apart over the tensor (a copy-shaped kernel in 128x128 tiles at 2 blocks
// per SM, no arithmetic: 78-82% of copy bandwidth striding, 88% claiming;
// H200, hack/mempattern.cu). Without a state (st NULL) every tile is
// static: the result is static_tile, the tile AHEAD rounds on. The bytes
// are the same in either order. The counter goes back to zero at the end
// of the launch: in kernels with a fused amax the last block to commit it
// resets the counter (kq_sched_reset: every claim of the launch precedes
// its block's ticket); the others end with kq_sched_done.
template <int AHEAD>
KQ_DEV int kq_sched_claim(u32 *st, int nblocks, int static_tile) {
	return st != 0 ? AHEAD * nblocks + (int)atomicAdd(&st[KQ_ST_NEXT], 1u) : static_tile;
}
KQ_DEV void kq_sched_reset(u32 *st) { atomicExch(&st[KQ_ST_NEXT], 0u); }
// kq_sched_done ends a claiming block without an amax commit (thread 0,
// after its last claim; nothing without a state): the release-acquire
// ticket orders the block's claims before it, and the last block resets
// the counter and the ticket.
KQ_DEV void kq_sched_done(u32 *st, int nblocks) {
	if (st == 0) return;
	u32 t;
	asm volatile("atom.acq_rel.gpu.add.u32 %0, [%1], 1;" : "=r"(t) : "l"(st + KQ_ST_DONE) : "memory");
	if (t != (u32)nblocks - 1u) return;
	kq_sched_reset(st);
	atomicExch(&st[KQ_ST_DONE], 0u);
}

// kq_tile_order is a persistent block's tiles of the current and the next
// AHEAD - 1 rounds in kq_sched_claim's order (tile(0) the current one):
// the one owner of the claim round. Each round, claim() (every thread
// calls it; thread 0 claims) before the round's barrier asks for the tile
// AHEAD rounds on, and advance() after that barrier moves the tiles up a
// round and takes the claimed one. The claim travels through two shared
// slots used in turn: a slot is written again two rounds later, after the
// next round's barrier, when every thread has read it.
//
// A tile is what Dec makes of its index: the index itself by default, or
// a struct that also carries what every thread would otherwise derive
// from it (its coordinates: a division by a run-time tile count per
// thread and round), computed once, by thread 0, as it claims. A tile
// type other than int has an int member ix, the index.
struct kq_tile_ident {
	__device__ __forceinline__ int operator()(int t) const { return t; }
};
__device__ __forceinline__ int kq_tile_ix(int t) { return t; }
template <typename Tile>
__device__ __forceinline__ int kq_tile_ix(const Tile &t) { return t.ix; }
template <typename Tile>
KQ_DEV Tile *kq_claim_slots() {
	__shared__ Tile slots[2];
	return slots;
}
template <int AHEAD, typename Dec = kq_tile_ident>
struct kq_tile_order {
	typedef decltype(Dec()(0)) Tile;
	u32 *st;
	int nblocks, sb;
	Dec dec;
	Tile t[AHEAD];
	// st: the tensor's state, NULL for static tiles; first: the block's
	// first tile; nblocks: the grid's blocks.
	__device__ __forceinline__ kq_tile_order(u32 *st_, int first, int nblocks_, Dec dec_ = Dec())
		: st(st_), nblocks(nblocks_), sb(0), dec(dec_) {
#pragma unroll
		for (int i = 0; i < AHEAD; i++) t[i] = dec(first + i * nblocks_);
	}
	__device__ __forceinline__ const Tile &tile(int i) const { return t[i]; }
	__device__ __forceinline__ void claim() const {
		if (threadIdx.x == 0)
			kq_claim_slots<Tile>()[sb] = dec(kq_sched_claim<AHEAD>(st, nblocks, kq_tile_ix(t[AHEAD - 1]) + nblocks));
	}
	__device__ __forceinline__ void advance() {
#pragma unroll
		for (int i = 0; i + 1 < AHEAD; i++) t[i] = t[i + 1];
		t[AHEAD - 1] = kq_claim_slots<Tile>()[sb];
		sb ^= 1;
	}
};

// 16-bit input types are carried as their bits.
struct kq_bf16 { u16 bits; };
struct kq_f16 { u16 bits; };

KQ_DEV float kq_f32(float v) { return v; }
KQ_DEV float kq_bf16_to_f32(u32 bits) { return __uint_as_float(bits << 16); }
KQ_DEV float kq_f16_to_f32(u32 bits) {
	// Widening half to float is exact; no .ftz, so subnormals survive.
	float f;
	u16 h = (u16)bits;
	asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
	return f;
}
KQ_DEV float kq_f32(kq_bf16 v) { return kq_bf16_to_f32(v.bits); }
KQ_DEV float kq_f32(kq_f16 v) { return kq_f16_to_f32(v.bits); }
// kq_plo and kq_phi widen the elements of a pair of 16-bit inputs in one
// word: the lower-index element is in the low half (little endian).
KQ_DEV float kq_plo(kq_bf16, u32 w) { return kq_bf16_to_f32(w & 0xFFFFu); }
KQ_DEV float kq_phi(kq_bf16, u32 w) { return kq_bf16_to_f32(w >> 16); }
KQ_DEV float kq_plo(kq_f16, u32 w) { return kq_f16_to_f32(w & 0xFFFFu); }
KQ_DEV float kq_phi(kq_f16, u32 w) { return kq_f16_to_f32(w >> 16); }
// kq_widen widens the 2 N 16-bit elements (type H) of N packed words w
// into v[0 .. 2 N), element 2 k from word k's low half.
template <typename H, int N>
KQ_DEV void kq_widen(const u32 *w, float *v) {
#pragma unroll
	for (int k = 0; k < N; k++) {
		v[2 * k] = kq_plo(H(), w[k]);
		v[2 * k + 1] = kq_phi(H(), w[k]);
	}
}
// kq_widen8 widens the eight 16-bit elements (type H) of a 16-byte word.
template <typename H>
KQ_DEV void kq_widen8(uint4 q, float v[8]) {
	const u32 w[4] = {q.x, q.y, q.z, q.w};
	kq_widen<H, 4>(w, v);
}

// kq_cvt2<fmt> converts two floats with one rounding, round to nearest even,
// saturating (the contract's rule, cvt.rn.satfinite where the target has
// it): lo in bits 0-7, hi in bits 8-15. The format is a template parameter
// (quantize.cu has the overload that takes it at run time).
template <int fmt>
KQ_DEV u32 kq_cvt2(float lo, float hi) { return kq_fp8x2(lo, hi, fmt == KQ_E4M3); }

KQ_DEV bool kq_finite(float x) { return (__float_as_uint(x) & 0x7FFFFFFFu) < 0x7F800000u; }

// kq_group returns the last g in [0, ngroups) with offsets[g] <= m: for m
// below offsets[ngroups], the (nonempty) group holding row m. offsets is
// nondecreasing with offsets[0] = 0 (empty groups repeat an entry). The
// grouped kernels find the group of their rows with it.
KQ_DEV int kq_group(const int *offsets, int ngroups, int m) {
	int lo = 0, hi = ngroups - 1;
	while (lo < hi) {
		int mid = (lo + hi + 1) >> 1;
		if (offsets[mid] <= m) lo = mid; else hi = mid - 1;
	}
	return lo;
}
