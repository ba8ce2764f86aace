// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
)

// humanMicros spells a duration the API holds in microseconds ("4532404.596")
// with the unit that keeps it short, as kubectl's AGE column does: "850 ns",
// "12.5 µs", "3.21 ms", "4.53 s". Anything that is not a number is returned
// as it is.
func humanMicros(us string) string {
	v, err := strconv.ParseFloat(us, 64)
	if err != nil {
		return us
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return us + " µs"
	}
	unit, scale := "µs", 1.0
	switch {
	case v >= 1e6:
		unit, scale = "s", 1e6
	case v >= 1e3:
		unit, scale = "ms", 1e3
	case v > 0 && v < 1:
		unit, scale = "ns", 1e-3
	}
	return strconv.FormatFloat(v/scale, 'g', 3, 64) + " " + unit
}

// scaleDecimal multiplies the API's decimal s by factor exactly (GB/s to
// bytes per second, µs to seconds) for the CSV's base units; "" stays "".
func scaleDecimal(s string, factor *big.Rat, decimals int) string {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return s
	}
	out := r.Mul(r, factor).FloatString(decimals)
	if strings.Contains(out, ".") {
		out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
	}
	return out
}

// naturalCompare orders names as people count: "run-2-0" before "run-10-0".
// Runs of digits compare as numbers, the rest as text.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := unicode.IsDigit(rune(a[0])), unicode.IsDigit(rune(b[0]))
		if da && db {
			na, ra := leadingDigits(a)
			nb, rb := leadingDigits(b)
			// Without leading zeros, a longer number is larger.
			ta, tb := strings.TrimLeft(na, "0"), strings.TrimLeft(nb, "0")
			if c := len(ta) - len(tb); c != 0 {
				return c
			}
			if c := strings.Compare(ta, tb); c != 0 {
				return c
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func leadingDigits(s string) (digits, rest string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i], s[i:]
}
