// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package element

import (
	"math"
	"sort"
)

// This file holds the slow, obviously-correct oracle the fast bit-twiddling
// conversions are checked against. It knows nothing about bit patterns: it
// lists every representable value from the format definition and picks the
// nearest one by comparing with midpoints in float64, where all values of
// these formats, all float32 inputs and all midpoints are exact.

// formatDef describes a minifloat by its field widths and bias.
type formatDef struct {
	expBits, manBits, bias int
	maxCode                uint8 // code of the largest finite magnitude
	nanCode                uint8 // what NaN inputs become
	signBit                uint8
}

func defOf(t Type) formatDef {
	switch t {
	case E4M3:
		return formatDef{4, 3, 7, 0x7E, 0x7F, 0x80}
	case E5M2:
		return formatDef{5, 2, 15, 0x7B, 0x7F, 0x80}
	case E2M1:
		return formatDef{2, 1, 1, 0x7, 0x7, 0x8}
	}
	panic("no minifloat definition for " + t.String())
}

// valueOf returns the magnitude of a nonnegative code from the textbook
// formula: subnormal m·2^(1-bias-M), normal (2^M+m)·2^(e-bias-M).
func (d formatDef) valueOf(code int) float64 {
	e := code >> d.manBits
	m := code & (1<<d.manBits - 1)
	if e == 0 {
		return math.Ldexp(float64(m), 1-d.bias-d.manBits)
	}
	return math.Ldexp(float64(1<<d.manBits+m), e-d.bias-d.manBits)
}

// oracleEncode rounds x to nearest, ties to the even code, then saturates:
// the candidate list includes the first value above the maximum so that
// rounding can pick it before it is clamped, which is exactly satfinite.
func oracleEncode(t Type, x float64) uint8 {
	d := defOf(t)
	if math.IsNaN(x) {
		return d.nanCode
	}
	var sign uint8
	if math.Signbit(x) {
		sign = d.signBit
	}
	ax := math.Abs(x)
	n := int(d.maxCode) + 1 // codes 0..maxCode, plus maxCode+1 as overflow
	if ax >= d.valueOf(n) {
		return sign | d.maxCode
	}
	// Largest code whose value is <= ax (codes are ordered by value).
	lo := sort.Search(n+1, func(c int) bool { return d.valueOf(c) > ax }) - 1
	hi := lo + 1
	mid := (d.valueOf(lo) + d.valueOf(hi)) / 2
	var pick int
	switch {
	case ax < mid:
		pick = lo
	case ax > mid:
		pick = hi
	case lo%2 == 0:
		pick = lo
	default:
		pick = hi
	}
	if pick > int(d.maxCode) {
		pick = int(d.maxCode)
	}
	return sign | uint8(pick)
}

// oracleE8M0RoundUp is the contract's TE rule stated as a search: the
// smallest power of two not below t, capped at 2^127 (code 0xFE), for
// subnormal t as well (contract v2).
func oracleE8M0RoundUp(t float32) uint8 {
	a := math.Abs(float64(t))
	switch {
	case math.IsNaN(a):
		return 0xFF
	case math.IsInf(a, 0):
		return 0xFE
	case a == 0:
		return 0
	}
	for e := 0; e <= 254; e++ {
		if math.Ldexp(1, e-127) >= a {
			return uint8(e)
		}
	}
	return 254
}

// oracleE8M0OCP computes floor(log2(amax)) with math.Frexp.
func oracleE8M0OCP(amax float32, emax int) uint8 {
	a := math.Abs(float64(amax))
	switch {
	case math.IsNaN(a):
		return 0xFF
	case math.IsInf(a, 0):
		return 0xFE
	case a == 0:
		return 0
	}
	_, exp := math.Frexp(a) // a = frac · 2^exp, frac in [0.5, 1)
	c := exp - 1 - emax + 127
	return uint8(min(max(c, 0), 254))
}

// oracleE2M1Stochastic finds the neighbours of |x| in the value list and
// applies the documented rule r < floor(256·(v-lo)/(hi-lo)).
func oracleE2M1Stochastic(x float32, r uint8) uint8 {
	xf := float64(x)
	if math.IsNaN(xf) || math.Abs(xf) >= 6 {
		return oracleEncode(E2M1, xf)
	}
	d := defOf(E2M1)
	var sign uint8
	if math.Signbit(xf) {
		sign = 0x8
	}
	ax := math.Abs(xf)
	lo := 0
	for c := 0; c <= 7; c++ {
		if d.valueOf(c) <= ax {
			lo = c
		}
	}
	lv, hv := d.valueOf(lo), d.valueOf(lo+1)
	q := math.Floor(256 * (ax - lv) / (hv - lv))
	if float64(r) < q {
		lo++
	}
	return sign | uint8(lo)
}

// fp16Values lists every finite nonnegative binary16 value by code.
func oracleFP16(x float64) uint16 {
	d := formatDef{expBits: 5, manBits: 10, bias: 15}
	if math.IsNaN(x) {
		return 0x7E00
	}
	var sign uint16
	if math.Signbit(x) {
		sign = 0x8000
	}
	ax := math.Abs(x)
	// IEEE overflow: at or above the midpoint between max and 2^16 the
	// result is infinity (ties go to the even "2^16", which is infinity).
	if ax >= 65520 {
		return sign | 0x7C00
	}
	// Binary search over codes 0..0x7BFF, which are ordered by value.
	lo := sort.Search(0x7C00, func(c int) bool { return d.valueOf(c) > ax }) - 1
	hi := lo + 1
	mid := (d.valueOf(lo) + d.valueOf(hi)) / 2
	pick := lo
	if ax > mid || (ax == mid && lo%2 == 1) {
		pick = hi
	}
	return sign | uint16(pick)
}
