// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestNumberOf(t *testing.T) {
	cases := map[string]Number{
		"812.5": "812.5", "-3": "-3", "1e-3": "1e-3", "0": "0",
		"": "", "+1": "", ".5": "", "Inf": "", "NaN": "", "0x1p3": "", "1,5": "", "12 ": "",
	}
	for in, want := range cases {
		if got := NumberOf(in); got != want {
			t.Errorf("NumberOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNumberIsAJSONNumber(t *testing.T) {
	type holder struct {
		N Number `json:"n,omitempty"`
	}
	b, err := json.Marshal(holder{N: "12.30"})
	if err != nil || string(b) != `{"n":12.30}` {
		t.Fatalf("Marshal = %s, %v; want {\"n\":12.30}", b, err)
	}
	if b, _ := json.Marshal(holder{}); string(b) != `{}` {
		t.Errorf("Marshal(empty) = %s, want {}", b)
	}
	var got holder
	if err := json.Unmarshal([]byte(`{"n": 4.5e+06}`), &got); err != nil || got.N != "4.5e+06" {
		t.Errorf("Unmarshal = %q, %v", got.N, err)
	}
	if err := json.Unmarshal([]byte(`{"n":"12.3"}`), &got); err == nil {
		t.Errorf("Unmarshal of a JSON string succeeded: %q", got.N)
	}
	if _, err := json.Marshal(holder{N: "abc"}); err == nil {
		t.Error("Marshal of a non-number succeeded")
	}
}

func TestNumbersOf(t *testing.T) {
	r := &RunResults{
		Overhead:    &Overhead{HostEagerMicros: "12.5", HostGraphMicros: "bogus"},
		Performance: &Performance{BandwidthGBps: "3012"},
		Accuracy:    &Accuracy{SNRdB: "31.25"},
	}
	want := &ResultNumbers{HostEagerMicros: "12.5", BandwidthGBps: "3012", SNRdB: "31.25"}
	if diff := cmp.Diff(want, NumbersOf(r)); diff != "" {
		t.Errorf("NumbersOf (-want +got):\n%s", diff)
	}
	if got := NumbersOf(&RunResults{Verdict: VerdictPass}); got != nil {
		t.Errorf("NumbersOf(no decimals) = %+v, want nil", got)
	}
}

func TestWorstVerdict(t *testing.T) {
	cases := []struct {
		name       string
		counts     VerdictCounts
		wantWorst  Verdict
		wantPasses bool
	}{
		{"none", VerdictCounts{}, "", false},
		{"all pass", VerdictCounts{Pass: 3}, VerdictPass, true},
		{"a warning passes", VerdictCounts{Pass: 3, Warn: 1}, VerdictWarn, true},
		{"a skip is worse than a warning", VerdictCounts{Pass: 3, Warn: 1, Skip: 1}, VerdictSkip, false},
		{"a failure is worst", VerdictCounts{Pass: 3, Warn: 1, Skip: 1, Fail: 1}, VerdictFail, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.counts.WorstVerdict()
			if got != tc.wantWorst || got.Passes() != tc.wantPasses {
				t.Errorf("WorstVerdict() = %q (passes %v), want %q (passes %v)", got, got.Passes(), tc.wantWorst, tc.wantPasses)
			}
		})
	}
}

// The unstructured converter (unstructured clients, test agents) must write
// the mirrors as numbers too, or the API server refuses them.
func TestResultNumbersUnstructuredAreNumbers(t *testing.T) {
	in := &RunResults{Numbers: &ResultNumbers{HostEagerMicros: "12.5", SNRdB: "31"}}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"hostEagerMicros": 12.5, "snrDB": int64(31)}
	if diff := cmp.Diff(want, u["numbers"]); diff != "" {
		t.Errorf("unstructured numbers (-want +got):\n%s", diff)
	}
	var back RunResults
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, &back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}
