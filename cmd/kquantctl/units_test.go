// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"math/big"
	"slices"
	"testing"
)

func TestHumanMicros(t *testing.T) {
	for in, want := range map[string]string{
		"4532404.596": "4.53 s", "12.5": "12.5 µs", "3210": "3.21 ms", "0.85": "850 ns", "0": "0 µs", "+Inf": "+Inf µs", "n/a": "n/a",
	} {
		if got := humanMicros(in); got != want {
			t.Errorf("humanMicros(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNaturalCompare(t *testing.T) {
	names := []string{"job-10-0", "job-2-0", "job-2-10", "job-2-2", "job-b", "job-a", "job-02-1"}
	slices.SortFunc(names, naturalCompare)
	want := []string{"job-2-0", "job-02-1", "job-2-2", "job-2-10", "job-10-0", "job-a", "job-b"}
	if !slices.Equal(names, want) {
		t.Errorf("sorted %v, want %v", names, want)
	}
}

func TestScaleDecimal(t *testing.T) {
	for _, tc := range []struct {
		in     string
		factor *big.Rat
		want   string
	}{
		{"2950.5", bytesPerGB, "2950500000000"},
		{"12.5", secondsPerMicro, "0.0000125"},
		{"4532404.596", secondsPerMicro, "4.532404596"},
		{"10", secondsPerMicro, "0.00001"},
	} {
		if got := scaleDecimal(tc.in, tc.factor, 9); got != tc.want {
			t.Errorf("scaleDecimal(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
