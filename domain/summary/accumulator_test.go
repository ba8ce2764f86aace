// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package summary

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// Runs added a few at a time, in any order, summarise as a summary
// recomputed over all the runs added so far (listed by name, as the job controller lists them): ties,
// equal values spelled differently, outliers, runs without results, a run
// added twice.
func TestAccumulatorEqualsCompute(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	bws := []string{"800", "800.0", "810", "795.5", "100", "2400", "8e2"}
	eagers := []string{"12", "12.0", "13.5", "90", "11"}
	verdicts := []kquantv1alpha1.Verdict{kquantv1alpha1.VerdictPass, kquantv1alpha1.VerdictFail, kquantv1alpha1.VerdictWarn}
	var all []Run
	for i := range 60 {
		product := []string{"H100", "H200"}[i%2]
		r := run(fmt.Sprintf("job-%d-0", i), product, bws[rng.IntN(len(bws))], eagers[rng.IntN(len(eagers))], verdicts[rng.IntN(len(verdicts))])
		if i%17 == 0 {
			r.Results = nil
		}
		all = append(all, r)
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })

	acc := NewAccumulator()
	var added []Run
	for len(added) < len(all) {
		step := min(1+rng.IntN(7), len(all)-len(added))
		for _, r := range all[len(added) : len(added)+step] {
			acc.Add(r)
			acc.Add(r)
		}
		added = all[:len(added)+step]
		byName := slices.Clone(added)
		slices.SortFunc(byName, func(a, b Run) int { return strings.Compare(a.Name, b.Name) })
		if diff := cmp.Diff(recompute(byName), acc.Summary()); diff != "" {
			t.Fatalf("after %d runs: Accumulator.Summary() differs from Compute (-compute +accumulator):\n%s", len(added), diff)
		}
		if acc.Len() != len(added) {
			t.Fatalf("Len() = %d, want %d", acc.Len(), len(added))
		}
	}
}

// recompute is the summary computed from scratch, as the job controller did
// before the Accumulator: every run's values parsed and sorted (stably, runs
// listed by name) on every call.
func recompute(runs []Run) *kquantv1alpha1.JobSummary {
	sum := &kquantv1alpha1.JobSummary{}
	hasResults := false
	for i := range runs {
		r := runs[i].Results
		if r == nil {
			continue
		}
		hasResults = true
		switch r.Verdict {
		case kquantv1alpha1.VerdictPass:
			sum.Verdicts.Pass++
		case kquantv1alpha1.VerdictFail:
			sum.Verdicts.Fail++
		case kquantv1alpha1.VerdictWarn:
			sum.Verdicts.Warn++
		case kquantv1alpha1.VerdictSkip:
			sum.Verdicts.Skip++
		}
	}
	if !hasResults {
		return nil
	}
	for _, m := range metrics() {
		var vals []value
		for i := range runs {
			if runs[i].Results == nil {
				continue
			}
			raw := m.get(runs[i].Results)
			if v, ok := parseDecimal(raw); ok {
				vals = append(vals, value{run: &runs[i], raw: raw, v: v})
			}
		}
		slices.SortStableFunc(vals, func(a, b value) int { return a.v.Cmp(b.v) })
		if len(vals) == 0 {
			continue
		}
		m.set(sum, stat(vals))
		if m.worse != 0 {
			sum.Outliers = append(sum.Outliers, outliers(vals, m)...)
		}
	}
	sum.Medians = medians(sum)
	slices.SortFunc(sum.Outliers, func(a, b kquantv1alpha1.Outlier) int {
		if c := strings.Compare(a.Run, b.Run); c != 0 {
			return c
		}
		return strings.Compare(a.Metric, b.Metric)
	})
	if len(sum.Outliers) > maxOutliers {
		sum.Outliers = sum.Outliers[:maxOutliers]
	}
	return sum
}
