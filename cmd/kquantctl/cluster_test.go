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
		recs, err := csv.NewReader(strings.NewReader(kq(t, "export", "mxfp8-check", "-o", "csv"))).ReadAll()
		if err != nil || len(recs) != 11 || recs[0][0] != "run" {
			t.Fatalf("csv: %d records, %v", len(recs), err)
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
		if dst := os.Getenv("KQUANT_PLOT_DIR"); dst != "" {
			data, _ := os.ReadFile(plot)
			_ = os.WriteFile(filepath.Join(dst, "compare-by-product.png"), data, 0o644)
		}
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
	})
	t.Run("describe run", func(t *testing.T) {
		out := kq(t, "describe", "run", "mxfp8-check-node-c-1")
		for _, want := range []string{"Job:", "mxfp8-check", "Product:", "NVIDIA H200", "590.10.01", "Verdict:", "Pass", "Bandwidth GB/s:", "4110"} {
			if !strings.Contains(out, want) {
				t.Errorf("describe lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, args := range [][]string{{"get", "results"}, {"compare", "--by", "colour"}, {"export", "mxfp8-check", "-o", "xml"}, {"get", "results", "mxfp8-check", "--sort-by", "colour"}} {
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
