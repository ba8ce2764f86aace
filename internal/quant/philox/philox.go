// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package philox

// Philox 4x32 multipliers and Weyl key increments (Random123).
const (
	M0 = 0xD2511F53
	M1 = 0xCD9E8D57
	W0 = 0x9E3779B9
	W1 = 0xBB67AE85
)

// Rounds is the number of rounds of Philox 4x32-10.
const Rounds = 10

// Counter is the 128-bit Philox counter.
type Counter [4]uint32

// Key is the 64-bit Philox key.
type Key [2]uint32

func mulhilo(a, b uint32) (hi, lo uint32) {
	p := uint64(a) * uint64(b)
	return uint32(p >> 32), uint32(p)
}

// Block returns Philox 4x32-10 of the counter under the key.
func Block(c Counter, k Key) [4]uint32 {
	c0, c1, c2, c3 := c[0], c[1], c[2], c[3]
	k0, k1 := k[0], k[1]
	for r := range Rounds {
		if r > 0 {
			k0 += W0
			k1 += W1
		}
		hi0, lo0 := mulhilo(M0, c0)
		hi1, lo1 := mulhilo(M1, c2)
		c0, c1, c2, c3 = hi1^c1^k0, lo1, hi0^c3^k1, lo0
	}
	return [4]uint32{c0, c1, c2, c3}
}

// KeyFromSeed splits a 64-bit seed into a key, low word first.
func KeyFromSeed(seed uint64) Key {
	return Key{uint32(seed), uint32(seed >> 32)}
}

// Operand numbers used in the counter's third word.
const (
	OperandRowwise    uint32 = 0
	OperandColumnwise uint32 = 1
)

// ByteStream hands out the stochastic-rounding byte of each element of one
// operand, caching the last Philox block so that a sequential walk costs one
// block per 16 elements. The zero value is not usable; call NewByteStream.
type ByteStream struct {
	key     Key
	operand uint32
	group   uint32
	block   uint64 // index of the cached block, or ^0 when none
	words   [4]uint32
}

// NewByteStream returns the stream for an operand of a (group of a) run
// seeded with seed.
func NewByteStream(seed uint64, operand, group uint32) *ByteStream {
	return &ByteStream{key: KeyFromSeed(seed), operand: operand, group: group, block: ^uint64(0)}
}

// At returns the random byte of element n of the operand.
func (s *ByteStream) At(n uint64) uint8 {
	if b := n / 16; b != s.block {
		s.words = Block(Counter{uint32(b), uint32(b >> 32), s.operand, s.group}, s.key)
		s.block = b
	}
	j := n % 16
	return uint8(s.words[j/4] >> (8 * (j % 4)))
}
