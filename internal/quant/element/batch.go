// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package element

import "math"

// The batch encoders below are the hot loops of the reference backend. Each
// calls its format's fast path (e4m3Normal, e5m2Normal, e2m1Fast), which the
// compiler inlines, and falls back to encodeSlow for zero, subnormals,
// saturation and NaN: the compiler will not inline a function that also
// calls the slow path, so the loops cannot call ToE4M3 and friends. The
// tests check them against the scalar functions on every BF16 input.

// EncodeScaled sets dst[i] to the code of float32(src[i]*scale) for
// i < len(src); dst must be at least as long as src. For E2M1 the codes are
// unpacked, one per byte. Every multiply is a float32 multiply rounded to
// nearest even, as the contract requires. E8M0 is not an element type and
// leaves dst untouched.
func (t Type) EncodeScaled(dst []uint8, src []float32, scale float32) {
	switch t {
	case E4M3:
		encodeE4M3(dst, src, scale)
	case E5M2:
		encodeE5M2(dst, src, scale)
	case E2M1:
		encodeE2M1(dst, src, scale)
	}
}

// EncodeScaledEach is EncodeScaled with one scale per element:
// dst[i] = code(src[i]*scales[i]). It serves column blocks, where a row of
// input crosses many blocks with different scales.
func (t Type) EncodeScaledEach(dst []uint8, src, scales []float32) {
	switch t {
	case E4M3:
		encodeE4M3Each(dst, src, scales)
	case E5M2:
		encodeE5M2Each(dst, src, scales)
	case E2M1:
		encodeE2M1Each(dst, src, scales)
	}
}

func encodeE4M3(dst []uint8, src []float32, scale float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		b := math.Float32bits(x * scale)
		if c, ok := e4m3Normal(b); ok {
			dst[i] = c
		} else {
			dst[i] = E4M3.encodeSlow(b)
		}
	}
}

func encodeE4M3Each(dst []uint8, src, scales []float32) {
	dst, scales = dst[:len(src)], scales[:len(src)]
	for i, x := range src {
		b := math.Float32bits(x * scales[i])
		if c, ok := e4m3Normal(b); ok {
			dst[i] = c
		} else {
			dst[i] = E4M3.encodeSlow(b)
		}
	}
}

func encodeE5M2(dst []uint8, src []float32, scale float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		b := math.Float32bits(x * scale)
		if c, ok := e5m2Normal(b); ok {
			dst[i] = c
		} else {
			dst[i] = E5M2.encodeSlow(b)
		}
	}
}

func encodeE5M2Each(dst []uint8, src, scales []float32) {
	dst, scales = dst[:len(src)], scales[:len(src)]
	for i, x := range src {
		b := math.Float32bits(x * scales[i])
		if c, ok := e5m2Normal(b); ok {
			dst[i] = c
		} else {
			dst[i] = E5M2.encodeSlow(b)
		}
	}
}

func encodeE2M1(dst []uint8, src []float32, scale float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		b := math.Float32bits(x * scale)
		if c, ok := e2m1Fast(b); ok {
			dst[i] = c
		} else {
			dst[i] = E2M1.encodeSlow(b)
		}
	}
}

func encodeE2M1Each(dst []uint8, src, scales []float32) {
	dst, scales = dst[:len(src)], scales[:len(src)]
	for i, x := range src {
		b := math.Float32bits(x * scales[i])
		if c, ok := e2m1Fast(b); ok {
			dst[i] = c
		} else {
			dst[i] = E2M1.encodeSlow(b)
		}
	}
}

// e2m1Below1 returns the E2M1 code of a magnitude below 1 (float32 bits a):
// 2|v| rounded to an integer, nearest even, which is the code (0, 1, or 2
// for 1.0). Adding 2^23 makes the float32 addition do that rounding; 2|v| is
// exact, so a fused multiply-add would give the same bits. Normalized
// E2M1 data puts about a third of its elements here, which is why this
// case is not left to the slow path.
func e2m1Below1(a uint32) uint8 {
	return uint8(math.Float32bits(math.Float32frombits(a)*2+0x1p23) - 0x4B000000)
}

// AbsMax returns the largest magnitude in xs, ignoring NaN (the contract's
// amax: NaN elements do not raise it); an infinity gives +Inf, an empty
// slice 0. It compares bit patterns, which order nonnegative floats the same
// way as their values.
func AbsMax(xs []float32) float32 {
	// Four independent maxima keep the loop free of a serial dependency,
	// and NaNs are mapped to zero without a branch, so random data costs
	// no mispredictions.
	var m0, m1, m2, m3 uint32
	i := 0
	for ; i+4 <= len(xs); i += 4 {
		m0 = max(m0, nanToZero(math.Float32bits(xs[i])&absMask))
		m1 = max(m1, nanToZero(math.Float32bits(xs[i+1])&absMask))
		m2 = max(m2, nanToZero(math.Float32bits(xs[i+2])&absMask))
		m3 = max(m3, nanToZero(math.Float32bits(xs[i+3])&absMask))
	}
	for ; i < len(xs); i++ {
		m0 = max(m0, nanToZero(math.Float32bits(xs[i])&absMask))
	}
	return math.Float32frombits(max(max(m0, m1), max(m2, m3)))
}

// nanToZero maps the bit pattern of a NaN magnitude to zero.
func nanToZero(a uint32) uint32 {
	if a > infBits {
		return 0
	}
	return a
}
