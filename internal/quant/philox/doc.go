// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package philox implements the Philox 4x32-10 counter-based random number
// generator (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC'11) and the exact mapping from a run's seed and an element's position
// to the 8 random bits that NVFP4 stochastic rounding consumes. A CUDA
// kernel reproduces the stream with curand's Philox4_32_10 or a few lines
// of its own, given this description.
//
// # The generator
//
// State: a 128-bit counter (c0, c1, c2, c3) and a 64-bit key (k0, k1), all
// uint32. One round, with M0 = 0xD2511F53 and M1 = 0xCD9E8D57 and hi/lo the
// upper and lower 32 bits of the 64-bit product:
//
//	(hi0, lo0) = M0 * c0
//	(hi1, lo1) = M1 * c2
//	c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
//
// Ten rounds; between consecutive rounds the key is bumped by the Weyl
// constants: k0 += 0x9E3779B9, k1 += 0xBB67AE85 (nine bumps in all). The
// output is the final counter value (w0, w1, w2, w3).
//
// # Stochastic-rounding bits
//
// For an operand (a matrix of codes as stored: rowwise [rows, cols], or the
// transposed columnwise operand [cols, rows]) with elements numbered
// n = row*width + col in that stored order:
//
//	key     = (uint32(seed), uint32(seed >> 32))
//	counter = (uint32(n/16), uint32((n/16) >> 32), operand, group)
//
// where operand is 0 for the rowwise and 1 for the columnwise operand and
// group is the group index of a grouped quantize (0 otherwise). n is the
// element's position in the operand, never a thread or block index, so
// that every kernel, tiling and the reference draw the same bits. One call
// gives 16 bytes; element n takes byte n%16, counting bytes little-endian
// across the words: byte j is bits 8*(j%4) .. 8*(j%4)+7 of word j/4.
package philox
