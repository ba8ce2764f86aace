#!/usr/bin/env python3
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

"""PyTorch baseline for kquant's quantize benchmarks.

The same quantizations as kernels/, written in plain PyTorch, timed eager
and under torch.compile on BF16 inputs of 8192^2 and 16384^2, next to a
device-to-device copy of the same run:
- Float8BlockScaling 1x128 rowwise with power-of-2 scales;
- NVFP4 1x16 rowwise with the tensor scale, E4M3 block scales, E2M1
  round-to-nearest-even and nibble packing;
- MXFP8 rowwise: 1x32 blocks, E8M0 scales with TE's rounding (the exponent
  of amax * float32(1/448), rounded up), E4M3 data;
- Float8CurrentScaling: the tensor amax, the scale 448/amax, the saturating
  E4M3 cast, rowwise, and rowwise + the transposed (columnwise) data as
  TE's cast_transpose makes them.
Bytes are counted as kquant's benchmark counts them (kernels/
gpu_bench_test.go: current scaling reads its input twice, amax pass and
cast), and "x-min" is the time over the minimal-traffic time (input read
once, outputs written once) at the copy bandwidth. Timings are the median
of CUDA-event times over 20 runs after warm-up.

Usage: python3 hack/torch_bench.py [--no-compile] [--only NAME[,NAME...]]
(names: block, nvfp4, mxfp8, mxfp8_k, current, current_t; mxfp8_k is
MXFP8 rowwise with kquant's step outputs: the swizzled scales too and the
tensor amax)
"""
import statistics
import sys

import torch


def block_fp8_row(x):
    m, k = x.shape
    b = x.float().view(m, k // 128, 128)
    amax = b.abs().amax(-1)
    scale = torch.where(amax > 0, 448.0 / amax, torch.ones_like(amax))
    scale = torch.where(torch.isinf(scale), torch.full_like(scale, 3.4028234663852886e38), scale)
    scale = torch.exp2(torch.floor(torch.log2(scale)))  # power of 2, rounded down
    q = (b * scale[..., None]).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    return q.view(m, k), 1.0 / scale


def nvfp4_row(x):
    m, k = x.shape
    xf = x.float()
    amax = xf.abs().amax()
    s = torch.where(amax > 0, 2688.0 / amax, torch.ones_like(amax))
    b = xf.view(m, k // 16, 16)
    bamax = b.abs().amax(-1)
    d = (bamax * (s / 6.0)).clamp(max=448.0).to(torch.float8_e4m3fn)
    f = 1.0 / (d.float() * (1.0 / s))
    f = torch.nan_to_num(f, posinf=3.4028234663852886e38)
    y = b * f[..., None]
    a = y.abs()
    code = ((a > 0.25).to(torch.uint8) + (a >= 0.75) + (a > 1.25) + (a >= 1.75)
            + (a > 2.5) + (a >= 3.5) + (a > 5.0))
    code = code | ((y < 0).to(torch.uint8) << 3)
    code = code.view(m, k)
    packed = code[:, 0::2] | (code[:, 1::2] << 4)
    return packed, d


FP8_MAX = 448.0
FLT_MAX = 3.4028234663852886e38
INV_FP8_MAX = 1.0 / 448.0  # rounded to float32 where it multiplies a float32 tensor


def mxfp8_row(x):
    m, k = x.shape
    b = x.view(m, k // 32, 32).float()
    amax = b.abs().amax(-1)
    bits = (amax * INV_FP8_MAX).view(torch.int32)
    exp = (bits >> 23) & 0xFF
    man = bits & 0x7FFFFF
    # TE: round the exponent up when the mantissa is nonzero (not past 254,
    # not for subnormals); inf -> 254, NaN -> 255.
    e = exp + ((man != 0) & (exp != 0) & (exp < 0xFE)).to(torch.int32)
    e = torch.where(exp == 0xFF, 254 + (man != 0).to(torch.int32), e)
    f = ((254 - e) << 23).view(torch.float32)
    f = torch.where(e == 254, 2.0 ** -127, f)
    f = torch.where(e == 255, float("nan"), f)
    q = (b * f[..., None]).to(torch.float8_e4m3fn)
    return q.view(m, k), e.to(torch.uint8)


def mxfp8_row_as_kquant(x):
    """mxfp8_row plus what kquant's rowwise MXFP8 step also writes: the
    scales in TE's GEMM-swizzled layout beside the plain ones (512-byte
    blocks of 128 rows x 4 scale columns, byte (r % 32) * 16 + (r // 32 % 4)
    * 4 + k % 4) and the tensor amax. Shapes whose scale matrix needs no
    padding (rows % 128 == 0, cols % 128 == 0), as benchmarked here."""
    q, e = mxfp8_row(x)
    m, k = e.shape
    swz = e.view(m // 128, 4, 32, k // 4, 4).permute(0, 3, 2, 1, 4).contiguous()
    return q, e, swz, x.abs().amax()


def fp8_current_row(x):
    amax = x.abs().amax().float()
    ok = (amax > 0) & torch.isfinite(amax)
    scale = torch.where(ok, FP8_MAX / amax, torch.ones_like(amax))
    scale = torch.where(torch.isinf(scale), torch.full_like(scale, FLT_MAX), scale)
    q = (x.float() * scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q, 1.0 / scale


def fp8_current_row_col(x):
    q, scale_inv = fp8_current_row(x)
    qt = q.view(torch.uint8).t().contiguous().view(torch.float8_e4m3fn)
    return q, qt, scale_inv


# A read of a scratch larger than L2 queued before each start event, as
# kquant's Measure does (kernels.LeadIn): the GPU is busy with it while the
# host enqueues the timed call, so the events time the GPU's work and not
# the launch latency; L2 holds none of the input and no dirty lines (a memset
# there, as before, left up to L2's size of write-back to the timed call).
# torch.compile's Python wrapper takes longer to enqueue its kernels than the
# read takes on an H200 (about 60 us), so a spin of about 1 ms follows it:
# without it, the H200's torch.compile times at 8192^2 included host time.
LEAD_IN = None
LEAD_IN_SPIN_CYCLES = 2_000_000


def median_ms(fn, x, iters=20):
    global LEAD_IN
    if LEAD_IN is None:
        LEAD_IN = torch.zeros(256 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(3):
        fn(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        LEAD_IN.max()
        torch.cuda._sleep(LEAD_IN_SPIN_CYCLES)
        a.record()
        fn(x)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    compile_too = "--no-compile" not in sys.argv
    only = None
    if "--only" in sys.argv:
        only = set(sys.argv[sys.argv.index("--only") + 1].split(","))
    dev = torch.cuda.get_device_name()
    print(f"torch {torch.__version__}, {dev}, CUDA {torch.version.cuda}")
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    cms = median_ms(lambda _: dst.copy_(src), None)
    copy_bw = 2 * (1 << 30) / (cms * 1e-3) / 1e9
    print(f"device-to-device copy: {cms:.3f} ms for 1 GiB, {copy_bw:.0f} GB/s (read+write)")
    del src, dst
    print(f"{'shape':<12} {'step':<42} {'gpu-ms':>7} {'GB/s':>7} {'ofcopy':>7} {'x-min':>6}", flush=True)
    for n in (8192, 16384):
        x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        el = n * n
        # (key, name, function, bytes counted, minimal-traffic bytes)
        cases = [("block", "block FP8 1x128 row", block_fp8_row, 2 * el + el + 4 * el // 128, 2 * el + el + 4 * el // 128),
                 ("nvfp4", "nvfp4 row (amax+quant)", nvfp4_row, 2 * 2 * el + el // 2 + el // 16, 2 * el + el // 2 + el // 16),
                 ("mxfp8", "mxfp8 row", mxfp8_row, 2 * el + el + el // 32, 2 * el + el + el // 32),
                 ("mxfp8_k", "mxfp8 row +swizzled +amax", mxfp8_row_as_kquant, 2 * el + el + 2 * el // 32,
                  2 * el + el + 2 * el // 32),
                 ("current", "fp8 current row (amax+cast)", fp8_current_row, 2 * 2 * el + el, 2 * el + el),
                 ("current_t", "fp8 current row+col (amax+ct)", fp8_current_row_col, 2 * 2 * el + 2 * el, 2 * el + 2 * el)]
        for key, name, fn, nbytes, minbytes in cases:
            if only is not None and key not in only:
                continue
            variants = [("eager", fn)]
            if compile_too:
                variants.append(("torch.compile", torch.compile(fn, dynamic=False)))
            for vname, f in variants:
                ms = median_ms(f, x)
                bw = nbytes / (ms * 1e-3) / 1e9
                xmin = ms / (minbytes / (copy_bw * 1e9) * 1e3)
                print(f"{n}x{n:<7} {name + ' ' + vname:<42} {ms:7.3f} {bw:7.0f} {100 * bw / copy_bw:6.0f}% {xmin:6.2f}", flush=True)
        del x
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
