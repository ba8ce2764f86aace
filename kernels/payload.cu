// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// kquant kernel-parameter payload: small host data (pointer arrays,
// per-group parameters) reaches the device inside a launch's parameters
// rather than through a host-to-device copy, as TE's
// nvte_copy_host_to_device_via_kernel does. The driver copies the
// parameters when the launch is queued, so the host buffer is free as soon
// as the launch call returns, and a stream capture stores the values in the
// graph node: a captured step replays the payload it was captured with.
//
// One launch carries up to 2 KiB; the host splits larger payloads.
//
// Self-contained (no includes) so that the stamp on payload.ptx covers
// everything it came from.

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

// kq_payload<B> is the by-value parameter: 16 + B bytes (2064 at most,
// under the driver's 4 KiB parameter limit). dst is the device address the
// n bytes go to. The driver copies the whole parameter block at every
// launch, so small payloads take a kernel with a small block: one per size
// class of B = 64, 256, 512, 1024 and 2048 bytes.
template <u32 B> struct kq_payload {
	u64 dst;
	u32 n;
	u32 pad;
	u32 data[B / 4];
};

template <u32 B> __device__ __forceinline__ void kq_payload_body(const kq_payload<B> &p) {
	const u32 n = p.n;
	if ((p.dst & 3u) == 0) {
		u32 *dst = reinterpret_cast<u32 *>(p.dst);
		for (u32 i = threadIdx.x; i < n / 4; i += blockDim.x) dst[i] = p.data[i];
		u8 *tail = reinterpret_cast<u8 *>(p.dst);
		for (u32 i = (n & ~3u) + threadIdx.x; i < n; i += blockDim.x) tail[i] = (u8)(p.data[i >> 2] >> (8 * (i & 3u)));
		return;
	}
	u8 *dst = reinterpret_cast<u8 *>(p.dst);
	for (u32 i = threadIdx.x; i < n; i += blockDim.x) dst[i] = (u8)(p.data[i >> 2] >> (8 * (i & 3u)));
}

extern "C" __global__ void __launch_bounds__(256) kq_payload_copy(const kq_payload<2048> p) { kq_payload_body(p); }
extern "C" __global__ void __launch_bounds__(256) kq_payload_copy_1024(const kq_payload<1024> p) { kq_payload_body(p); }
extern "C" __global__ void __launch_bounds__(256) kq_payload_copy_512(const kq_payload<512> p) { kq_payload_body(p); }
extern "C" __global__ void __launch_bounds__(256) kq_payload_copy_256(const kq_payload<256> p) { kq_payload_body(p); }
extern "C" __global__ void __launch_bounds__(256) kq_payload_copy_64(const kq_payload<64> p) { kq_payload_body(p); }
