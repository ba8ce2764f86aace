// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// kquant grouped (MoE) quantize support: the device prefix sum of the
// split sizes and the alignment check, so that a grouped step reads no
// split size on the host and can be captured once into a CUDA graph and
// replayed with new split sizes.
//
// kq_grp_offsets turns splits[G] (device int32 row counts) into
// offsets[G+1] (offsets[0] = 0, offsets[g+1] = offsets[g] + splits[g]) with
// one block-wide scan, and writes *flag: 0 when every split is a
// nonnegative multiple of align and they add up to total rows; g + 1 for the
// first group g that breaks the alignment (or is negative); -1 when the
// sizes are aligned but do not add up to total. Every grouped quantize
// kernel reads *flag first and does nothing when it is set, so a bad split
// vector cannot make a kernel index out of bounds; the host reads the flag
// after the step and names the group. The kernel also zeroes nzero words at
// zero (the per-group amax accumulators of the step), saving a memset node.
//
// Self-contained (no includes) so that the stamp on grouped.ptx covers
// everything it came from.

typedef unsigned int u32;

#define KQ_SCAN_THREADS 1024

extern "C" __global__ void __launch_bounds__(KQ_SCAN_THREADS) kq_grp_offsets(const int *splits, int ngroups, int total,
		int align, int *offsets, int *flag, u32 *zero, int nzero) {
	__shared__ long long buf[2][KQ_SCAN_THREADS];
	__shared__ int bad;
	__shared__ long long carry;
	const int t = threadIdx.x;
	if (t == 0) {
		bad = 0x7FFFFFFF;
		carry = 0;
		offsets[0] = 0;
	}
	for (int i = t; i < nzero; i += KQ_SCAN_THREADS) zero[i] = 0u;
	__syncthreads();
	// Chunks of 1024 groups, each scanned Hillis-Steele style and chained
	// through carry (64 groups, the MoE case, is one chunk).
	for (int c0 = 0; c0 < ngroups; c0 += KQ_SCAN_THREADS) {
		const int g = c0 + t;
		long long v = 0;
		if (g < ngroups) {
			const int s = splits[g];
			if (s < 0 || s % align != 0) atomicMin(&bad, g);
			v = s < 0 ? 0 : s;
		}
		int cur = 0;
		buf[cur][t] = v;
		__syncthreads();
		for (int d = 1; d < KQ_SCAN_THREADS; d <<= 1) {
			const long long add = t >= d ? buf[cur][t - d] : 0;
			buf[cur ^ 1][t] = buf[cur][t] + add;
			cur ^= 1;
			__syncthreads();
		}
		const long long incl = buf[cur][t] + carry;
		if (g < ngroups) offsets[g + 1] = (int)min(incl, 0x7FFFFFFFLL);
		__syncthreads();
		if (t == KQ_SCAN_THREADS - 1) carry = incl;
		__syncthreads();
	}
	if (t == 0) {
		if (bad != 0x7FFFFFFF) {
			*flag = bad + 1;
		} else {
			*flag = carry == (long long)total ? 0 : -1;
		}
	}
}
