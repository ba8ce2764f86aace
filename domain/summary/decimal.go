// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package summary

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// parseDecimal parses a decimal string ("812.5", "1e-3"); false for anything
// else, so one malformed result never poisons a summary.
func parseDecimal(s string) (*big.Rat, bool) {
	// A float64 check first bounds the exponent: big.Rat would expand "1e999999999"
	// into a number of a billion digits.
	if f, err := strconv.ParseFloat(s, 64); err != nil || math.IsInf(f, 0) || math.IsNaN(f) || len(s) > 64 {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// formatDecimal writes r as a plain decimal, exactly when its denominator has no
// prime factor other than 2 and 5 (always so for medians of decimals), else
// rounded to 9 places; trailing zeros are dropped.
func formatDecimal(r *big.Rat) string {
	places := 9
	d := new(big.Int).Set(r.Denom())
	twos, fives := 0, 0
	two, five, rem := big.NewInt(2), big.NewInt(5), new(big.Int)
	for rem.Mod(d, two).Sign() == 0 {
		d.Quo(d, two)
		twos++
	}
	for rem.Mod(d, five).Sign() == 0 {
		d.Quo(d, five)
		fives++
	}
	if d.IsInt64() && d.Int64() == 1 {
		places = max(twos, fives)
	}
	s := r.FloatString(places)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
