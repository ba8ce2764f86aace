// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package philox

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBlockKnownAnswers(t *testing.T) {
	// Known-answer vectors of Random123 (kat_vectors, philox4x32 10 rounds).
	cases := []struct {
		name string
		ctr  Counter
		key  Key
		want [4]uint32
	}{
		{"zero counter and key", Counter{}, Key{}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{"all ones", Counter{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, Key{0xffffffff, 0xffffffff},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{"digits of pi", Counter{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, Key{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Block(tc.ctr, tc.key)); diff != "" {
				t.Errorf("Block(%08x, %08x) (-want +got):\n%s", tc.ctr, tc.key, diff)
			}
		})
	}
}

func TestByteStreamLayout(t *testing.T) {
	const seed = 0x0123456789ABCDEF
	s := NewByteStream(seed, OperandColumnwise, 3)
	for _, n := range []uint64{0, 1, 5, 15, 16, 17, 1 << 36, 1<<36 + 13, 40, 2} {
		b := n / 16
		w := Block(Counter{uint32(b), uint32(b >> 32), OperandColumnwise, 3}, Key{0x89ABCDEF, 0x01234567})
		j := n % 16
		want := uint8(w[j/4] >> (8 * (j % 4)))
		if got := s.At(n); got != want {
			t.Errorf("At(%d) = %#02x, want %#02x", n, got, want)
		}
	}
}

func TestByteStreamOperandsAndGroupsDiffer(t *testing.T) {
	a, b, c := NewByteStream(7, OperandRowwise, 0), NewByteStream(7, OperandColumnwise, 0), NewByteStream(7, OperandRowwise, 1)
	same := 0
	for n := range uint64(256) {
		x := a.At(n)
		if x == b.At(n) && x == c.At(n) {
			same++
		}
	}
	if same > 8 {
		t.Errorf("%d of 256 bytes equal across operand and group streams", same)
	}
}

func BenchmarkBlock(b *testing.B) {
	var sink uint32
	for i := range b.N {
		w := Block(Counter{uint32(i)}, Key{1, 2})
		sink ^= w[0]
	}
	_ = sink
}
