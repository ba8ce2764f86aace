// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package accuracy measures how far a dequantized tensor is from the input
// it was quantized from: signal-to-noise ratio in dB, maximum absolute
// error, and counts of saturated and flushed-to-zero elements.
//
// Definitions:
//
//   - Only elements whose input is finite take part in SNR and max abs
//     error; non-finite inputs are counted in NonFinite.
//   - SNR = 10·log10(Σx² / Σ(x−x̂)²), sums in float64; +Inf when the error
//     is zero (also for an all-zero input), and -Inf when the signal is zero
//     but the error is not. JSON cannot hold infinities: callers that
//     serialise must map them.
//   - Saturated and flushed-to-zero counts follow the contract's one rule
//     (docs/quantization-formats.md), implemented once, by Count: an element
//     is saturated when it is finite and |x × scale| (after the RHT where
//     it applies) is above the format's largest finite value; flushed when
//     it is finite and nonzero and its code is ±0; both on the rowwise
//     operand when there is one, else on the columnwise one. Reference and
//     GPU results, accuracy results and benchmarks all count through Count.
package accuracy
