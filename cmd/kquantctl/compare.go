// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/summary"
)

// group is the runs of one product, node or driver.
type group struct {
	key  string
	rows []row
}

// groupRows groups rows by product, node or driver, groups in key order.
func groupRows(rows []row, by string) []group {
	idx := map[string]int{}
	var out []group
	for _, r := range rows {
		var k string
		switch by {
		case "node":
			k = r.Node
		case "driver":
			k = r.Driver
			if r.CUDA != "" {
				k += " (CUDA " + r.CUDA + ")"
			}
		default:
			k = r.Product
		}
		if k == "" {
			k = "<unknown>"
		}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, group{key: k})
		}
		out[i].rows = append(out[i].rows, r)
	}
	slices.SortFunc(out, func(a, b group) int { return naturalCompare(a.key, b.key) })
	return out
}

func (a *app) compareCommand() *cobra.Command {
	var by, metric, plot, failOn string
	var sel selection
	cmd := &cobra.Command{
		Use:   "compare [JOB] --by product|node|driver",
		Short: "The fleet's distribution of results per GPU model, node or driver, with outliers",
		Long: `compare groups the runs of JOB (of every job without one; -n, -A and -l select
the runs as kubectl does) by GPU product, node or driver version and prints, per
group, the verdicts and the minimum, median and maximum of each headline number,
and the runs more than 3 median absolute deviations worse than their product's
median (the job summary's rule, for groups of at least 5 runs). --plot draws
--metric per group as a PNG. It exits 3 when a run's verdict is at least as bad
as --fail-on, as run does.`,
		Example: a.examples(`
# Per GPU model, with a box plot of the bandwidth
{name} compare mxfp8-check --by product --plot compare.png

# Every job in the namespace, per driver version
{name} compare --by driver

# Every namespace; exit 3 if any run failed or warned
{name} compare -A --fail-on warn`),
		Args:              maxArgs(1),
		ValidArgsFunction: a.completeJobs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if by != "product" && by != "node" && by != "driver" {
				return usagef("--by %q: want product, node or driver", by)
			}
			if err := checkFailOn(failOn); err != nil {
				return err
			}
			if len(args) == 1 {
				sel.job = args[0]
			}
			rows, err := a.selectedRows(cmd, &sel, "")
			if err != nil {
				return err
			}
			groups := groupRows(rows, by)
			if plot != "" {
				title := "namespace " + sel.namespace
				switch {
				case sel.job != "":
					title = "job " + sel.job
				case sel.allNamespaces:
					title = "every namespace"
				}
				if err := a.plotRows(plot, metric, by, title, groups); err != nil {
					return err
				}
			}
			if err := writeComparison(a.stdout, by, groups); err != nil {
				return err
			}
			return failOnRows(failOn, rows)
		},
	}
	a.clusterFlags(cmd)
	selectionFlags(cmd, &sel)
	oneOf(cmd.Flags(), cmd, &by, "by", "", "product", "group by product, node or driver", "product", "node", "driver")
	metricFlag(cmd, &metric)
	cmd.Flags().StringVar(&plot, "plot", "", "write a PNG of --metric per group to this file")
	failOnFlag(cmd, &failOn, "a run")
	return cmd
}

// writeComparison prints one line per group, then the outliers.
func writeComparison(w io.Writer, by string, groups []group) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tRUNS\tPASS\tWARN\tFAIL\tGB/S min/median/max\tSNR-DB min/median/max\tEAGER median\tGRAPH median\n", strings.ToUpper(by))
	var outliers []string
	for _, g := range groups {
		runs := summaryRuns(g)
		s := summary.Compute(runs)
		if s == nil {
			s = &v1alpha1.JobSummary{}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", g.key, len(runs), s.Verdicts.Pass, s.Verdicts.Warn, s.Verdicts.Fail,
			stat3(s.BandwidthGBps), stat3(s.SNRdB), medianMicros(s.HostEagerMicros), medianMicros(s.HostGraphMicros))
		for _, o := range s.Outliers {
			value, median := o.Value, o.Median
			if strings.HasSuffix(o.Metric, "Micros") {
				value, median = humanMicros(value), humanMicros(median)
			}
			outliers = append(outliers, fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", g.key, o.Run, o.NodeName, o.Metric, value, median))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(outliers) == 0 {
		_, err := fmt.Fprintln(w, "\nno outliers (more than 3 MADs worse than the product's median, 5 runs or more)")
		return err
	}
	fmt.Fprintln(w, "\nOUTLIERS")
	fmt.Fprintf(tw, "%s\tRUN\tNODE\tMETRIC\tVALUE\tMEDIAN\n", strings.ToUpper(by))
	for _, o := range outliers {
		fmt.Fprintln(tw, o)
	}
	return tw.Flush()
}

// summaryRuns are g's succeeded runs as the job summary sees them.
func summaryRuns(g group) []summary.Run {
	runs := make([]summary.Run, 0, len(g.rows))
	for _, r := range g.rows {
		if r.run.Status.Phase == v1alpha1.RunPhaseSucceeded {
			runs = append(runs, summary.Run{Name: r.Name, Node: r.Node, GPU: r.GPU, Product: r.Product, Results: r.run.Status.Results})
		}
	}
	return runs
}

func stat3(s *v1alpha1.Stat) string {
	if s == nil {
		return "-"
	}
	return s.Min + " / " + s.Median + " / " + s.Max
}

// medianMicros is a stat of microseconds' median, humanised.
func medianMicros(s *v1alpha1.Stat) string {
	if s == nil {
		return "-"
	}
	return humanMicros(s.Median)
}

func (a *app) describeCommand() *cobra.Command {
	describe := &cobra.Command{
		Use: "describe", Short: "Describe a kquant object", Args: noArgs,
		Example: a.examples(`
{name} describe run mxfp8-check-node-a-0-0`),
		RunE: func(*cobra.Command, []string) error {
			return usagef("describe what? %s describe run RUN", a.name)
		}}
	run := &cobra.Command{
		Use:   "run RUN",
		Short: "Describe a QuantRun: where it ran, its recipe and workload, its results and verdict",
		Example: a.examples(`
# Where a run ran, on which GPU and driver, and why it got its verdict
{name} describe run mxfp8-check-node-a-0-0 -n ml-team`),
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := a.clusterClient()
			if err != nil {
				return err
			}
			run := &v1alpha1.QuantRun{}
			if err := c.Get(cmd.Context(), clientKey(ns, args[0]), run); err != nil {
				return fmt.Errorf("getting QuantRun %s/%s: %w", ns, args[0], err)
			}
			var p *v1alpha1.GPUNodeProfile
			if run.Spec.NodeName != "" {
				p = &v1alpha1.GPUNodeProfile{}
				if err := c.Get(cmd.Context(), clientKey("", run.Spec.NodeName), p); err != nil {
					p = nil
				}
			}
			return describeRun(a.stdout, newRow(run, p))
		},
	}
	a.clusterFlags(run)
	describe.AddCommand(run)
	return describe
}
