// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package kernels holds kquant's CUDA kernels: their CUDA C sources
// (*.cu), the PTX generated from them by hack/gen-kernels.sh and the
// machine code assembled from that PTX (both committed, so that building
// kquant needs no CUDA toolkit), and typed Go launchers.
//
// PTX and machine code are committed xz-compressed and embedded in the
// binary. A Set loads each module on the first use of one of its kernels,
// so that a run loads only what its
// recipe launches: the cubin of the device's exact SM when there is one
// (sass/sm_90, sm_100, sm_120/*.cubin.xz; milliseconds), else the PTX of
// one of two targets (Target), which the driver JIT-compiles (over a minute
// for every module of a fresh process with an empty JIT cache): compute_90
// (*.ptx.xz) on compute capability 9.0 and newer, compute_80 (ptx80/*.ptx.xz,
// the FP8 conversions in software, kq_fp8_sw.cuh) on 8.x; all give the same
// bytes. Each decompressed PTX file and cubin begins with the sha256
// of the source it came from and the *.cuh headers; a unit test fails when
// a source changed without its code being regenerated.
//
// Every kernel a quantize step launches takes TransformerEngine's
// device-side no-op flag as its last parameter (kq_noop in kq_common.cuh):
// Set.WithNoOp scopes a flag over a step's launches, which then skip
// when it holds 1, and the launchers pass a null flag otherwise, so their
// signatures do not carry it. The formats' limits the kernels compute
// with come from kq_constants.cuh, written from internal/quant/element.
//
// What the kernels compute is fixed, bit for bit, by the numerical contract
// in docs/quantization-formats.md; the reference quantizers in internal/quant
// are the oracle that GPU tests (build tag gpu) compare them against.
package kernels
