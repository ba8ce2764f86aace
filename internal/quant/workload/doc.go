// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package workload generates the deterministic inputs of a quantization job
// from a distribution and a seed, shared by kquantctl and the agent so that
// the same job gives the same bytes everywhere: the random stream is
// Philox 4x32-10 (package philox) and every transcendental step is pure
// float64 arithmetic in this package (a logarithm of its own, math.Sqrt,
// math.Frexp), written so that the compiler cannot fuse operations. The
// output therefore does not depend on the machine, the Go version's
// assembly math routines, or the number of goroutines.
//
// Streams: element n (row-major) of a tensor generated with seed s and
// stream id t draws from Philox with key = (uint32(s), uint32(s>>32)) and
// counter = (uint32(i), uint32(i>>32), t, lane<<16 | attempt), where i and
// lane depend on the distribution:
//
//   - Uniform on [-1, 1): i = n, lane 0, attempt 0; the value is
//     2·(w0>>8)·2^-24 − 1, exact in float32.
//   - Normal (standard): Marsaglia's polar method on pairs, i = n/2, lane 0;
//     v1, v2 = (w0 + 0.5)·2^-31 − 1, (w1 + 0.5)·2^-31 − 1 from attempt 0,
//     1, ... until 0 < s = v1² + v2² < 1; the pair is
//     v1·sqrt(−2 ln s / s), v2·sqrt(−2 ln s / s) and element n takes the
//     first for even n, the second for odd n.
//   - HeavyTailed: Student's t with 3 degrees of freedom (variance 3,
//     occasional large outliers), t = z0 / sqrt((z1² + z2² + z3²)/3), with
//     (z0, z1) the polar pair of i = n, lane 1 and (z2, z3) that of i = n,
//     lane 2.
//
// The float64 value is rounded to float32 (nearest even) and then, for
// BF16 or FP16 inputs, to that type (nearest even) and widened back
// exactly. Empty distribution and dtype mean the API defaults, Normal and
// BF16.
package workload
