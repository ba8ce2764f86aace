// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package element

import "math"

// BF16ToFloat32 widens a bfloat16 bit pattern to float32 exactly (bfloat16 is
// the upper half of a float32).
func BF16ToFloat32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// Float32ToBF16 rounds x to bfloat16, round to nearest even, with IEEE
// overflow to infinity. NaN stays NaN (quieted, sign kept).
func Float32ToBF16(x float32) uint16 {
	b := math.Float32bits(x)
	if b&absMask > infBits {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7FFF + (b>>16)&1) >> 16)
}

// FP16ToFloat32 widens an IEEE binary16 bit pattern to float32 exactly,
// keeping NaN payloads.
func FP16ToFloat32(h uint16) float32 {
	return widenIEEE(uint32(h&0x8000)<<16, uint32(h>>10)&0x1F, uint32(h&0x3FF), 10)
}

// Float32ToFP16 rounds x to IEEE binary16, round to nearest even, with
// overflow to infinity (not saturating: this is ordinary FP16 storage, not a
// quantized format). NaN stays NaN (quieted, sign kept).
func Float32ToFP16(x float32) uint16 {
	b := math.Float32bits(x)
	a := b & absMask
	sign := uint16(b>>16) & 0x8000
	switch {
	case a > infBits:
		return sign | 0x7E00 | uint16(a>>13)&0x3FF
	case a >= 0x477FF000: // 65520, the midpoint to the next binade: rounds to inf
		return sign | 0x7C00
	case a >= 0x38800000: // 2^-14, smallest normal
		return sign | uint16((a+0xFFF+(a>>13)&1)>>13-112<<10)
	default:
		return sign | uint16(subnormalCode(a, 126)) // 150 - 24
	}
}
