// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package summary

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// The selection and the thresholds give the outliers that sorting every
// deviation gives: odd and even counts, products of every size around
// MinRunsForOutliers, heavy ties (a MAD of zero), values on the threshold,
// a spread of magnitudes, both worse sides.
func TestOutliersEqualSortedDeviations(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pools := [][]string{
		{"800", "800", "800", "801", "799", "600", "1000"},
		{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "100"},
		{"0.5", "1.5", "2.5", "3.5", "0.25", "1e3", "-2", "2.3333"},
		{"10", "10", "10", "10", "10", "13", "7"},
	}
	for trial := range 400 {
		pool := pools[trial%len(pools)]
		n := 1 + rng.IntN(40)
		var vals []value
		for i := range n {
			raw := pool[rng.IntN(len(pool))]
			v, ok := parseDecimal(raw)
			if !ok {
				t.Fatalf("parse %q", raw)
			}
			product := "H100"
			if trial%3 == 0 {
				product = []string{"H100", "H200", "B200"}[rng.IntN(3)]
			}
			vals = append(vals, value{run: &Run{Name: fmt.Sprintf("r-%03d", i), Product: product}, raw: raw, v: v})
		}
		slices.SortStableFunc(vals, func(a, b value) int { return a.v.Cmp(b.v) })
		for _, m := range metrics() {
			if m.worse == 0 {
				continue
			}
			got, want := outliers(vals, m), sortedDeviationOutliers(vals, m)
			sortOutliers(got)
			sortOutliers(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("trial %d, %s over %v: outliers differ (-sorted deviations +selection):\n%s", trial, m.name, raws(vals), diff)
			}
		}
	}
}

func sortOutliers(o []kquantv1alpha1.Outlier) {
	slices.SortFunc(o, func(a, b kquantv1alpha1.Outlier) int { return strings.Compare(a.Run, b.Run) })
}

func raws(vals []value) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = v.v.RatString()
	}
	return out
}

// sortedDeviationOutliers is the definition, computed the plain way: every
// deviation from the product's median, sorted, its median times
// outlierMADs the limit, each value compared with it.
func sortedDeviationOutliers(sorted []value, m metric) []kquantv1alpha1.Outlier {
	byProduct := map[string][]value{}
	for _, v := range sorted {
		byProduct[v.run.Product] = append(byProduct[v.run.Product], v)
	}
	var out []kquantv1alpha1.Outlier
	for product, vals := range byProduct {
		if len(vals) < MinRunsForOutliers {
			continue
		}
		med := medianOf(vals)
		devs := make([]value, len(vals))
		for i, v := range vals {
			devs[i] = value{v: new(big.Rat).Abs(new(big.Rat).Sub(v.v, med))}
		}
		slices.SortFunc(devs, func(a, b value) int { return a.v.Cmp(b.v) })
		limit := new(big.Rat).Mul(medianOf(devs), big.NewRat(outlierMADs, 1))
		for _, v := range vals {
			worseBy := new(big.Rat).Sub(v.v, med)
			if m.worse < 0 {
				worseBy.Neg(worseBy)
			}
			if worseBy.Sign() > 0 && worseBy.Cmp(limit) > 0 {
				out = append(out, kquantv1alpha1.Outlier{
					Run: v.run.Name, NodeName: v.run.Node, GPUUUID: v.run.GPU, Product: product,
					Metric: m.name, Value: v.raw, Median: formatDecimal(med),
				})
			}
		}
	}
	return out
}

// BenchmarkSummary is a reconcile of an EachGPU job of 40,000 runs on one
// product while its runs finish: ten more runs, then the summary.
func BenchmarkSummary(b *testing.B) {
	acc := NewAccumulator()
	add := func(i int) {
		acc.Add(run(fmt.Sprintf("job-%06d", i), "H100", fmt.Sprint(3000+i%97), fmt.Sprintf("%d.%d", 10+i%7, i%10), kquantv1alpha1.VerdictPass))
	}
	next := 0
	for ; next < 40000; next++ {
		add(next)
	}
	acc.Summary()
	b.ReportAllocs()
	for b.Loop() {
		for range 10 {
			add(next)
			next++
		}
		if acc.Summary() == nil {
			b.Fatal("no summary")
		}
	}
}
