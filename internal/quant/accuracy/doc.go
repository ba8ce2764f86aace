// Package accuracy measures how far a dequantized tensor is from the input
// it was quantized from: signal-to-noise ratio in dB, maximum absolute
// error, and counts of saturated and flushed-to-zero elements.
//
// Definitions (decided here; the contract names the metrics only):
//
//   - Only elements whose input is finite take part in SNR and max abs
//     error; non-finite inputs are counted in NonFinite.
//   - SNR = 10·log10(Σx² / Σ(x−x̂)²), sums in float64; +Inf when the error
//     is zero (also for an all-zero input), and -Inf when the signal is zero
//     but the error is not. JSON cannot hold infinities: callers that
//     serialise must map them.
//   - An element is saturated when the conversion clamped it: its code is
//     the format's largest magnitude and |x| ≥ |x̂|·(max + half the step
//     below max)/max, so it would have rounded past the largest code had the
//     format more range. One that merely rounded to the largest code is not
//     (Clamped). The agent reports this count as the run's saturated field.
//   - An element is flushed to zero when x ≠ 0 (and finite) but x̂ = 0.
package accuracy
