// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

func clientKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// describeRun prints a run as kubectl describe prints objects: one field per
// line, sections indented.
func describeRun(w io.Writer, r row) error {
	run := r.run
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	line := func(indent int, k, v string) {
		if v == "" {
			v = "<none>"
		}
		fmt.Fprintf(tw, "%*s%s:\t%s\n", indent, "", k, v)
	}
	line(0, "Name", run.Name)
	line(0, "Namespace", run.Namespace)
	line(0, "Job", run.Spec.JobRef.Name)
	line(0, "Attempt", fmt.Sprint(run.Spec.Attempt))
	line(0, "Phase", string(run.Status.Phase))
	if run.Status.Reason != "" || run.Status.Message != "" {
		line(0, "Reason", run.Status.Reason)
		line(0, "Message", run.Status.Message)
	}
	fmt.Fprintln(tw, "Placement:")
	line(2, "Node", r.Node)
	line(2, "GPU", fmt.Sprintf("%s (index %s)", r.GPU, r.Index))
	line(2, "Product", r.Product)
	line(2, "Driver", r.Driver)
	line(2, "CUDA", r.CUDA)
	fmt.Fprintln(tw, "Recipe:")
	line(2, "Name", run.Spec.Recipe.Name)
	line(2, "Key", run.Spec.Recipe.Key)
	wl := run.Spec.Workload
	fmt.Fprintln(tw, "Workload:")
	line(2, "Mode", string(run.Spec.Mode))
	line(2, "Operation", string(wl.Operation))
	line(2, "Tensor role", string(wl.TensorRole))
	line(2, "Input", fmt.Sprintf("%s %s, seed %d", wl.InputDType, wl.Distribution, wl.Seed))
	for _, s := range wl.Shapes {
		line(2, "Shape", fmt.Sprintf("%dx%d", s.Rows, s.Cols))
	}
	if t := run.Status.StartTime; t != nil {
		line(0, "Started", t.UTC().Format("2006-01-02T15:04:05Z"))
	}
	if t := run.Status.CompletionTime; t != nil {
		line(0, "Completed", t.UTC().Format("2006-01-02T15:04:05Z"))
	}
	if res := run.Status.Results; res != nil {
		fmt.Fprintln(tw, "Results:")
		line(2, "Backend", res.Backend)
		line(2, "Verdict", fmt.Sprintf("%s (%s)", res.Verdict, res.Reason))
		line(2, "Why", r.Message)
		for _, c := range resultColumns() {
			if c.describe != "" {
				line(2, c.describe, c.tableValue(&r))
			}
		}
		if g := res.Graph; g != nil {
			line(2, "Graph", fmt.Sprintf("capturable %v, replay matches eager %v", g.Capturable, g.ReplayMatchesEager))
		}
	}
	return tw.Flush()
}
