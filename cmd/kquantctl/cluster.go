// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantscheme "github.com/kquant/kquant/api/scheme"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/quantrun"
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

// row is one run with what the tables show of it: the GPU it ran on, named
// as the node's GPUNodeProfile names it.
type row struct {
	run                            *v1alpha1.QuantRun
	Name, Node, GPU, Index         string
	Product, Driver, CUDA          string
	Phase, Verdict, Reason         string
	SNR, Bandwidth, Eager, Graph   string
	GPUMicros, FractionOfBandwidth string
}

// loadRows reads the runs of job (every job's when job is "") in ns and the
// profiles of their nodes.
func loadRows(ctx context.Context, c client.Client, ns, job string) ([]row, error) {
	runs := &v1alpha1.QuantRunList{}
	opts := []client.ListOption{client.InNamespace(ns)}
	if job != "" {
		j := &v1alpha1.QuantJob{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: job}, j); err != nil {
			return nil, fmt.Errorf("getting QuantJob %s/%s: %w", ns, job, err)
		}
		opts = append(opts, client.MatchingLabels{v1alpha1.LabelJob: quantrun.JobLabelValue(job)})
	}
	if err := c.List(ctx, runs, opts...); err != nil {
		return nil, fmt.Errorf("listing QuantRuns in %s: %w", ns, err)
	}
	profiles := map[string]*v1alpha1.GPUNodeProfile{}
	rows := make([]row, 0, len(runs.Items))
	for i := range runs.Items {
		r := &runs.Items[i]
		if job != "" && r.Spec.JobRef.Name != job {
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
				p = nil
			}
			profiles[node] = p
		}
		rows = append(rows, newRow(r, p))
	}
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.Name, b.Name) })
	return rows, nil
}

func newRow(r *v1alpha1.QuantRun, p *v1alpha1.GPUNodeProfile) row {
	out := row{run: r, Name: r.Name, Node: r.Spec.NodeName, GPU: r.Spec.GPUUUID, Phase: string(r.Status.Phase)}
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
	if res := r.Status.Results; res != nil {
		out.Verdict, out.Reason = string(res.Verdict), res.Reason
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

// resultColumn is one column of the results tables: a title, a value, and whether
// it sorts as a number.
type resultColumn struct {
	title   string
	key     string
	numeric bool
	get     func(*row) string
}

// resultColumns are the columns of get results and export, in order.
func resultColumns() []resultColumn {
	return []resultColumn{
		{"RUN", "run", false, func(r *row) string { return r.Name }},
		{"NODE", "node", false, func(r *row) string { return r.Node }},
		{"GPU", "gpu", true, func(r *row) string { return r.Index }},
		{"UUID", "uuid", false, func(r *row) string { return r.GPU }},
		{"PRODUCT", "product", false, func(r *row) string { return r.Product }},
		{"DRIVER", "driver", false, func(r *row) string { return r.Driver }},
		{"PHASE", "phase", false, func(r *row) string { return r.Phase }},
		{"VERDICT", "verdict", false, func(r *row) string { return r.Verdict }},
		{"SNR-DB", "snr", true, func(r *row) string { return r.SNR }},
		{"GBPS", "bandwidth", true, func(r *row) string { return r.Bandwidth }},
		{"OF-COPY-BW", "fraction", true, func(r *row) string { return r.FractionOfBandwidth }},
		{"GPU-US", "gpu-us", true, func(r *row) string { return r.GPUMicros }},
		{"EAGER-US", "eager", true, func(r *row) string { return r.Eager }},
		{"GRAPH-US", "graph", true, func(r *row) string { return r.Graph }},
	}
}

// columnKeys are the names --sort-by and --metric take.
func columnKeys(numericOnly bool) []string {
	var out []string
	for _, f := range resultColumns() {
		if !numericOnly || f.numeric {
			out = append(out, f.key)
		}
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
// numerically for numbers, empty values last.
func sortRows(rows []row, key string) error {
	if key == "" {
		return nil
	}
	f, ok := columnByKey(key)
	if !ok {
		return usagef("--sort-by %q: want one of %s", key, strings.Join(columnKeys(false), ", "))
	}
	slices.SortStableFunc(rows, func(a, b row) int {
		va, vb := f.get(&a), f.get(&b)
		if !f.numeric {
			return strings.Compare(va, vb)
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
