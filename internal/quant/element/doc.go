// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package element converts float32 values to and from the narrow element
// types of the quantization contract (docs/quantization-formats.md):
// E4M3 ("fn"), E5M2, E2M1 (FP4) and the E8M0 scale type, and widens BF16
// and FP16 bit patterns to float32.
//
// Every conversion from float32 is a single round-to-nearest-even with
// saturation to the largest finite value (the PTX "cvt.rn.satfinite"
// behaviour), implemented with integer operations on the IEEE-754 bit
// pattern so that it is both exact and fast enough for the reference
// backend's throughput budget. The byte values produced are the contract:
//
//   - NaN of either sign becomes 0x7F for E4M3 and E5M2 (the sign is dropped,
//     as measured on an H200 with CUDA 13.0) and 0x7 (+6) for E2M1, which
//     has no NaN encoding (our choice, to be checked on Blackwell).
//   - +inf and finite values beyond the maximum become +max: 0x7E (E4M3),
//     0x7B (E5M2), 0x7 (E2M1); -inf and values below -max become -max:
//     0xFE, 0xFB, 0xF.
//   - Values that round to zero keep their sign (0x80 for E4M3/E5M2, 0x8 for
//     E2M1), as IEEE conversions do.
//
// E2M1 codes are 4-bit values in the low nibble of a byte; packing two per
// byte is the job of the caller (lower element index in the low nibble).
//
// Decision (not fixed by the contract): stochastic rounding to E2M1 with 8
// random bits r rounds a magnitude v lying between adjacent representable
// values lo < v < hi up to hi exactly when r < floor(256 * (v-lo)/(hi-lo)),
// which is what "add r to the eight bits below the kept mantissa and
// truncate" gives. Representable values are never moved; NaN, infinities
// and magnitudes at or beyond 6 follow the round-to-nearest rules above.
//
// The E8M0 conversion is TransformerEngine's float_to_e8m0 (contract v2):
// the exponent of t rounded up, except when it is already 0xFE; a subnormal
// t rounds up too, to code 1 when it lies above 2^-127 (code 0's value).
package element
