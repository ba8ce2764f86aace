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
	output string
	sortBy string
	plot   string
	metric string
	print  *genericclioptions.PrintFlags
}

func (a *app) getCommand() *cobra.Command {
	get := &cobra.Command{Use: "get", Short: "Display kquant results", Args: noArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		return usagef("get what? %s get results JOB", a.name)
	}}
	var o listOptions
	results := &cobra.Command{
		Use:   "results JOB",
		Short: "The results of a QuantJob, one row per GPU",
		Long: `results prints one row per run of the job: the node, the GPU (index, UUID and
product from the node's GPUNodeProfile), the driver, the verdict and the headline
numbers. --sort-by sorts by a column (numbers as numbers); -o takes json, yaml,
name, jsonpath=..., go-template=... and custom-columns=... as kubectl does (of the
QuantRuns); --plot writes the per-GPU distribution of --metric as a PNG.`,
		Args:              exactArgs(1),
		ValidArgsFunction: a.completeJobs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rows, err := a.jobRows(cmd, args[0], o.sortBy)
			if err != nil {
				return err
			}
			if o.plot != "" {
				if err := a.plotRows(o.plot, o.metric, "GPU", "job "+args[0], groupRows(rows, "product")); err != nil {
					return err
				}
			}
			return a.printRows(rows, &o)
		},
	}
	a.listFlags(results, &o)
	get.AddCommand(results)
	return get
}

// jobRows are the rows of job's runs in the selected namespace, sorted by
// the column sortBy names.
func (a *app) jobRows(cmd *cobra.Command, job, sortBy string) ([]row, error) {
	c, ns, err := a.clusterClient()
	if err != nil {
		return nil, err
	}
	rows, err := loadRows(cmd.Context(), c, ns, job)
	if err != nil {
		return nil, err
	}
	return rows, sortRows(rows, sortBy)
}

// listFlags adds the output, sort and plot flags.
func (a *app) listFlags(cmd *cobra.Command, o *listOptions) {
	o.print = genericclioptions.NewPrintFlags("")
	fs := cmd.Flags()
	fs.StringVarP(&o.output, "output", "o", "", "table (default), json, yaml, name, jsonpath=..., go-template=... or custom-columns=...")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "yaml", "name", "jsonpath=", "custom-columns="}, cobra.ShellCompDirectiveNoSpace))
	oneOf(fs, cmd, &o.sortBy, "sort-by", "", "", "sort by a column: "+strings.Join(columnKeys(false), ", "), columnKeys(false)...)
	fs.StringVar(&o.plot, "plot", "", "write a PNG of the per-GPU distribution of --metric to this file")
	oneOf(fs, cmd, &o.metric, "metric", "", "bandwidth", "the metric of --plot and compare: "+strings.Join(columnKeys(true), ", "), columnKeys(true)...)
}

// printRows prints rows as a table, or their runs with a kubectl printer.
func (a *app) printRows(rows []row, o *listOptions) error {
	switch {
	case o.output == "" || o.output == "wide":
		return writeRows(a.stdout, rows)
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

// writeRows prints the per-GPU table.
func writeRows(w io.Writer, rows []row) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	cols := resultColumns()
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
			v := c.get(&rows[i])
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
	cmd := &cobra.Command{
		Use:               "export JOB -o csv",
		Short:             "Export the per-GPU results of a QuantJob as CSV",
		Args:              exactArgs(1),
		ValidArgsFunction: a.completeJobs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "csv" {
				return usagef("-o %q: export writes csv", output)
			}
			rows, err := a.jobRows(cmd, args[0], sortBy)
			if err != nil {
				return err
			}
			return writeCSV(a.stdout, rows)
		},
	}
	oneOf(cmd.Flags(), cmd, &output, "output", "o", "csv", "csv", "csv")
	oneOf(cmd.Flags(), cmd, &sortBy, "sort-by", "", "", "sort by a column: "+strings.Join(columnKeys(false), ", "), columnKeys(false)...)
	return cmd
}

// writeCSV writes rows with the table's columns (keys as the header) and the
// verdict's reason.
func writeCSV(w io.Writer, rows []row) error {
	cw := csv.NewWriter(w)
	cols := resultColumns()
	header := make([]string, 0, len(cols)+2)
	for _, c := range cols {
		header = append(header, c.key)
	}
	header = append(header, "reason", "cuda")
	if err := cw.Write(header); err != nil {
		return err
	}
	for i := range rows {
		rec := make([]string, 0, len(header))
		for _, c := range cols {
			rec = append(rec, c.get(&rows[i]))
		}
		rec = append(rec, rows[i].Reason, rows[i].CUDA)
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
