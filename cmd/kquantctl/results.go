// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
)

// listOptions are the flags of the commands that print runs.
type listOptions struct {
	sel    selection
	output string
	sortBy string
	plot   string
	metric string
	failOn string
	print  *genericclioptions.PrintFlags
}

func (a *app) getCommand() *cobra.Command {
	get := &cobra.Command{
		Use: "get", Short: "Display kquant results", Args: noArgs,
		Example: a.examples(`
{name} get results mxfp8-check`),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usagef("get what? %s get results JOB", a.name)
		}}
	var o listOptions
	results := &cobra.Command{
		Use:   "results [JOB]",
		Short: "The results of a QuantJob, one row per GPU",
		Long: `results prints one row per run of JOB (of every job without one): the node,
the GPU (index, UUID and product from the node's GPUNodeProfile), the driver,
the verdict and its reason, and the headline numbers, times humanised (µs, ms,
s); -o wide adds the CUDA version and the verdict's sentence. -n, -A and -l
select the runs as kubectl does. --sort-by sorts by a column (numbers as
numbers, names naturally); -o takes json, yaml, name, jsonpath=...,
go-template=... and custom-columns=... as kubectl does (of the QuantRuns);
--plot writes the per-product distribution of --metric as a PNG. It exits 3
when a run's verdict is at least as bad as --fail-on, as run does.`,
		Example: a.examples(`
# One row per GPU, slowest first
{name} get results mxfp8-check --sort-by bandwidth

# Every job's runs in every namespace, with the verdicts' sentences
{name} get results -A -o wide

# Runs selected by label, here every run of one job; exit 3 if one failed
{name} get results -l kquant.dev/job=mxfp8-check --fail-on fail

# The verdicts only, as kubectl's jsonpath
{name} get results mxfp8-check -o jsonpath='{.items[*].status.results.verdict}'

# A PNG of the SNR per product
{name} get results mxfp8-check --plot snr.png --metric snr`),
		Args:              maxArgs(1),
		ValidArgsFunction: a.completeJobs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFailOn(o.failOn); err != nil {
				return err
			}
			if len(args) == 1 {
				o.sel.job = args[0]
			}
			rows, err := a.selectedRows(cmd, &o.sel, o.sortBy)
			if err != nil {
				return err
			}
			if o.plot != "" {
				title := "job " + o.sel.job
				if o.sel.job == "" {
					title = "every job"
				}
				if err := a.plotRows(o.plot, o.metric, "product", title, groupRows(rows, "product")); err != nil {
					return err
				}
			}
			if err := a.printRows(rows, &o); err != nil {
				return err
			}
			return failOnRows(o.failOn, rows)
		},
	}
	a.clusterFlags(results)
	selectionFlags(results, &o.sel)
	a.listFlags(results, &o)
	failOnFlag(results, &o.failOn, "a run")
	get.AddCommand(results)
	return get
}

// selectedRows are the rows of the runs sel selects, sorted by the column
// sortBy names; sel.namespace is filled from the kubeconfig flags.
func (a *app) selectedRows(cmd *cobra.Command, sel *selection, sortBy string) ([]row, error) {
	c, ns, err := a.clusterClient()
	if err != nil {
		return nil, err
	}
	sel.namespace = ns
	rows, err := loadRows(cmd.Context(), c, *sel)
	if err != nil {
		return nil, err
	}
	return rows, sortRows(rows, sortBy)
}

// listFlags adds the output, sort and plot flags.
func (a *app) listFlags(cmd *cobra.Command, o *listOptions) {
	o.print = genericclioptions.NewPrintFlags("")
	fs := cmd.Flags()
	fs.StringVarP(&o.output, "output", "o", "", "table (default), wide, json, yaml, name, jsonpath=..., go-template=... or custom-columns=...")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"wide", "json", "yaml", "name", "jsonpath=", "custom-columns="}, cobra.ShellCompDirectiveNoSpace))
	oneOf(fs, cmd, &o.sortBy, "sort-by", "", "", "sort by a column: "+strings.Join(columnKeys(), ", "), columnKeys()...)
	fs.StringVar(&o.plot, "plot", "", "write a PNG of the per-product distribution of --metric to this file")
	metricFlag(cmd, &o.metric)
}

// metricFlag adds --metric, the measurement --plot draws.
func metricFlag(cmd *cobra.Command, p *string) {
	oneOf(cmd.Flags(), cmd, p, "metric", "", "", "the measurement --plot draws: "+strings.Join(metricNames(), ", ")+
		" (default: the first of "+strings.Join(defaultMetricOrder, ", ")+" that the runs have)", metricNames()...)
}

// printRows prints rows as a table, or their runs with a kubectl printer.
func (a *app) printRows(rows []row, o *listOptions) error {
	switch {
	case o.output == "" || o.output == "wide":
		return writeRows(a.stdout, rows, o.output == "wide", o.sel.allNamespaces)
	case strings.HasPrefix(o.output, "custom-columns="):
		return writeCustomColumns(a.stdout, rows, strings.TrimPrefix(o.output, "custom-columns="))
	}
	// The printers take "jsonpath=..." and "go-template=..." whole.
	o.print.OutputFormat = &o.output
	p, err := o.print.ToPrinter()
	if err != nil {
		return usagef("-o %s: %w", o.output, err)
	}
	p = &printers.TypeSetterPrinter{Delegate: p, Typer: runListScheme()}
	list := &v1alpha1.QuantRunList{}
	for _, r := range rows {
		list.Items = append(list.Items, *r.run)
	}
	if o.output == "name" {
		for i := range list.Items {
			if err := p.PrintObj(&list.Items[i], a.stdout); err != nil {
				return err
			}
		}
		return nil
	}
	return p.PrintObj(list, a.stdout)
}

// runListScheme knows kquant's kinds, for the printers' apiVersion and kind.
func runListScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = v1alpha1.AddToScheme(s)
	return s
}

// writeRows prints the per-GPU table: the NAMESPACE column with -A, the
// wide columns with -o wide, times humanised.
func writeRows(w io.Writer, rows []row, wide, allNamespaces bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var cols []resultColumn
	for _, c := range resultColumns() {
		if (c.wide && !wide) || (c.key == "namespace" && !allNamespaces) {
			continue
		}
		cols = append(cols, c)
	}
	for i, c := range cols {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, c.title)
	}
	fmt.Fprintln(tw)
	for i := range rows {
		for j, c := range cols {
			if j > 0 {
				fmt.Fprint(tw, "\t")
			}
			v := c.tableValue(&rows[i])
			if v == "" {
				v = "-"
			}
			fmt.Fprint(tw, v)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// writeCustomColumns prints the runs with kubectl's custom-columns syntax:
// TITLE:.json.path,...
func writeCustomColumns(w io.Writer, rows []row, spec string) error {
	type col struct {
		title string
		jp    *jsonpath.JSONPath
	}
	var cols []col
	for _, part := range strings.Split(spec, ",") {
		title, path, ok := strings.Cut(part, ":")
		if !ok || title == "" || path == "" {
			return usagef("custom-columns %q: want TITLE:.json.path[,TITLE:.json.path]", spec)
		}
		if !strings.HasPrefix(path, "{") {
			path = "{" + path + "}"
		}
		jp := jsonpath.New(title).AllowMissingKeys(true)
		if err := jp.Parse(path); err != nil {
			return usagef("custom-columns %s: %w", title, err)
		}
		cols = append(cols, col{title, jp})
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, c := range cols {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, c.title)
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(r.run)
		if err != nil {
			return fmt.Errorf("converting run %s: %w", r.Name, err)
		}
		for i, c := range cols {
			var b bytes.Buffer
			if err := c.jp.Execute(&b, obj); err != nil {
				return fmt.Errorf("custom-columns %s of run %s: %w", c.title, r.Name, err)
			}
			v := b.String()
			if v == "" {
				v = "<none>"
			}
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, v)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func (a *app) exportCommand() *cobra.Command {
	var output, sortBy string
	var sel selection
	cmd := &cobra.Command{
		Use:   "export [JOB] -o csv",
		Short: "Export the per-GPU results of a QuantJob as CSV",
		Long: `export writes the rows of "get results" as CSV, every column, with units in the
headers and values in base units (snr_db, bandwidth_bytes_per_second,
gpu_time_seconds, host_eager_seconds, ...), for spreadsheets and scripts.`,
		Example: a.examples(`
{name} export mxfp8-check -o csv > mxfp8-check.csv

# Every run of every job in every namespace
{name} export -A -o csv`),
		Args:              maxArgs(1),
		ValidArgsFunction: a.completeJobs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "csv" {
				return usagef("-o %q: export writes csv", output)
			}
			if len(args) == 1 {
				sel.job = args[0]
			}
			rows, err := a.selectedRows(cmd, &sel, sortBy)
			if err != nil {
				return err
			}
			return writeCSV(a.stdout, rows)
		},
	}
	a.clusterFlags(cmd)
	selectionFlags(cmd, &sel)
	oneOf(cmd.Flags(), cmd, &output, "output", "o", "csv", "csv", "csv")
	oneOf(cmd.Flags(), cmd, &sortBy, "sort-by", "", "", "sort by a column: "+strings.Join(columnKeys(), ", "), columnKeys()...)
	return cmd
}

// writeCSV writes rows with every column, headed by snake-case names with
// their units, and values in those units.
func writeCSV(w io.Writer, rows []row) error {
	cw := csv.NewWriter(w)
	cols := resultColumns()
	header := make([]string, 0, len(cols))
	for _, c := range cols {
		header = append(header, c.csv)
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	for i := range rows {
		rec := make([]string, 0, len(header))
		for _, c := range cols {
			v := c.get(&rows[i])
			if c.toCSV != nil && v != "" {
				v = c.toCSV(v)
			}
			rec = append(rec, v)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// completeJobs completes a QuantJob name in the selected namespace.
func (a *app) completeJobs(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, ns, err := a.clusterClient()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	jobs := &v1alpha1.QuantJobList{}
	if err := c.List(cmd.Context(), jobs, client.InNamespace(ns)); err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []string
	for _, j := range jobs.Items {
		out = append(out, j.Name)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
