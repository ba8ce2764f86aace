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
// results are parsed once, on Add, and its values are inserted in order, so a
// summary after a few more runs costs their insertions, not a parse and a
// sort of every run. Summary over the runs added equals Compute over them.
// Not safe for concurrent use.
type Accumulator struct {
	names      map[string]bool
	hasResults bool
	verdicts   kquantv1alpha1.VerdictCounts
	// sorted holds each metric's values by value, then run name (the order
	// Compute's stable sort gives runs listed by name).
	sorted [][]value
}

// NewAccumulator returns an Accumulator of no runs.
func NewAccumulator() *Accumulator {
	return &Accumulator{names: map[string]bool{}, sorted: make([][]value, len(metrics()))}
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
		nv := value{run: r, raw: raw, v: v}
		at, _ := slices.BinarySearchFunc(a.sorted[i], nv, func(e, t value) int {
			if c := e.v.Cmp(t.v); c != 0 {
				return c
			}
			return strings.Compare(e.run.Name, t.run.Name)
		})
		a.sorted[i] = slices.Insert(a.sorted[i], at, nv)
	}
}

// Summary is the summary of the runs added; nil when none has results.
func (a *Accumulator) Summary() *kquantv1alpha1.JobSummary {
	if !a.hasResults {
		return nil
	}
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
		st.Median = formatDecimal(median(rats(sorted)))
	}
	return st
}

func rats(vals []value) []*big.Rat {
	out := make([]*big.Rat, len(vals))
	for i := range vals {
		out[i] = vals[i].v
	}
	return out
}

// outliers flags, per product, values more than outlierMADs median absolute
// deviations on the worse side of the product's median.
func outliers(sorted []value, m metric) []kquantv1alpha1.Outlier {
	byProduct := map[string][]value{}
	for _, v := range sorted {
		byProduct[v.run.Product] = append(byProduct[v.run.Product], v)
	}
	var out []kquantv1alpha1.Outlier
	for product, vals := range byProduct {
		if len(vals) < MinRunsForOutliers {
			continue
		}
		med := median(rats(vals))
		devs := make([]*big.Rat, len(vals))
		for i, v := range vals {
			devs[i] = new(big.Rat).Abs(new(big.Rat).Sub(v.v, med))
		}
		slices.SortFunc(devs, func(a, b *big.Rat) int { return a.Cmp(b) })
		limit := new(big.Rat).Mul(median(devs), big.NewRat(outlierMADs, 1))
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
