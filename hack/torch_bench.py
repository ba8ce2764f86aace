#!/usr/bin/env python3
"""PyTorch baseline for kquant's block FP8 and NVFP4 quantize benchmarks.

The same quantizations as kernels/ (Float8BlockScaling 1x128 rowwise with
power-of-2 scales; NVFP4 1x16 rowwise with the tensor scale, E4M3 block
scales, E2M1 round-to-nearest-even and nibble packing), written in plain
PyTorch, timed eager and under torch.compile on BF16 inputs of 8192^2 and
16384^2, next to a device-to-device copy of the same run. Timings are the
median of CUDA-event times over 20 runs after warm-up.

Usage: python3 hack/torch_bench.py [--no-compile]
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


def median_ms(fn, x, iters=20):
    for _ in range(3):
        fn(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(x)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    compile_too = "--no-compile" not in sys.argv
    dev = torch.cuda.get_device_name()
    print(f"torch {torch.__version__}, {dev}, CUDA {torch.version.cuda}")
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    cms = median_ms(lambda _: dst.copy_(src), None)
    copy_bw = 2 * (1 << 30) / (cms * 1e-3) / 1e9
    print(f"device-to-device copy: {cms:.3f} ms for 1 GiB, {copy_bw:.0f} GB/s (read+write)")
    del src, dst
    print(f"{'shape':<12} {'step':<34} {'gpu-ms':>7} {'GB/s':>7} {'ofcopy':>7}")
    for n in (8192, 16384):
        x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        el = n * n
        cases = [("block FP8 1x128 row", block_fp8_row, 2 * el + el + 4 * el // 128),
                 ("nvfp4 row (amax+quant)", nvfp4_row, 2 * 2 * el + el // 2 + el // 16)]
        for name, fn, nbytes in cases:
            variants = [("eager", fn)]
            if compile_too:
                variants.append(("torch.compile", torch.compile(fn, dynamic=False)))
            for vname, f in variants:
                ms = median_ms(f, x)
                bw = nbytes / (ms * 1e-3) / 1e9
                print(f"{n}x{n:<7} {name + ' ' + vname:<34} {ms:7.3f} {bw:7.0f} {100 * bw / copy_bw:6.0f}%")
        del x
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
