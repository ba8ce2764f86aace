// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
)

// updatePlots rewrites the pictures of docs/images: `make plots`.
var updatePlots = flag.Bool("update-plots", false, "rewrite docs/images/kubectl-kquant-*.png from the code")

// docsFleet is the fleet the docs' pictures show: eight H100s on two nodes
// (one GPU slow) and two H200s on a node with another driver, every run
// with every measurement.
func docsFleet(t *testing.T) []row {
	t.Helper()
	var rows []row
	nodes := []struct {
		name    string
		product builders.Product
		driver  string
		count   int
	}{{"node-a", builders.H100, "580.65.06", 4}, {"node-b", builders.H100, "580.65.06", 4}, {"node-c", builders.H200, "590.10.01", 2}}
	for _, n := range nodes {
		p := builders.MakeGPUNodeProfile(n.name).GPUs(n.product, n.count).Ready().Obj()
		p.Status.DriverVersion = n.driver
		for i := range n.count {
			bw, snr, eager := fmt.Sprint(2950+35*i), fmt.Sprintf("31.%d", 2+i), fmt.Sprintf("%d.5", 12+i%2)
			if n.product == builders.H200 {
				bw = fmt.Sprint(4080 + 30*i)
			}
			if n.name == "node-b" && i == 3 {
				bw, eager = "1200", "31.5" // the slow GPU
			}
			run := builders.MakeQuantRun(fmt.Sprintf("mxfp8-check-%d-0", len(rows)), "ml", "mxfp8-check").Bound(n.name, i).
				Phase(v1alpha1.RunPhaseSucceeded).Results(bw, eager, "2.25", snr, v1alpha1.VerdictPass).Obj()
			run.Status.Results.Performance.GPUMicros = fmt.Sprintf("%d.0", 355+3*i)
			run.Status.Results.Performance.FractionOfCopyBandwidth = fmt.Sprintf("0.%d", 86+2*i)
			if bw == "1200" {
				run.Status.Results.Performance.GPUMicros, run.Status.Results.Performance.FractionOfCopyBandwidth = "873.8", "0.364"
			}
			rows = append(rows, newRow(run, p))
		}
	}
	return rows
}

// TestDocsPlotsAreTheCodes: docs/images has one picture per metric, as the
// plot code draws them now (go test -run TestDocsPlots -update-plots, or
// make plots, rewrites them).
func TestDocsPlotsAreTheCodes(t *testing.T) {
	rows := docsFleet(t)
	a, _, _ := testApp()
	dir := t.TempDir()
	for _, metric := range metricNames() {
		t.Run(metric, func(t *testing.T) {
			name := "kubectl-kquant-" + metric + ".png"
			got := filepath.Join(dir, name)
			if err := a.plotRows(got, metric, "product", "job mxfp8-check", groupRows(rows, "product")); err != nil {
				t.Fatal(err)
			}
			checkPNG(t, got)
			data, err := os.ReadFile(got)
			if err != nil {
				t.Fatal(err)
			}
			committed := filepath.Join(repoRoot, "docs", "images", name)
			if *updatePlots {
				if err := os.WriteFile(committed, data, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(committed)
			if err != nil || !bytes.Equal(data, want) {
				t.Errorf("%s is not what the plot code draws now (%v): run make plots", committed, err)
			}
		})
	}
}
