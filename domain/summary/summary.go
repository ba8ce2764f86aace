// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package summary

import (
	"math/big"
	"slices"
	"strings"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// MinRunsForOutliers is how many runs of one product it takes before any of
// them can be called an outlier: fewer give no meaningful spread.
const MinRunsForOutliers = 5

// outlierMADs is how many median absolute deviations make an outlier.
const outlierMADs = 3

// maxOutliers matches the API's cap on status.summary.outliers.
const maxOutliers = 100

// Run is one succeeded run as the summary sees it.
type Run struct {
	Name    string
	Node    string
	GPU     string
	Product string
	Results *kquantv1alpha1.RunResults
}

type metric struct {
	name string
	get  func(*kquantv1alpha1.RunResults) string
	set  func(*kquantv1alpha1.JobSummary, *kquantv1alpha1.Stat)
	// worse is +1 when higher is worse, -1 when lower is worse, 0 when the
	// metric is not checked for outliers.
	worse int
}

func metrics() []metric {
	return []metric{
		{"bandwidthGBps", func(r *kquantv1alpha1.RunResults) string {
			if r.Performance == nil {
				return ""
			}
			return r.Performance.BandwidthGBps
		}, func(s *kquantv1alpha1.JobSummary, st *kquantv1alpha1.Stat) { s.BandwidthGBps = st }, -1},
		{"gpuMicros", func(r *kquantv1alpha1.RunResults) string {
			if r.Performance == nil {
				return ""
			}
			return r.Performance.GPUMicros
		}, func(s *kquantv1alpha1.JobSummary, st *kquantv1alpha1.Stat) { s.GPUMicros = st }, 0},
		{"hostEagerMicros", func(r *kquantv1alpha1.RunResults) string {
			if r.Overhead == nil {
				return ""
			}
			return r.Overhead.HostEagerMicros
		}, func(s *kquantv1alpha1.JobSummary, st *kquantv1alpha1.Stat) { s.HostEagerMicros = st }, +1},
		{"hostGraphMicros", func(r *kquantv1alpha1.RunResults) string {
			if r.Overhead == nil {
				return ""
			}
			return r.Overhead.HostGraphMicros
		}, func(s *kquantv1alpha1.JobSummary, st *kquantv1alpha1.Stat) { s.HostGraphMicros = st }, +1},
		{"snrDB", func(r *kquantv1alpha1.RunResults) string {
			if r.Accuracy == nil {
				return ""
			}
			return r.Accuracy.SNRdB
		}, func(s *kquantv1alpha1.JobSummary, st *kquantv1alpha1.Stat) { s.SNRdB = st }, 0},
	}
}

type value struct {
	run *Run
	raw string
	v   *big.Rat
}

// Compute summarises runs (the job's succeeded runs, in name order); nil when
// none has results.
func Compute(runs []Run) *kquantv1alpha1.JobSummary {
	acc := NewAccumulator()
	for i := range runs {
		acc.Add(runs[i])
	}
	return acc.Summary()
}

// Accumulator summarises a job's succeeded runs as they come: each run's
// results are parsed once, on Add, and the values added since the last
// Summary are sorted and merged into the ordered ones there, so a summary
// after a few more runs costs sorting those and one pass of merging, not a
// parse and a sort of every run (nor a shift of every value per run, which
// is quadratic over an EachGPU job of 40,000 runs). Summary over the runs
// added equals Compute over them. Not safe for concurrent use.
type Accumulator struct {
	names      map[string]bool
	hasResults bool
	verdicts   kquantv1alpha1.VerdictCounts
	// sorted holds each metric's values by value, then run name (the order
	// Compute's stable sort gives runs listed by name), up to the last
	// Summary; added holds those added since, in any order.
	sorted, added [][]value
}

// NewAccumulator returns an Accumulator of no runs.
func NewAccumulator() *Accumulator {
	n := len(metrics())
	return &Accumulator{names: map[string]bool{}, sorted: make([][]value, n), added: make([][]value, n)}
}

// Has reports whether a run of that name was added.
func (a *Accumulator) Has(name string) bool { return a.names[name] }

// Len is how many runs were added.
func (a *Accumulator) Len() int { return len(a.names) }

// Add adds a succeeded run; a run already added is ignored.
func (a *Accumulator) Add(run Run) {
	if a.names[run.Name] {
		return
	}
	a.names[run.Name] = true
	if run.Results == nil {
		return
	}
	r := &run
	a.hasResults = true
	switch r.Results.Verdict {
	case kquantv1alpha1.VerdictPass:
		a.verdicts.Pass++
	case kquantv1alpha1.VerdictFail:
		a.verdicts.Fail++
	case kquantv1alpha1.VerdictWarn:
		a.verdicts.Warn++
	case kquantv1alpha1.VerdictSkip:
		a.verdicts.Skip++
	}
	for i, m := range metrics() {
		raw := m.get(r.Results)
		v, ok := parseDecimal(raw)
		if !ok {
			continue
		}
		a.added[i] = append(a.added[i], value{run: r, raw: raw, v: v})
	}
}

// compareValues orders values by value, then run name: a total order, since
// run names are unique.
func compareValues(a, b value) int {
	if c := a.v.Cmp(b.v); c != 0 {
		return c
	}
	return strings.Compare(a.run.Name, b.run.Name)
}

// merge sorts the values added since the last call and merges them into
// the sorted ones, from the back, in place: each added value's place is
// found by binary search and the values above it move up in one block, so
// a merge costs a few comparisons per added value (exact ones, which
// allocate) and one shift of the sorted values.
func (a *Accumulator) merge() {
	for i, added := range a.added {
		if len(added) == 0 {
			continue
		}
		slices.SortFunc(added, compareValues)
		old := len(a.sorted[i])
		merged := slices.Grow(a.sorted[i], len(added))[:old+len(added)]
		top := old // merged[:top] are the sorted values not yet moved
		for y := len(added) - 1; y >= 0; y-- {
			at, _ := slices.BinarySearchFunc(merged[:top], added[y], compareValues)
			copy(merged[at+y+1:top+y+1], merged[at:top])
			merged[at+y] = added[y]
			top = at
		}
		a.sorted[i], a.added[i] = merged, added[:0]
	}
}

// Summary is the summary of the runs added; nil when none has results.
func (a *Accumulator) Summary() *kquantv1alpha1.JobSummary {
	if !a.hasResults {
		return nil
	}
	a.merge()
	sum := &kquantv1alpha1.JobSummary{Verdicts: a.verdicts}
	for i, m := range metrics() {
		vals := a.sorted[i]
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

// stat of sorted values; min and max keep the runs' own spelling.
func stat(sorted []value) *kquantv1alpha1.Stat {
	n := len(sorted)
	st := &kquantv1alpha1.Stat{Min: sorted[0].raw, Max: sorted[n-1].raw}
	if n%2 == 1 {
		st.Median = sorted[n/2].raw
	} else {
		st.Median = formatDecimal(medianOf(sorted))
	}
	return st
}

// medianOf sorted values: the middle one, or the exact mean of the two
// middle ones.
func medianOf(sorted []value) *big.Rat {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2].v
	}
	return mean(sorted[n/2-1].v, sorted[n/2].v)
}

func mean(a, b *big.Rat) *big.Rat {
	m := new(big.Rat).Add(a, b)
	return m.Quo(m, big.NewRat(2, 1))
}

// outliers flags, per product, values more than outlierMADs median absolute
// deviations on the worse side of the product's median. The summary is
// recomputed on every reconcile of a job while its runs finish, so this
// never sorts the deviations: each product's values are in order already,
// which makes the deviations two sorted sequences, one on each side of the
// median (deviations.kth finds their median by selection), and the outliers
// the values beyond one threshold (a binary search). A job of 40,000 runs
// costs a few dozen exact subtractions per metric, not a sort of 40,000.
func outliers(sorted []value, m metric) []kquantv1alpha1.Outlier {
	var out []kquantv1alpha1.Outlier
	for product, vals := range byProduct(sorted) {
		n := len(vals)
		if n < MinRunsForOutliers {
			continue
		}
		med := medianOf(vals)
		d := deviations{vals: vals, med: med, c: firstAtLeast(vals, med)}
		mad := d.kth(n / 2)
		if n%2 == 0 {
			mad = mean(d.kth(n/2-1), mad)
		}
		limit := new(big.Rat).Mul(mad, big.NewRat(outlierMADs, 1))
		// A value is an outlier when it is beyond the median by more than
		// limit on the worse side; limit is never negative, so it is then
		// on that side too.
		var worse []value
		if m.worse > 0 {
			worse = vals[firstAbove(vals, new(big.Rat).Add(med, limit)):]
		} else {
			worse = vals[:firstAtLeast(vals, new(big.Rat).Sub(med, limit))]
		}
		if len(worse) == 0 {
			continue
		}
		medText := formatDecimal(med)
		for _, v := range worse {
			out = append(out, kquantv1alpha1.Outlier{
				Run: v.run.Name, NodeName: v.run.Node, GPUUUID: v.run.GPU, Product: product,
				Metric: m.name, Value: v.raw, Median: medText,
			})
		}
	}
	return out
}

// byProduct splits sorted values by their run's product, each part still in
// order; a fleet of one product (the common case) is sorted itself, not a
// copy.
func byProduct(sorted []value) map[string][]value {
	if len(sorted) == 0 {
		return nil
	}
	if !slices.ContainsFunc(sorted, func(v value) bool { return v.run.Product != sorted[0].run.Product }) {
		return map[string][]value{sorted[0].run.Product: sorted}
	}
	out := map[string][]value{}
	for _, v := range sorted {
		out[v.run.Product] = append(out[v.run.Product], v)
	}
	return out
}

// firstAtLeast is the index of the first of sorted values that is >= x.
func firstAtLeast(sorted []value, x *big.Rat) int {
	i, _ := slices.BinarySearchFunc(sorted, x, func(e value, t *big.Rat) int {
		if e.v.Cmp(t) < 0 {
			return -1
		}
		return 1
	})
	return i
}

// firstAbove is the index of the first of sorted values that is > x.
func firstAbove(sorted []value, x *big.Rat) int {
	i, _ := slices.BinarySearchFunc(sorted, x, func(e value, t *big.Rat) int {
		if e.v.Cmp(t) <= 0 {
			return -1
		}
		return 1
	})
	return i
}

// deviations are the absolute deviations |v - med| of sorted values vals,
// where vals[c:] are those >= med: above[j] = vals[c+j] - med and below[j] =
// med - vals[c-1-j] are each ascending in j, and each deviation is computed
// only when the selection looks at it.
type deviations struct {
	vals []value
	med  *big.Rat
	c    int
}

func (d deviations) above(j int) *big.Rat { return new(big.Rat).Sub(d.vals[d.c+j].v, d.med) }
func (d deviations) below(j int) *big.Rat { return new(big.Rat).Sub(d.med, d.vals[d.c-1-j].v) }

// kth is the k-th smallest deviation (from 0): a binary search for how many
// of the k+1 smallest come from above, the rest from below.
func (d deviations) kth(k int) *big.Rat {
	na, nb := len(d.vals)-d.c, d.c
	lo, hi := max(0, k+1-nb), min(k+1, na)
	for {
		i := (lo + hi) / 2 // taken from above
		j := k + 1 - i     // taken from below
		switch {
		case i < na && j > 0 && d.below(j-1).Cmp(d.above(i)) > 0:
			lo = i + 1
		case i > 0 && j < nb && d.above(i-1).Cmp(d.below(j)) > 0:
			hi = i - 1
		case i == 0:
			return d.below(j - 1)
		case j == 0:
			return d.above(i - 1)
		default:
			a, b := d.above(i-1), d.below(j-1)
			if a.Cmp(b) >= 0 {
				return a
			}
			return b
		}
	}
}

// medians mirrors the summary's medians as numbers; nil when it has none.
func medians(sum *kquantv1alpha1.JobSummary) *kquantv1alpha1.ResultNumbers {
	med := func(st *kquantv1alpha1.Stat) kquantv1alpha1.Number {
		if st == nil {
			return ""
		}
		return kquantv1alpha1.NumberOf(st.Median)
	}
	n := kquantv1alpha1.ResultNumbers{
		HostEagerMicros: med(sum.HostEagerMicros), HostGraphMicros: med(sum.HostGraphMicros),
		BandwidthGBps: med(sum.BandwidthGBps), SNRdB: med(sum.SNRdB),
	}
	if n == (kquantv1alpha1.ResultNumbers{}) {
		return nil
	}
	return &n
}
