// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package element

import (
	"fmt"
	"math"
)

// Type names an element type of the contract.
type Type uint8

// The element types. The zero value is invalid so that a forgotten field is
// caught by Validate instead of silently meaning E4M3.
const (
	Invalid Type = iota
	E4M3
	E5M2
	E2M1
	E8M0
)

// format is what the package knows of one element type, each fact written
// once: the methods below read it, so that adding a type is one row.
type format struct {
	name      string
	maxFinite float32
	maxCode   uint8 // the code of +maxFinite
	signBit   uint8 // 0 for an unsigned type
	emax      int   // largest normal unbiased exponent; 0 where OCP MX has none
	encode    func(float32) uint8
	decode    func(uint8) float32
}

// formats is indexed by Type; Invalid's row is empty.
var formats = [...]format{
	E4M3: {name: "E4M3", maxFinite: 448, maxCode: 0x7E, signBit: 0x80, emax: 8, encode: ToE4M3, decode: E4M3ToFloat32},
	E5M2: {name: "E5M2", maxFinite: 57344, maxCode: 0x7B, signBit: 0x80, emax: 15, encode: ToE5M2, decode: E5M2ToFloat32},
	E2M1: {name: "E2M1", maxFinite: 6, maxCode: 0x7, signBit: 0x8, emax: 2, encode: ToE2M1, decode: E2M1ToFloat32},
	E8M0: {name: "E8M0", maxFinite: 0x1p127, maxCode: 0xFE, encode: E8M0RoundUp, decode: E8M0ToFloat32},
}

// format returns t's row, and ok false for Invalid or an undefined value.
func (t Type) format() (f format, ok bool) {
	if t == Invalid || int(t) >= len(formats) {
		return format{}, false
	}
	return formats[t], true
}

// String returns the contract's name of the type.
func (t Type) String() string {
	if f, ok := t.format(); ok {
		return f.name
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Validate reports whether t is one of the defined types.
func (t Type) Validate() error {
	if _, ok := t.format(); !ok {
		return fmt.Errorf("unknown element type %d", uint8(t))
	}
	return nil
}

// MaxFinite returns the largest finite magnitude of the type: 448 (E4M3),
// 57344 (E5M2), 6 (E2M1), 2^127 (E8M0). It returns 0 for an invalid type.
func (t Type) MaxFinite() float32 {
	f, _ := t.format()
	return f.maxFinite
}

// MaxCode returns the code of +MaxFinite: 0x7E, 0x7B, 0x7, 0xFE.
func (t Type) MaxCode() uint8 {
	f, _ := t.format()
	return f.maxCode
}

// SignBit returns the sign bit of a code of the type (0 for E8M0, which is
// unsigned).
func (t Type) SignBit() uint8 {
	f, _ := t.format()
	return f.signBit
}

// Bits returns the width of one code in bits.
func (t Type) Bits() int {
	if t == E2M1 {
		return 4
	}
	return 8
}

// Encode converts x with the type's round-to-nearest-even saturating rule
// (0 for an invalid type). It is a convenience for callers that pick the
// type at run time; hot loops call the typed functions directly.
func (t Type) Encode(x float32) uint8 {
	f, ok := t.format()
	if !ok {
		return 0
	}
	return f.encode(x)
}

// Decode returns the exact float32 value of a code of the type (NaN for an
// invalid type).
func (t Type) Decode(c uint8) float32 {
	f, ok := t.format()
	if !ok {
		return float32(math.NaN())
	}
	return f.decode(c)
}

// DecodeTable returns the value of every code, indexed by code. For E2M1
// only the low nibble is significant, so entries repeat every 16 codes.
// Dequantize loops use it to replace the bit decoding with a load.
func (t Type) DecodeTable() [256]float32 {
	var tab [256]float32
	for c := range tab {
		tab[c] = t.Decode(uint8(c))
	}
	return tab
}

// rneShift returns m / 2^s rounded to nearest, ties to even, for
// 1 <= s <= 24 and m < 2^24. Adding half-1 plus the lowest kept bit makes an
// exact half carry only when the kept value is odd.
func rneShift(m, s uint32) uint32 {
	return (m + (1 << (s - 1)) - 1 + (m>>s)&1) >> s
}

// subnormalCode converts the magnitude with float32 bits a, known to be below
// the target's smallest normal, to a target subnormal code: the value
// divided by the target's smallest subnormal, rounded to nearest even. base
// is 150 + log2(smallest subnormal), so that the shift of the 24-bit
// significand is base minus the float32 biased exponent. A result equal to
// 2^mantissaBits is the smallest normal, whose code has the same value.
func subnormalCode(a, base uint32) uint32 {
	e := a >> 23
	m := a & 0x7FFFFF
	if e == 0 {
		e = 1 // float32 subnormals share the exponent of the smallest normal
	} else {
		m |= 0x800000
	}
	s := base - e
	if s > 24 {
		// m < 2^24, so the quotient is below one half: rounds to zero.
		return 0
	}
	return rneShift(m, s)
}

// Float32 bit patterns of the thresholds used below.
const (
	absMask  = 0x7FFFFFFF
	infBits  = 0x7F800000
	e4m3Max  = 0x43E00000 // 448
	e4m3Min  = 0x3C800000 // 2^-6, smallest normal E4M3
	e5m2Max  = 0x47600000 // 57344
	e5m2Min  = 0x38800000 // 2^-14, smallest normal E5M2
	e2m1Max  = 0x40C00000 // 6
	e2m1Min  = 0x3F800000 // 1, smallest normal E2M1
	e2m1Four = 0x40800000 // 4
	e2m1Two  = 0x40000000 // 2
)

// encodeSlow is the part of t's conversion that the inlined fast paths
// leave out: NaN, saturation (infinities included: satfinite) and
// magnitudes below the smallest normal (zero and subnormal codes). b is the
// float32 bits of the value; t is E4M3, E5M2 or E2M1.
func (t Type) encodeSlow(b uint32) uint8 {
	var (
		sign          uint8
		nan, maxCode  uint8
		maxBits, base uint32 // base: see subnormalCode
	)
	switch t {
	case E4M3:
		sign, nan, maxCode, maxBits, base = uint8(b>>24)&0x80, 0x7F, 0x7E, e4m3Max, 141 // 150 - 9
	case E5M2:
		sign, nan, maxCode, maxBits, base = uint8(b>>24)&0x80, 0x7F, 0x7B, e5m2Max, 134 // 150 - 16
	default:
		sign, nan, maxCode, maxBits, base = uint8(b>>28)&0x8, 0x7, 0x7, e2m1Max, 149 // 150 - 1
	}
	a := b & absMask
	switch {
	case a > infBits:
		return nan
	case a >= maxBits:
		return sign | maxCode
	default:
		return sign | uint8(subnormalCode(a, base))
	}
}

// e4m3Normal, e5m2Normal and e2m1Fast are the fast paths of the
// conversions, each format's rounding written once: the code of the float32
// bits b, and ok false when b's magnitude is outside the range they handle
// (then encodeSlow has the answer). One unsigned comparison tests the range,
// so that they stay small enough for the compiler to inline into the batch
// loops.

func e4m3Normal(b uint32) (code uint8, ok bool) {
	a := b & absMask
	return uint8(b>>24)&0x80 | uint8((a+0x7FFFF+(a>>20)&1)>>20-120<<3), a-e4m3Min < e4m3Max-e4m3Min
}

func e5m2Normal(b uint32) (code uint8, ok bool) {
	a := b & absMask
	return uint8(b>>24)&0x80 | uint8((a+0xFFFFF+(a>>21)&1)>>21-112<<2), a-e5m2Min < e5m2Max-e5m2Min
}

// e2m1Fast also takes magnitudes below 1 (e2m1Below1): normalized E2M1 data
// puts about a third of its elements there.
func e2m1Fast(b uint32) (code uint8, ok bool) {
	a := b & absMask
	if a < e2m1Min {
		return uint8(b>>28)&0x8 | e2m1Below1(a), true
	}
	return uint8(b>>28)&0x8 | uint8((a+0x1FFFFF+(a>>22)&1)>>22-126<<1), a < e2m1Max
}

// ToE4M3 converts x to E4M3 (round to nearest even, saturating).
func ToE4M3(x float32) uint8 {
	b := math.Float32bits(x)
	if c, ok := e4m3Normal(b); ok {
		return c
	}
	return E4M3.encodeSlow(b)
}

// ToE5M2 converts x to E5M2 (round to nearest even, saturating: infinities
// become the largest finite value, as satfinite does).
func ToE5M2(x float32) uint8 {
	b := math.Float32bits(x)
	if c, ok := e5m2Normal(b); ok {
		return c
	}
	return E5M2.encodeSlow(b)
}

// ToE2M1 converts x to an E2M1 code in the low nibble (round to nearest
// even, saturating to ±6; NaN becomes 0x7).
func ToE2M1(x float32) uint8 {
	b := math.Float32bits(x)
	if c, ok := e2m1Fast(b); ok {
		return c
	}
	return E2M1.encodeSlow(b)
}

// ToE2M1Stochastic converts x to an E2M1 code with stochastic rounding
// driven by the 8 random bits r (see the package documentation for the
// exact rule). NaN, infinities and magnitudes of 6 or more follow ToE2M1.
func ToE2M1Stochastic(x float32, r uint8) uint8 {
	b := math.Float32bits(x)
	a := b & absMask
	sign := uint8(b>>28) & 0x8
	if a >= e2m1Max {
		if a > infBits {
			return 0x7
		}
		return sign | 0x7
	}
	v := math.Float32frombits(a)
	// Scale v so that one step between neighbours spans 256 units; the
	// multiplications are by powers of two and therefore exact, and the
	// integer conversion truncates, giving floor.
	var lo, frac uint32
	switch {
	case a >= e2m1Four: // [4, 6): neighbours 4 and 6
		q := uint32(v * 128)
		lo, frac = 6, q-512
	case a >= e2m1Two: // [2, 4): step 1
		q := uint32(v * 256)
		lo, frac = q>>8+2, q&255
	default: // [0, 2): step 0.5
		q := uint32(v * 512)
		lo, frac = q>>8, q&255
	}
	if uint32(r) < frac {
		lo++
	}
	return sign | uint8(lo)
}

// E4M3ToFloat32 returns the exact value of an E4M3 code (0x7F and 0xFF are
// NaN).
func E4M3ToFloat32(c uint8) float32 {
	sign := uint32(c&0x80) << 24
	e := uint32(c>>3) & 0xF
	m := uint32(c & 7)
	switch {
	case e == 0xF && m == 7:
		return float32(math.NaN())
	case e == 0:
		return math.Float32frombits(sign | math.Float32bits(float32(m)*0x1p-9))
	default:
		return math.Float32frombits(sign | (e+120)<<23 | m<<20)
	}
}

// E5M2ToFloat32 returns the exact value of an E5M2 code (IEEE style
// infinities and NaNs).
func E5M2ToFloat32(c uint8) float32 {
	return widenIEEE(uint32(c&0x80)<<24, uint32(c>>2)&0x1F, uint32(c&3), 2)
}

// widenIEEE returns the float32 value of a code of an IEEE-754-style format
// with 5 exponent bits (bias 15, all ones for infinities and NaNs) and
// manBits mantissa bits: E5M2 and binary16. sign is the float32 sign bit, e
// the biased exponent and m the mantissa.
func widenIEEE(sign, e, m, manBits uint32) float32 {
	switch e {
	case 0x1F:
		return math.Float32frombits(sign | infBits | m<<(23-manBits))
	case 0:
		// m times the smallest subnormal, 2^(-14-manBits): exact.
		return math.Float32frombits(sign | math.Float32bits(float32(m)*math.Float32frombits((113-manBits)<<23)))
	default:
		return math.Float32frombits(sign | (e+112)<<23 | m<<(23-manBits))
	}
}

// E2M1ToFloat32 returns the exact value of the E2M1 code in the low nibble
// of c; the high nibble is ignored.
func E2M1ToFloat32(c uint8) float32 {
	sign := uint32(c&0x8) << 28
	e := uint32(c>>1) & 3
	m := uint32(c & 1)
	if e == 0 {
		return math.Float32frombits(sign | math.Float32bits(float32(m)*0.5))
	}
	return math.Float32frombits(sign | (e+126)<<23 | m<<22)
}

// E8M0ToFloat32 returns 2^(c-127); 0xFF is NaN and 0x00 is the float32
// subnormal 2^-127.
func E8M0ToFloat32(c uint8) float32 {
	switch c {
	case 0xFF:
		return float32(math.NaN())
	case 0:
		return 0x1p-127
	default:
		return math.Float32frombits(uint32(c) << 23)
	}
}

// E8M0RoundUp returns the E8M0 code of t rounded up (TransformerEngine's
// float_to_e8m0, the contract's rule): NaN gives 0xFF, infinity 0xFE;
// otherwise the biased float32 exponent E of t, plus one when t's mantissa
// m is nonzero, except that E = 0xFE is not incremented (2^127 is the
// largest code) and that a subnormal t of at most 2^-127 (E = 0,
// m ≤ 0x400000) keeps code 0, which already decodes to 2^-127 ≥ t. A
// subnormal t above 2^-127 therefore gets code 1 (2^-126): without it its
// block's largest element would scale past fp8_max. The sign of t is
// ignored.
func E8M0RoundUp(t float32) uint8 {
	a := math.Float32bits(t) & absMask
	if c, ok := e8m0NonFinite(a); ok {
		return c
	}
	e, m := a>>23, a&0x7FFFFF
	if m != 0 && e != 0xFE && (e != 0 || m > 0x400000) {
		e++
	}
	return uint8(e)
}

// e8m0NonFinite is the E8M0 code of a NaN (0xFF, E8M0's only special
// code) or an infinity (0xFE, the largest finite code, as satfinite gives)
// of magnitude bits a, and ok false for a finite a: every scale rule shares
// it.
func e8m0NonFinite(a uint32) (code uint8, ok bool) {
	switch {
	case a > infBits:
		return 0xFF, true
	case a == infBits:
		return 0xFE, true
	default:
		return 0, false
	}
}

// E8M0FloorOCP returns the OCP MX v1.0 shared exponent for a block whose
// largest magnitude is amax, for an element type whose largest normal
// exponent is emax (8 for E4M3, 15 for E5M2, 2 for E2M1): the code
// floor(log2(amax)) - emax + 127, clamped to [0, 254]. Decisions where the
// OCP spec is silent: amax of zero gives 0x00 (as the TE rule does), NaN
// gives 0xFF and infinity 0xFE.
func E8M0FloorOCP(amax float32, emax int) uint8 {
	a := math.Float32bits(amax) & absMask
	if c, ok := e8m0NonFinite(a); ok {
		return c
	}
	if a == 0 {
		return 0
	}
	var floorLog2 int
	if e := int(a >> 23); e != 0 {
		floorLog2 = e - 127
	} else {
		// Subnormal: value = m * 2^-149, so floor(log2) = bitlen(m) - 1 - 149.
		n := 0
		for m := a; m != 0; m >>= 1 {
			n++
		}
		floorLog2 = n - 150
	}
	c := floorLog2 - emax + 127
	switch {
	case c < 0:
		return 0
	case c > 254:
		return 254
	}
	return uint8(c)
}

// EMax returns the largest normal unbiased exponent of the type, used by the
// OCP shared-exponent rule: 8 (E4M3), 15 (E5M2), 2 (E2M1); 0 for E8M0.
func (t Type) EMax() int {
	f, _ := t.format()
	return f.emax
}
