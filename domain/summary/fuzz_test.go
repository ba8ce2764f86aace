// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package summary

import (
	"testing"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

// FuzzCompute hunts panics in the decimal parsing and arithmetic: agents write
// these strings, and one bad value must never crash the job controller.
func FuzzCompute(f *testing.F) {
	f.Add("812.5", "12", "1e-3", "31.5")
	f.Add("", "-0", "1/3", "NaN")
	f.Add("1e999999999", "0x10", "+.5", "9999999999999999999999999.1")
	f.Fuzz(func(t *testing.T, bw, eager, graph, snr string) {
		var runs []Run
		for i := range 6 {
			b := bw
			if i%2 == 0 {
				b = "800"
			}
			runs = append(runs, Run{Name: string(rune('a' + i)), Product: "H100",
				Results: builders.SyntheticResults(b, eager, graph, snr, kquantv1alpha1.VerdictPass)})
		}
		s := Compute(runs)
		if s == nil || s.Verdicts.Pass != 6 {
			t.Fatalf("Compute() = %+v, want six passes", s)
		}
	})
}
