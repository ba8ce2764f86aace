// Package kernels holds kquant's CUDA kernels: their CUDA C sources
// (*.cu), the PTX generated from them by hack/gen-kernels.sh (committed, so
// that building kquant needs no CUDA toolkit), and typed Go launchers.
//
// The PTX is embedded with go:embed and JIT-compiled by the driver when a
// Set is loaded on a device, for one of two targets (Target): compute_90
// (*.ptx) on compute capability 9.0 and newer, compute_80 (ptx80/*.ptx.gz,
// the FP8 conversions in software, kq_fp8_sw.cuh) on 8.x; both give the
// same bytes. Each PTX file begins with the sha256 of the source it came
// from and the *.cuh headers; a unit test fails when a source changed
// without its PTX being regenerated.
//
// What the kernels compute is fixed, bit for bit, by the numerical contract
// in docs/quantization-formats.md; the reference quantizers in internal/quant
// are the oracle that GPU tests (build tag gpu) compare them against.
package kernels
