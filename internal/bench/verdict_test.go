// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"math"
	"strings"
	"testing"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant/accuracy"
)

func TestJudge(t *testing.T) {
	yes, no := ptr(true), ptr(false)
	nan := math.NaN()
	cases := []struct {
		name        string
		checks      Checks
		wantVerdict v1alpha1.Verdict
		wantReason  string
	}{
		{"nothing to check", Checks{SNRdB: 30, MinSNRdB: nan}, v1alpha1.VerdictPass, v1alpha1.VerdictReasonPass},
		{"snr above tolerance", Checks{SNRdB: 30, MinSNRdB: 25}, v1alpha1.VerdictPass, v1alpha1.VerdictReasonPass},
		{"snr equal to tolerance", Checks{SNRdB: 25, MinSNRdB: 25}, v1alpha1.VerdictPass, v1alpha1.VerdictReasonPass},
		{"exact result", Checks{SNRdB: math.Inf(1), MinSNRdB: 200}, v1alpha1.VerdictPass, v1alpha1.VerdictReasonPass},
		{"snr below tolerance", Checks{SNRdB: 24.99, MinSNRdB: 25}, v1alpha1.VerdictFail, v1alpha1.VerdictReasonSNRBelowTolerance},
		{"no snr against a tolerance", Checks{SNRdB: nan, MinSNRdB: 25}, v1alpha1.VerdictFail, v1alpha1.VerdictReasonSNRBelowTolerance},
		{"zero signal", Checks{SNRdB: math.Inf(-1), MinSNRdB: 0}, v1alpha1.VerdictFail, v1alpha1.VerdictReasonSNRBelowTolerance},
		{"unsupported skips first", Checks{Unsupported: "no", Alignment: "group 1", SNRdB: 1, MinSNRdB: 25}, v1alpha1.VerdictSkip, v1alpha1.VerdictReasonRecipeUnsupported},
		{"alignment before snr", Checks{Alignment: "group 1", SNRdB: 1, MinSNRdB: 25}, v1alpha1.VerdictFail, v1alpha1.VerdictReasonAlignmentViolation},
		{"required bit exact", Checks{RequireBitExact: true, BitExact: no, SNRdB: 1, MinSNRdB: 25}, v1alpha1.VerdictFail, v1alpha1.VerdictReasonNotBitExact},
		{"bit exact not required", Checks{BitExact: no, SNRdB: 30, MinSNRdB: 25}, v1alpha1.VerdictWarn, v1alpha1.VerdictReasonNotBitExact},
		{"required and exact", Checks{RequireBitExact: true, BitExact: yes, SNRdB: 30, MinSNRdB: nan}, v1alpha1.VerdictPass, v1alpha1.VerdictReasonPass},
		{"required, reference backend", Checks{RequireBitExact: true, SNRdB: 30, MinSNRdB: nan}, v1alpha1.VerdictPass, v1alpha1.VerdictReasonPass},
		{"replay mismatch", Checks{Graph: &measure.GraphOutcome{Capturable: true}, SNRdB: 30, MinSNRdB: nan}, v1alpha1.VerdictFail, v1alpha1.VerdictReasonReplayMismatch},
		{"not capturable", Checks{Graph: &measure.GraphOutcome{}, SNRdB: 30, MinSNRdB: nan}, v1alpha1.VerdictWarn, v1alpha1.VerdictReasonNotCapturable},
		{"saturated", Checks{Saturated: 3, SNRdB: 30, MinSNRdB: 25}, v1alpha1.VerdictWarn, v1alpha1.VerdictReasonSaturated},
		{"saturated and failing", Checks{Saturated: 3, SNRdB: 3, MinSNRdB: 25}, v1alpha1.VerdictFail, v1alpha1.VerdictReasonSNRBelowTolerance},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, reason := Judge(tc.checks)
			if v != tc.wantVerdict || reason != tc.wantReason {
				t.Errorf("Judge = %s %s, want %s %s", v, reason, tc.wantVerdict, tc.wantReason)
			}
			res := v1alpha1.RunResults{Verdict: v, Reason: reason}
			if msg := res.Explain(v1alpha1.Tolerances{}); msg == "" || strings.HasPrefix(msg, "verdict ") {
				t.Errorf("no sentence of its own for %s: %q", reason, msg)
			}
		})
	}
}

func TestHeadlineIsTheLargestMeasuredShape(t *testing.T) {
	outs := []shapeOutcome{
		{elements: 100, measured: true},
		{elements: 5000, measured: false},
		{elements: 400, measured: true},
		{elements: 400, measured: true},
	}
	if got := headline(outs); got != 2 {
		t.Errorf("headline = %d, want 2", got)
	}
	if got := headline(outs[1:2]); got != -1 {
		t.Errorf("headline of unmeasured shapes = %d, want -1", got)
	}
}

func TestWorstAccuracyFieldByField(t *testing.T) {
	yes, no := ptr(true), ptr(false)
	outs := []shapeOutcome{
		{measured: true, metrics: accuracy.Metrics{SNRdB: 30, MaxAbsError: 0.5, Saturated: 1, FlushedToZero: 9}, bitExact: yes},
		{measured: true, metrics: accuracy.Metrics{SNRdB: 20, MaxAbsError: 0.1, Saturated: 4, FlushedToZero: 2}, bitExact: no},
		{measured: false, metrics: accuracy.Metrics{SNRdB: -5, MaxAbsError: 99}},
	}
	m, bitExact, ok := worst(outs)
	if !ok || m.SNRdB != 20 || m.MaxAbsError != 0.5 || m.Saturated != 4 || m.FlushedToZero != 9 || *bitExact {
		t.Errorf("worst = %+v bitExact %v ok %v", m, *bitExact, ok)
	}
	if _, _, ok := worst(outs[2:]); ok {
		t.Error("worst of unmeasured shapes is ok")
	}
}

func TestFormats(t *testing.T) {
	cases := map[string]string{
		formatSNR(31.456):        "31.46",
		formatSNR(math.Inf(1)):   "+Inf",
		formatSNR(math.Inf(-1)):  "-Inf",
		formatError(0.000012345): "1.2345e-05",
		formatError(0.1875):      "0.1875",
		formatMicros(12.3456):    "12.346",
		formatGBps(3000):         "3000.0",
		formatFraction(0.75):     "0.750",
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
