// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package summary

import (
	"fmt"
	"math/big"
	"testing"

	"github.com/google/go-cmp/cmp"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

func run(name, product, bw, eager string, v kquantv1alpha1.Verdict) Run {
	return Run{Name: name, Node: "n-" + name, GPU: "GPU-" + name, Product: product,
		Results: builders.SyntheticResults(bw, eager, "2.5", "31.5", v)}
}

func TestCompute(t *testing.T) {
	pass := kquantv1alpha1.VerdictPass
	cases := map[string]struct {
		runs []Run
		want *kquantv1alpha1.JobSummary
	}{
		"no runs": {},
		"odd count keeps the median's spelling": {
			runs: []Run{run("a", "H100", "800.0", "10", pass), run("b", "H100", "810", "12", pass), run("c", "H100", "790.5", "11", kquantv1alpha1.VerdictWarn)},
			want: &kquantv1alpha1.JobSummary{
				BandwidthGBps:   &kquantv1alpha1.Stat{Min: "790.5", Median: "800.0", Max: "810"},
				GPUMicros:       &kquantv1alpha1.Stat{Min: "10", Median: "10", Max: "10"},
				HostEagerMicros: &kquantv1alpha1.Stat{Min: "10", Median: "11", Max: "12"},
				HostGraphMicros: &kquantv1alpha1.Stat{Min: "2.5", Median: "2.5", Max: "2.5"},
				SNRdB:           &kquantv1alpha1.Stat{Min: "31.5", Median: "31.5", Max: "31.5"},
				Verdicts:        kquantv1alpha1.VerdictCounts{Pass: 2, Warn: 1},
				Medians:         &kquantv1alpha1.ResultNumbers{HostEagerMicros: "11", HostGraphMicros: "2.5", BandwidthGBps: "800.0", SNRdB: "31.5"},
			},
		},
		"even count takes the exact mean": {
			runs: []Run{run("a", "H100", "800.1", "10", pass), run("b", "H100", "800.2", "13", kquantv1alpha1.VerdictFail)},
			want: &kquantv1alpha1.JobSummary{
				BandwidthGBps:   &kquantv1alpha1.Stat{Min: "800.1", Median: "800.15", Max: "800.2"},
				GPUMicros:       &kquantv1alpha1.Stat{Min: "10", Median: "10", Max: "10"},
				HostEagerMicros: &kquantv1alpha1.Stat{Min: "10", Median: "11.5", Max: "13"},
				HostGraphMicros: &kquantv1alpha1.Stat{Min: "2.5", Median: "2.5", Max: "2.5"},
				SNRdB:           &kquantv1alpha1.Stat{Min: "31.5", Median: "31.5", Max: "31.5"},
				Verdicts:        kquantv1alpha1.VerdictCounts{Pass: 1, Fail: 1},
				Medians:         &kquantv1alpha1.ResultNumbers{HostEagerMicros: "11.5", HostGraphMicros: "2.5", BandwidthGBps: "800.15", SNRdB: "31.5"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Compute(tc.runs)); diff != "" {
				t.Errorf("Compute() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOutliers(t *testing.T) {
	fleet := func(product string, n int, bw func(i int) string, eager func(i int) string) []Run {
		var out []Run
		for i := range n {
			out = append(out, run(fmt.Sprintf("%s-%d", product, i), product, bw(i), eager(i), kquantv1alpha1.VerdictPass))
		}
		return out
	}
	steady := func(base int) func(int) string {
		return func(i int) string { return fmt.Sprint(base + i%3) }
	}
	cases := map[string]struct {
		runs []Run
		want []kquantv1alpha1.Outlier
	}{
		"slow GPU among eight": {
			runs: fleet("H100", 8, func(i int) string {
				if i == 5 {
					return "600"
				}
				return steady(800)(i)
			}, steady(10)),
			want: []kquantv1alpha1.Outlier{{Run: "H100-5", NodeName: "n-H100-5", GPUUUID: "GPU-H100-5", Product: "H100", Metric: "bandwidthGBps", Value: "600", Median: "800.5"}},
		},
		"fast GPU is not an outlier": {
			runs: fleet("H100", 8, func(i int) string {
				if i == 5 {
					return "1000"
				}
				return steady(800)(i)
			}, steady(10)),
		},
		"high host overhead is": {
			runs: fleet("H100", 6, steady(800), func(i int) string {
				if i == 0 {
					return "40"
				}
				return steady(10)(i)
			}),
			want: []kquantv1alpha1.Outlier{{Run: "H100-0", NodeName: "n-H100-0", GPUUUID: "GPU-H100-0", Product: "H100", Metric: "hostEagerMicros", Value: "40", Median: "11.5"}},
		},
		"four runs of a product are too few": {
			runs: fleet("B200", 4, func(i int) string {
				if i == 0 {
					return "100"
				}
				return steady(1800)(i)
			}, steady(10)),
		},
		"products are judged apart": {
			runs: append(fleet("H100", 5, steady(800), steady(10)), fleet("B200", 5, steady(1800), steady(10))...),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Compute(tc.runs)
			if diff := cmp.Diff(tc.want, got.Outliers); diff != "" {
				t.Errorf("outliers mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFormatDecimal(t *testing.T) {
	if got := formatDecimal(big.NewRat(1, 3)); got != "0.333333333" {
		t.Errorf("formatDecimal(1/3) = %q, want 0.333333333", got)
	}
	for _, bad := range []string{"1/3", "1e999999999", "NaN", "", "12 GB/s"} {
		if _, ok := parseDecimal(bad); ok {
			t.Errorf("parseDecimal(%q) succeeded, want a refusal", bad)
		}
	}
	for in, want := range map[string]string{"800.15": "800.15", "1e-3": "0.001", "12.50": "12.5", "0": "0"} {
		r, ok := parseDecimal(in)
		if !ok {
			t.Fatalf("parseDecimal(%q) failed", in)
		}
		if got := formatDecimal(r); got != want {
			t.Errorf("formatDecimal(%s) = %q, want %q", in, got, want)
		}
	}
}
