// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantscheme "github.com/kquant/kquant/api/scheme"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/internal/logging"
)

// clusterClient is a client of the cluster the kubeconfig flags name, and
// the namespace they select.
func (a *app) clusterClient() (client.Client, string, error) {
	cfg, err := a.config.ToRESTConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	c, err := kquantscheme.NewClient(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("connecting to the cluster: %w", err)
	}
	ns, _, err := a.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("reading the namespace: %w", err)
	}
	return c, ns, nil
}

// selection is which runs a listing command shows: kubectl's -n, -A and -l,
// and the job named as an argument.
type selection struct {
	namespace     string
	allNamespaces bool
	job           string
	labels        string
}

// row is one run with what the tables show of it: the GPU it ran on, named
// as the node's GPUNodeProfile names it.
type row struct {
	run                            *v1alpha1.QuantRun
	Namespace, Name, Node          string
	GPU, Index                     string
	Product, Driver, CUDA          string
	Phase, Verdict, Reason         string
	Message                        string
	SNR, Bandwidth, Eager, Graph   string
	GPUMicros, FractionOfBandwidth string
}

// loadRows reads the runs sel selects (of sel.job, or of every job) and the
// profiles of their nodes, in natural order of namespace and name.
func loadRows(ctx context.Context, c client.Client, sel selection) ([]row, error) {
	log := logging.FromContext(ctx)
	runs := &v1alpha1.QuantRunList{}
	var opts []client.ListOption
	where := "every namespace"
	if !sel.allNamespaces {
		opts = append(opts, client.InNamespace(sel.namespace))
		where = sel.namespace
	}
	if sel.job != "" {
		if !sel.allNamespaces {
			j := &v1alpha1.QuantJob{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: sel.namespace, Name: sel.job}, j); err != nil {
				return nil, fmt.Errorf("getting QuantJob %s/%s: %w", sel.namespace, sel.job, err)
			}
		}
		opts = append(opts, client.MatchingLabels{v1alpha1.LabelJob: quantrun.JobLabelValue(sel.job)})
	}
	if sel.labels != "" {
		s, err := labels.Parse(sel.labels)
		if err != nil {
			return nil, usagef("-l %q: %w", sel.labels, err)
		}
		opts = append(opts, client.MatchingLabelsSelector{Selector: s})
	}
	log.V(logging.Debug).Info("Listing QuantRuns", "namespace", where, "job", sel.job, "selector", sel.labels)
	if err := c.List(ctx, runs, opts...); err != nil {
		return nil, fmt.Errorf("listing QuantRuns in %s: %w", where, err)
	}
	profiles := map[string]*v1alpha1.GPUNodeProfile{}
	rows := make([]row, 0, len(runs.Items))
	for i := range runs.Items {
		r := &runs.Items[i]
		if sel.job != "" && r.Spec.JobRef.Name != sel.job {
			continue
		}
		node := r.Spec.NodeName
		p, seen := profiles[node]
		if !seen && node != "" {
			p = &v1alpha1.GPUNodeProfile{}
			if err := c.Get(ctx, client.ObjectKey{Name: node}, p); err != nil {
				if !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
					return nil, fmt.Errorf("getting GPUNodeProfile %s: %w", node, err)
				}
				log.V(logging.Debug).Info("No GPUNodeProfile for the node of a run", "node", node, "error", err.Error())
				p = nil
			}
			profiles[node] = p
		}
		rows = append(rows, newRow(r, p))
	}
	slices.SortFunc(rows, func(a, b row) int {
		if c := naturalCompare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return naturalCompare(a.Name, b.Name)
	})
	return rows, nil
}

func newRow(r *v1alpha1.QuantRun, p *v1alpha1.GPUNodeProfile) row {
	out := row{run: r, Namespace: r.Namespace, Name: r.Name, Node: r.Spec.NodeName, GPU: r.Spec.GPUUUID, Phase: string(r.Status.Phase)}
	if a := r.Status.AllocatedGPU; a != nil && a.UUID != "" {
		out.GPU = a.UUID
	}
	if r.Spec.GPUIndex != nil {
		out.Index = fmt.Sprint(*r.Spec.GPUIndex)
	}
	if p != nil {
		out.Driver, out.CUDA = p.Status.DriverVersion, p.Status.CUDADriverVersion
		for _, g := range p.Status.GPUs {
			if g.UUID == out.GPU {
				out.Product, out.Index = g.Product, fmt.Sprint(g.Index)
			}
			// A MIG run's GPU is its slice: name the parent GPU's product
			// and the slice's profile, and keep the parent's index.
			for _, m := range g.MIGDevices {
				if m.UUID == out.GPU {
					out.Product, out.Index = g.Product+" MIG "+r.Spec.MIGProfile, fmt.Sprint(g.Index)
				}
			}
		}
	}
	out.Message = r.Status.Message
	if res := r.Status.Results; res != nil {
		out.Verdict, out.Reason = string(res.Verdict), res.Reason
		// Said again from the results: runs recorded before the status
		// message carried the sentence have one too.
		out.Message = res.Explain(r.Spec.Tolerances)
		if a := res.Accuracy; a != nil {
			out.SNR = a.SNRdB
		}
		if o := res.Overhead; o != nil {
			out.Eager, out.Graph = o.HostEagerMicros, o.HostGraphMicros
		}
		if pf := res.Performance; pf != nil {
			out.Bandwidth, out.GPUMicros, out.FractionOfBandwidth = pf.BandwidthGBps, pf.GPUMicros, pf.FractionOfCopyBandwidth
		}
	}
	return out
}

// Unit conversions from the API's decimals to the CSV's base units.
var (
	bytesPerGB      = big.NewRat(1_000_000_000, 1)
	secondsPerMicro = big.NewRat(1, 1_000_000)
)

// resultColumn is one column of the results tables and the CSV.
type resultColumn struct {
	// title heads the table's column; key names it to --sort-by (and
	// --metric, for a metric).
	title, key string
	// csv heads the CSV's column: snake case with the unit.
	csv string
	// numeric columns sort as numbers.
	numeric bool
	// metric columns are measurements --metric can plot: label in unit.
	metric      bool
	label, unit string
	// wide columns show only with -o wide.
	wide bool
	get  func(*row) string
	// table formats the value for the table (humanised); nil: as is.
	table func(string) string
	// toCSV converts the value to the CSV's unit; nil: as is.
	toCSV func(string) string
	// describe names a measurement in describe's Results section; empty:
	// not shown there.
	describe string
}

// tableValue is the column's value of r as tables and describe show it:
// humanised where the column says so, "" when r has none.
func (c resultColumn) tableValue(r *row) string {
	v := c.get(r)
	if v != "" && c.table != nil {
		v = c.table(v)
	}
	return v
}

// resultColumns are the columns of get results and export, in order.
func resultColumns() []resultColumn {
	seconds := func(s string) string { return scaleDecimal(s, secondsPerMicro, 9) }
	return []resultColumn{
		{title: "NAMESPACE", key: "namespace", csv: "namespace", get: func(r *row) string { return r.Namespace }},
		{title: "RUN", key: "run", csv: "run", get: func(r *row) string { return r.Name }},
		{title: "NODE", key: "node", csv: "node", get: func(r *row) string { return r.Node }},
		{title: "GPU", key: "gpu", csv: "gpu_index", numeric: true, get: func(r *row) string { return r.Index }},
		{title: "UUID", key: "uuid", csv: "gpu_uuid", get: func(r *row) string { return r.GPU }},
		{title: "PRODUCT", key: "product", csv: "product", get: func(r *row) string { return r.Product }},
		{title: "DRIVER", key: "driver", csv: "driver_version", get: func(r *row) string { return r.Driver }},
		{title: "CUDA", key: "cuda", csv: "cuda_version", wide: true, get: func(r *row) string { return r.CUDA }},
		{title: "PHASE", key: "phase", csv: "phase", get: func(r *row) string { return r.Phase }},
		{title: "VERDICT", key: "verdict", csv: "verdict", get: func(r *row) string { return r.Verdict }},
		{title: "REASON", key: "reason", csv: "reason", get: func(r *row) string { return r.Reason }},
		{title: "SNR-DB", key: "snr", csv: "snr_db", numeric: true, metric: true, label: "SNR", unit: "dB", describe: "SNR dB", get: func(r *row) string { return r.SNR }},
		{title: "GB/S", key: "bandwidth", csv: "bandwidth_bytes_per_second", numeric: true, metric: true, label: "bandwidth", unit: "GB/s", describe: "Bandwidth GB/s",
			get: func(r *row) string { return r.Bandwidth }, toCSV: func(s string) string { return scaleDecimal(s, bytesPerGB, 0) }},
		{title: "OF-COPY-BW", key: "fraction", csv: "fraction_of_copy_bandwidth", numeric: true, metric: true, label: "fraction of copy bandwidth", unit: "ratio", describe: "Of copy bandwidth",
			get: func(r *row) string { return r.FractionOfBandwidth }},
		{title: "GPU-TIME", key: "gpu-us", csv: "gpu_time_seconds", numeric: true, metric: true, label: "GPU time per step", unit: "µs", describe: "GPU time",
			get: func(r *row) string { return r.GPUMicros }, table: humanMicros, toCSV: seconds},
		{title: "EAGER", key: "eager", csv: "host_eager_seconds", numeric: true, metric: true, label: "host time per eager step", unit: "µs", describe: "Host eager",
			get: func(r *row) string { return r.Eager }, table: humanMicros, toCSV: seconds},
		{title: "GRAPH", key: "graph", csv: "host_graph_seconds", numeric: true, metric: true, label: "host time per graph replay", unit: "µs", describe: "Host graph",
			get: func(r *row) string { return r.Graph }, table: humanMicros, toCSV: seconds},
		{title: "MESSAGE", key: "message", csv: "message", wide: true, get: func(r *row) string { return r.Message }},
	}
}

// metricNames are the names --metric takes, in the order a default is
// picked: the first that some run has a value of.
func metricNames() []string {
	var out []string
	for _, c := range resultColumns() {
		if c.metric {
			out = append(out, c.key)
		}
	}
	return out
}

// defaultMetricOrder is the order --metric's default is picked in: the
// first of these that some run has, so that a Validation job on the
// reference backend (no bandwidth) plots its SNR.
var defaultMetricOrder = []string{"bandwidth", "snr", "gpu-us", "eager"}

// pickMetric is name, or the first of defaultMetricOrder that some row has a
// value of when name is empty.
func pickMetric(name string, rows []row) (resultColumn, error) {
	if name == "" {
		for _, k := range defaultMetricOrder {
			c, _ := columnByKey(k)
			for i := range rows {
				if c.get(&rows[i]) != "" {
					return c, nil
				}
			}
		}
		return resultColumn{}, errors.New("--plot: no run has a measurement yet")
	}
	c, ok := columnByKey(name)
	if !ok || !c.metric {
		return resultColumn{}, usagef("--metric %q: want one of %s", name, strings.Join(metricNames(), ", "))
	}
	return c, nil
}

// columnKeys are the names --sort-by takes.
func columnKeys() []string {
	var out []string
	for _, f := range resultColumns() {
		out = append(out, f.key)
	}
	return out
}

// columnByKey finds a column by its key or title, case-insensitively.
func columnByKey(k string) (resultColumn, bool) {
	for _, f := range resultColumns() {
		if strings.EqualFold(f.key, k) || strings.EqualFold(f.title, k) {
			return f, true
		}
	}
	return resultColumn{}, false
}

// sortRows sorts rows by the column named key (--sort-by; none when empty),
// numerically for numbers, names naturally, empty values last.
func sortRows(rows []row, key string) error {
	if key == "" {
		return nil
	}
	f, ok := columnByKey(key)
	if !ok {
		return usagef("--sort-by %q: want one of %s", key, strings.Join(columnKeys(), ", "))
	}
	slices.SortStableFunc(rows, func(a, b row) int {
		va, vb := f.get(&a), f.get(&b)
		if !f.numeric {
			return naturalCompare(va, vb)
		}
		ra, oka := new(big.Rat).SetString(va)
		rb, okb := new(big.Rat).SetString(vb)
		switch {
		case oka && okb:
			return ra.Cmp(rb)
		case oka:
			return -1
		case okb:
			return 1
		}
		return 0
	})
	return nil
}

// failOnRows is a verdictError when some run's verdict is at least as bad
// as level (--fail-on), as run's exit code 3; it counts those runs and
// names the first.
func failOnRows(level string, rows []row) error {
	var first *verdictError
	bad := 0
	for _, r := range rows {
		err := failOn(level, v1alpha1.Verdict(r.Verdict), r.Reason)
		var ve verdictError
		if !errors.As(err, &ve) {
			continue
		}
		bad++
		if first == nil {
			ve.reason = fmt.Sprintf("run %s: %s", r.Name, ve.reason)
			first = &ve
		}
	}
	if first == nil {
		return nil
	}
	first.reason = fmt.Sprintf("%d of %d runs at least as bad as --fail-on %s; the first is %s", bad, len(rows), level, first.reason)
	return *first
}
