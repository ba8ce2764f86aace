// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
)

// TestClusterCommands runs get results, export, compare and describe run
// against a real API server holding a job's runs on a fleet of two products:
// eight H100s (one slow) on two nodes and two H200s on a node with another
// driver.
func TestClusterCommands(t *testing.T) {
	env := testenv.ForTest(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.Kubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	ctx, c := t.Context(), env.Client
	ns := "fleet"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, builders.MakeQuantJob("mxfp8-check", ns).Recipe("mxfp8").EachGPU().Obj()); err != nil {
		t.Fatal(err)
	}
	nodes := []struct {
		name    string
		product builders.Product
		driver  string
	}{{"node-a", builders.H100, "580.65.06"}, {"node-b", builders.H100, "580.65.06"}, {"node-c", builders.H200, "590.10.01"}}
	for _, n := range nodes {
		count := 4
		if n.product == builders.H200 {
			count = 2
		}
		p := builders.MakeGPUNodeProfile(n.name).GPUs(n.product, count).Ready().Obj()
		p.Status.DriverVersion = n.driver
		if err := testenv.CreateWithStatus(ctx, c, p); err != nil {
			t.Fatal(err)
		}
		for i := range count {
			// A spread as a fleet has: a few percent between GPUs.
			bw, snr := fmt.Sprint(2950+35*i+20*len(n.name)%3), fmt.Sprintf("31.%d", 2+i)
			if n.product == builders.H200 {
				bw = fmt.Sprint(4080 + 30*i)
			}
			if n.name == "node-b" && i == 3 {
				bw = "1200" // the slow GPU: an outlier of the H100s
			}
			if n.name == "node-a" && i == 0 {
				snr = "29.25"
			}
			name := fmt.Sprintf("mxfp8-check-%s-%d", n.name, i)
			run := builders.MakeQuantRun(name, ns, "mxfp8-check").Bound(n.name, i).
				Phase(v1alpha1.RunPhaseSucceeded).Results(bw, "12.5", "2.25", snr, v1alpha1.VerdictPass).Obj()
			if err := testenv.CreateWithStatus(ctx, c, run); err != nil {
				t.Fatal(err)
			}
		}
	}
	kq := func(t *testing.T, args ...string) string {
		t.Helper()
		code, out, errOut := runCmd(t, append([]string{"--kubeconfig", kubeconfig, "-n", ns}, args...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return out
	}

	t.Run("get results sorts numerically", func(t *testing.T) {
		out := kq(t, "get", "results", "mxfp8-check", "--sort-by", "bandwidth")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 11 || !strings.HasPrefix(lines[0], "RUN") {
			t.Fatalf("want a header and 10 rows:\n%s", out)
		}
		for _, want := range []string{"mxfp8-check-node-b-3", "NVIDIA H100 80GB HBM3", "580.65.06", "1200"} {
			if !strings.Contains(lines[1], want) {
				t.Errorf("first row by bandwidth lacks %q: %s", want, lines[1])
			}
		}
		if !strings.Contains(lines[10], "4110") {
			t.Errorf("last row by bandwidth: %s", lines[10])
		}
	})
	t.Run("get results -o json, jsonpath, custom-columns", func(t *testing.T) {
		var list v1alpha1.QuantRunList
		if err := json.Unmarshal([]byte(kq(t, "get", "results", "mxfp8-check", "-o", "json")), &list); err != nil || len(list.Items) != 10 || list.Kind != "QuantRunList" {
			t.Fatalf("-o json: %d items, kind %q, %v", len(list.Items), list.Kind, err)
		}
		out := kq(t, "get", "results", "mxfp8-check", "--sort-by", "snr", "-o", "jsonpath={.items[0].metadata.name}")
		if out != "mxfp8-check-node-a-0" {
			t.Errorf("-o jsonpath: %q", out)
		}
		out = kq(t, "get", "results", "mxfp8-check", "-o", "custom-columns=RUN:.metadata.name,GBPS:.status.results.performance.bandwidthGBps")
		if !strings.Contains(out, "RUN") || !strings.Contains(out, "mxfp8-check-node-c-1") || !strings.Contains(out, "4110") {
			t.Errorf("-o custom-columns:\n%s", out)
		}
	})
	t.Run("export -o csv", func(t *testing.T) {
		recs, err := csv.NewReader(strings.NewReader(kq(t, "export", "mxfp8-check", "-o", "csv", "--sort-by", "bandwidth"))).ReadAll()
		if err != nil || len(recs) != 11 {
			t.Fatalf("csv: %d records, %v", len(recs), err)
		}
		col := map[string]int{}
		for i, h := range recs[0] {
			col[h] = i
		}
		for _, h := range []string{"run", "snr_db", "bandwidth_bytes_per_second", "gpu_time_seconds", "host_eager_seconds", "reason", "message"} {
			if _, ok := col[h]; !ok {
				t.Errorf("csv header %v lacks %s", recs[0], h)
			}
		}
		// The slow GPU's 1200 GB/s and 12.5 µs, in base units.
		if got := recs[1][col["bandwidth_bytes_per_second"]]; got != "1200000000000" {
			t.Errorf("bandwidth_bytes_per_second %q", got)
		}
		if got := recs[1][col["host_eager_seconds"]]; got != "0.0000125" {
			t.Errorf("host_eager_seconds %q", got)
		}
	})
	t.Run("get results: REASON, humanised times, natural order, -o wide", func(t *testing.T) {
		out := kq(t, "get", "results", "mxfp8-check")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		for _, want := range []string{"REASON", "GB/S", "EAGER", "Pass", "12.5 µs"} {
			if !strings.Contains(out, want) {
				t.Errorf("get results lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "GBPS") || strings.Contains(lines[0], "NAMESPACE") {
			t.Errorf("header %q", lines[0])
		}
		wide := kq(t, "get", "results", "mxfp8-check", "-o", "wide")
		if !strings.Contains(wide, "MESSAGE") || !strings.Contains(wide, "every check passed") {
			t.Errorf("-o wide lacks the sentence:\n%s", wide)
		}
	})
	t.Run("-A and -l", func(t *testing.T) {
		code, out, errOut := runCmd(t, "--kubeconfig", kubeconfig, "get", "results", "-A", "-l", "kquant.dev/job=mxfp8-check")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != exitOK || len(lines) != 11 || !strings.HasPrefix(lines[0], "NAMESPACE") || !strings.HasPrefix(lines[1], "fleet") {
			t.Errorf("get results -A -l: exit %d %s\n%s", code, errOut, out)
		}
		if out := kq(t, "get", "results", "-l", "kquant.dev/job=other"); strings.Count(out, "\n") != 1 {
			t.Errorf("-l selecting nothing:\n%s", out)
		}
		if out := kq(t, "compare", "-A", "--by", "node"); !strings.Contains(out, "node-c") {
			t.Errorf("compare -A:\n%s", out)
		}
	})
	t.Run("--fail-on", func(t *testing.T) {
		failed := builders.MakeQuantRun("other-job-10-0", ns, "other-job").Bound("node-a", 1).
			Phase(v1alpha1.RunPhaseSucceeded).Results("900", "12.5", "2.25", "20.04", v1alpha1.VerdictFail).Obj()
		failed.Spec.Tolerances.MinSNRdB = "25"
		failed.Status.Results.Reason = v1alpha1.VerdictReasonSNRBelowTolerance
		passed := builders.MakeQuantRun("other-job-2-0", ns, "other-job").Bound("node-a", 2).
			Phase(v1alpha1.RunPhaseSucceeded).Results("900", "12.5", "2.25", "31", v1alpha1.VerdictPass).Obj()
		for _, r := range []*v1alpha1.QuantRun{failed, passed} {
			if err := testenv.CreateWithStatus(ctx, c, r); err != nil {
				t.Fatal(err)
			}
		}
		sel := []string{"--kubeconfig", kubeconfig, "-n", ns}
		for _, tc := range []struct {
			args     []string
			wantCode int
		}{
			{[]string{"get", "results", "-l", "kquant.dev/job=other-job"}, exitVerdict},
			{[]string{"get", "results", "-l", "kquant.dev/job=other-job", "--fail-on", "never"}, exitOK},
			{[]string{"get", "results", "mxfp8-check"}, exitOK},
			{[]string{"compare", "--by", "node"}, exitVerdict},
			{[]string{"compare", "mxfp8-check", "--fail-on", "warn"}, exitOK},
			{[]string{"compare", "--fail-on", "sometimes"}, exitUsage},
		} {
			code, out, errOut := runCmd(t, append(sel, tc.args...)...)
			if code != tc.wantCode {
				t.Errorf("%v: exit %d, want %d: %s", tc.args, code, tc.wantCode, errOut)
			}
			if tc.args[0] == "get" && code == exitVerdict {
				// Runs in natural order, and the failure's sentence.
				if i, j := strings.Index(out, "other-job-2-0"), strings.Index(out, "other-job-10-0"); i < 0 || j < i {
					t.Errorf("not in natural order:\n%s", out)
				}
				if !strings.Contains(out, "SNRBelowTolerance") {
					t.Errorf("no REASON:\n%s", out)
				}
				wide := kq(t, "get", "results", "-l", "kquant.dev/job=other-job", "-o", "wide", "--fail-on", "never")
				if !strings.Contains(wide, "worst SNR 20.04 dB is below the tolerance of 25 dB") {
					t.Errorf("no sentence:\n%s", wide)
				}
			}
		}
		for _, r := range []*v1alpha1.QuantRun{failed, passed} {
			if err := c.Delete(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("compare --by product with outliers and a plot", func(t *testing.T) {
		plot := filepath.Join(t.TempDir(), "compare.png")
		out := kq(t, "compare", "mxfp8-check", "--by", "product", "--plot", plot)
		for _, want := range []string{"NVIDIA H100 80GB HBM3  8", "NVIDIA H200", "OUTLIERS", "mxfp8-check-node-b-3", "bandwidthGBps"} {
			if !strings.Contains(out, want) {
				t.Errorf("compare lacks %q:\n%s", want, out)
			}
		}
		checkPNG(t, plot)
	})
	t.Run("compare --by driver and node", func(t *testing.T) {
		if out := kq(t, "compare", "--by", "driver"); !strings.Contains(out, "590.10.01") || !strings.Contains(out, "580.65.06 (CUDA 13.0)") {
			t.Errorf("by driver:\n%s", out)
		}
		if out := kq(t, "compare", "--by", "node"); !strings.Contains(out, "node-c") {
			t.Errorf("by node:\n%s", out)
		}
	})
	t.Run("get results --plot", func(t *testing.T) {
		plot := filepath.Join(t.TempDir(), "results.png")
		kq(t, "get", "results", "mxfp8-check", "--plot", plot, "--metric", "snr")
		checkPNG(t, plot)
		if code, _, errOut := runCmd(t, "--kubeconfig", kubeconfig, "-n", ns, "get", "results", "mxfp8-check", "--plot", plot, "--metric", "gpu"); code != exitUsage {
			t.Errorf("--metric gpu (an index, not a measurement): exit %d: %s", code, errOut)
		}
	})
	t.Run("describe run", func(t *testing.T) {
		out := kq(t, "describe", "run", "mxfp8-check-node-c-1")
		for _, want := range []string{"Job:", "mxfp8-check", "Product:", "NVIDIA H200", "590.10.01", "Verdict:", "Pass", "Why:", "every check passed", "Bandwidth GB/s:", "4110", "SNR dB:", "GPU time:", "Host graph:"} {
			if !strings.Contains(out, want) {
				t.Errorf("describe lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, args := range [][]string{{"get", "results", "a", "b"}, {"compare", "--by", "colour"}, {"get", "results", "-l", "a in ("}, {"export", "mxfp8-check", "-o", "xml"}, {"get", "results", "mxfp8-check", "--sort-by", "colour"}} {
			if code, _, errOut := runCmd(t, append([]string{"--kubeconfig", kubeconfig, "-n", ns}, args...)...); code != exitUsage {
				t.Errorf("%v: exit %d: %s", args, code, errOut)
			}
		}
		if code, _, errOut := runCmd(t, "--kubeconfig", kubeconfig, "-n", ns, "get", "results", "nope"); code != exitError || !strings.Contains(errOut, "not found") {
			t.Errorf("absent job: exit %d: %s", code, errOut)
		}
	})
}

// checkPNG checks that path is a PNG of a reasonable size.
func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 200 {
		t.Errorf("%s: %v", path, b)
	}
}
