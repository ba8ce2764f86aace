// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/bench"
)

func writeJSON(w io.Writer, res *v1alpha1.RunResults) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding results: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// column is one column of the per-shape table, shown only when some shape
// has a value for it.
type column struct {
	title string
	value func(s *v1alpha1.ShapeResult) string
}

// writeTable prints a local run; g names the GPU of a CUDA run (nil on the
// reference backend, or when NVML could not say).
func writeTable(w io.Writer, m *manifests, spec bench.Spec, rep *bench.Report, g *gpuDescription) error {
	res := &rep.Results
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "RECIPE\t%s\t%s\n", m.recipe.Name, spec.RecipeKey)
	wl := spec.Workload
	fmt.Fprintf(tw, "JOB\t%s\t%s %s, %s %s %s, usage %s, seed %d\n", m.job.Name, spec.Mode, wl.Operation, wl.TensorRole, wl.InputDType, wl.Distribution, wl.Usage, wl.Seed)
	backendNote := ""
	if res.Backend == "reference" {
		backendNote = "pure Go on the CPU; timings are CPU time per step, not GPU figures"
	}
	fmt.Fprintf(tw, "BACKEND\t%s\t%s\n", res.Backend, backendNote)
	if g != nil {
		fmt.Fprintf(tw, "GPU\t%s\t%s, driver %s, CUDA %s\n", g.Product, g.UUID, g.Driver, g.CUDA)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)

	acc := func(f func(a *v1alpha1.Accuracy) string) func(*v1alpha1.ShapeResult) string {
		return func(s *v1alpha1.ShapeResult) string {
			if s.Accuracy == nil {
				return ""
			}
			return f(s.Accuracy)
		}
	}
	ovh := func(f func(o *v1alpha1.Overhead) string) func(*v1alpha1.ShapeResult) string {
		return func(s *v1alpha1.ShapeResult) string {
			if s.Overhead == nil {
				return ""
			}
			return f(s.Overhead)
		}
	}
	perf := func(f func(p *v1alpha1.Performance) string) func(*v1alpha1.ShapeResult) string {
		return func(s *v1alpha1.ShapeResult) string {
			if s.Performance == nil {
				return ""
			}
			return f(s.Performance)
		}
	}
	eagerTitle := "EAGER"
	if res.Backend == "reference" {
		eagerTitle = "CPU/STEP"
	}
	micros := func(s string) string {
		if s == "" {
			return ""
		}
		return humanMicros(s)
	}
	cols := []column{
		{"SNR-dB", acc(func(a *v1alpha1.Accuracy) string { return a.SNRdB })},
		{"MAX-ABS-ERR", acc(func(a *v1alpha1.Accuracy) string { return a.MaxAbsError })},
		{"SATURATED", acc(func(a *v1alpha1.Accuracy) string { return strconv.FormatInt(a.Saturated, 10) })},
		{"FLUSHED", acc(func(a *v1alpha1.Accuracy) string { return strconv.FormatInt(a.FlushedToZero, 10) })},
		{"BIT-EXACT", acc(func(a *v1alpha1.Accuracy) string {
			if a.BitExactVsReference == nil {
				return ""
			}
			return strconv.FormatBool(*a.BitExactVsReference)
		})},
		{eagerTitle, ovh(func(o *v1alpha1.Overhead) string { return micros(o.HostEagerMicros) })},
		{"GRAPH", ovh(func(o *v1alpha1.Overhead) string { return micros(o.HostGraphMicros) })},
		{"KERNELS", ovh(func(o *v1alpha1.Overhead) string {
			if o.KernelsPerStep == 0 {
				return ""
			}
			return strconv.Itoa(int(o.KernelsPerStep))
		})},
		{"PTR-LOAD", ovh(func(o *v1alpha1.Overhead) string { return micros(o.PointerLoadMicros) })},
		{"GPU-TIME", perf(func(p *v1alpha1.Performance) string { return micros(p.GPUMicros) })},
		{"GB/S", perf(func(p *v1alpha1.Performance) string { return p.BandwidthGBps })},
		{"OF-COPY-BW", perf(func(p *v1alpha1.Performance) string { return p.FractionOfCopyBandwidth })},
	}
	var shown []column
	for _, c := range cols {
		for i := range res.Shapes {
			if c.value(&res.Shapes[i]) != "" {
				shown = append(shown, c)
				break
			}
		}
	}
	fmt.Fprint(tw, "SHAPE")
	for _, c := range shown {
		fmt.Fprintf(tw, "\t%s", c.title)
	}
	fmt.Fprintln(tw)
	row := func(name string, s *v1alpha1.ShapeResult) {
		fmt.Fprint(tw, name)
		for _, c := range shown {
			v := c.value(s)
			if v == "" {
				v = "-"
			}
			fmt.Fprintf(tw, "\t%s", v)
		}
		fmt.Fprintln(tw)
	}
	for i := range res.Shapes {
		s := &res.Shapes[i]
		name := fmt.Sprintf("%dx%d", s.Rows, s.Cols)
		if wl.Operation == v1alpha1.OperationQuantizedLinear {
			n := s.Cols
			if o := wl.Shapes[i].OutFeatures; o != nil {
				n = *o
			}
			name += fmt.Sprintf("x%d", n)
		}
		row(name, s)
	}
	if len(res.Shapes) > 1 {
		// The run's headline: worst accuracy, the largest shape's costs.
		row("RUN", &v1alpha1.ShapeResult{Accuracy: res.Accuracy, Overhead: res.Overhead, Performance: res.Performance})
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if g := res.Graph; g != nil {
		fmt.Fprintf(w, "\nGRAPH    capturable %v, replay matches eager %v\n", g.Capturable, g.ReplayMatchesEager)
	}
	tol := ""
	if t := spec.Tolerances; t.MinSNRdB != "" || t.RequireBitExact {
		tol = fmt.Sprintf(" (minSNRdB %q, requireBitExact %v)", t.MinSNRdB, t.RequireBitExact)
	}
	_, err := fmt.Fprintf(w, "\nVERDICT  %s  %s: %s%s\n", res.Verdict, res.Reason, rep.Message, tol)
	return err
}
