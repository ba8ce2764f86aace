// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// kquant timing helper: the lead-in that the benchmarks queue just before
// each timed region (kernels.LeadIn says why they queue one at all).
//
// kq_l2_sweep reads a scratch buffer larger than L2 and writes nothing, so
// L2 is left holding clean lines of the scratch: none of the step's input,
// and nothing the step's own traffic must write back to memory first. A
// memset lead-in, which the benchmarks used before, leaves L2 full of
// dirty lines, and writing them back (up to the L2's size, 50 MiB on
// Hopper) was charged to whatever ran next: about 8 us of a step,
// measured as the gap between a step's time and its kernels' ncu durations
// (ncu starts each kernel from a flushed L2).
//
// Self-contained (no includes) so that the stamp on timing.ptx covers
// everything it came from.

typedef unsigned int u32;

// kq_l2_sweep XORs the n 16-byte words of p, 4 independent loads a thread
// at a time so that every SM keeps enough bytes in flight to read at
// memory speed. The XOR is stored to sink only if it equals magic, which
// the caller makes impossible (a zeroed buffer, magic != 0): the compiler
// cannot drop the loads, and the sweep writes nothing.
extern "C" __global__ void __launch_bounds__(256) kq_l2_sweep(const uint4 *p, long long n, u32 *sink, u32 magic) {
	const long long stride = (long long)gridDim.x * blockDim.x;
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	uint4 acc = make_uint4(0, 0, 0, 0);
	for (; i + 3 * stride < n; i += 4 * stride) {
		const uint4 a = p[i], b = p[i + stride], c = p[i + 2 * stride], d = p[i + 3 * stride];
		acc.x ^= a.x ^ b.x ^ c.x ^ d.x;
		acc.y ^= a.y ^ b.y ^ c.y ^ d.y;
		acc.z ^= a.z ^ b.z ^ c.z ^ d.z;
		acc.w ^= a.w ^ b.w ^ c.w ^ d.w;
	}
	for (; i < n; i += stride) {
		const uint4 a = p[i];
		acc.x ^= a.x;
		acc.y ^= a.y;
		acc.z ^= a.z;
		acc.w ^= a.w;
	}
	const u32 r = acc.x ^ acc.y ^ acc.z ^ acc.w;
	if (r == magic)
		*sink = r;
}
