// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kquant/kquant/internal/bench"
)

// failingJob asks for an SNR no recipe reaches.
const failingJob = `apiVersion: kquant.dev/v1alpha1
kind: QuantJob
metadata: {name: job}
spec:
  recipeRef: {name: mxfp8}
  tolerances: {minSNRdB: "150"}
  workload:
    shapes: [{rows: 32, cols: 32}]
`

func TestVerdictExitCodes(t *testing.T) {
	r := writeFile(t, "recipe.yaml", goodRecipe)
	failing := writeFile(t, "failing.yaml", failingJob)
	passing := writeFile(t, "passing.yaml", goodJob)
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"fail exits 3", []string{"-f", failing}, exitVerdict},
		{"fail with --fail-on warn exits 3", []string{"-f", failing, "--fail-on", "warn"}, exitVerdict},
		{"fail with --fail-on never exits 0", []string{"-f", failing, "--fail-on", "never"}, exitOK},
		{"pass exits 0", []string{"-f", passing}, exitOK},
		{"bad --fail-on is a usage error", []string{"-f", passing, "--fail-on", "sometimes"}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "-f", r, "--backend", "reference"}, tc.args...)
			code, out, errOut := runCmd(t, args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.wantCode, errOut)
			}
			if tc.wantCode == exitVerdict && (!strings.Contains(out, "VERDICT  Fail") || !strings.Contains(errOut, "verdict Fail (SNRBelowTolerance)")) {
				t.Errorf("stdout %q, stderr %q", out, errOut)
			}
		})
	}
}

// TestJobNamingAnAbsentRecipeIsRefused is the new user's case: the whole
// catalog given as a directory, a job naming a recipe that is not in it.
func TestJobNamingAnAbsentRecipeIsRefused(t *testing.T) {
	job := writeFile(t, "job.yaml", strings.Replace(goodJob, "name: mxfp8", "name: nope", 1))
	code, out, errOut := runCmd(t, "run", "-f", filepath.Join(repoRoot, "recipes"), "-f", job, "--backend", "reference")
	if code != exitUsage || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	want := `spec.recipeRef.name "nope" names no given QuantRecipe: the recipes given are fp8-block-scaling, fp8-current-scaling, fp8-delayed-scaling, mxfp8, nvfp4`
	if !strings.Contains(errOut, want) {
		t.Errorf("stderr %q lacks %q", errOut, want)
	}
}

func TestMalformedYAMLNamesTheLine(t *testing.T) {
	job := writeFile(t, "job.yaml", "apiVersion: kquant.dev/v1alpha1\nkind: QuantJob\nspec:\n  workload: [\n")
	code, _, errOut := runCmd(t, "run", "-f", writeFile(t, "r.yaml", goodRecipe), "-f", job, "--backend", "reference")
	if code != exitUsage || !strings.Contains(errOut, "job.yaml") || !strings.Contains(errOut, "line 4") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestTableNamesTheGPU(t *testing.T) {
	m := decodeGood(t)
	var out bytes.Buffer
	rep := &bench.Report{}
	rep.Results.Backend = "cuda"
	g := &gpuDescription{Product: "NVIDIA H100 80GB HBM3", UUID: "GPU-0a1b2c3d-0000-1111-2222-333344445555", Driver: "580.65.06", CUDA: "13.0"}
	if err := writeTable(&out, m, m.spec(), rep, g); err != nil {
		t.Fatal(err)
	}
	want := "GPU      NVIDIA H100 80GB HBM3  GPU-0a1b2c3d-0000-1111-2222-333344445555, driver 580.65.06, CUDA 13.0"
	if !strings.Contains(out.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, out.String())
	}
	for line, want := range map[string]string{
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 07:09:29 UTC 2025\nGCC version: gcc\n":                   "580.65.06",
		"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Sep 25\n": "580.95.05",
		"NVRM version: something else\n": "unknown",
	} {
		if v := kernelModuleVersion(line); v != want {
			t.Errorf("kernel module version of %q: %q, want %q", line, v, want)
		}
	}
}

func TestDefaultsComeFromTheCRD(t *testing.T) {
	m := decodeGood(t)
	j := m.job.Spec
	got := []string{string(j.Mode), string(j.Level), string(j.Workload.Operation), string(j.Workload.InputDType), string(j.Workload.TensorRole), string(j.Workload.Distribution), string(j.Execution.Graphs)}
	want := []string{"Validation", "Standard", "Quantize", "BF16", "Input", "Normal", "Both"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("defaults %v, want %v", got, want)
	}
}

func TestProgressBar(t *testing.T) {
	got := progressText(bench.Progress{Shape: 1, Shapes: 2, Rows: 64, Cols: 64, Stage: bench.StageTiming, Step: 5, Steps: 10})
	if want := "[##################......]  75%  shape 2/2 64x64: timing 5/10"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// decodeGood decodes goodRecipe and goodJob.
func decodeGood(t *testing.T) *manifests {
	t.Helper()
	docs, err := splitDocuments("m.yaml", strings.NewReader(goodRecipe+"---\n"+goodJob))
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeManifests(t.Context(), docs, "")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPluginName(t *testing.T) {
	for arg0, want := range map[string]string{"/usr/local/bin/kubectl-kquant": "kubectl kquant", "bin/kquantctl": "kquantctl"} {
		if got := programName(arg0); got != want {
			t.Errorf("programName(%q) = %q, want %q", arg0, got, want)
		}
	}
	var out bytes.Buffer
	a := newApp("kubectl kquant", &out, &out, strings.NewReader(""), false)
	if code := a.main(t.Context(), []string{"--help"}); code != exitOK || !strings.Contains(out.String(), "kubectl kquant [command]") {
		t.Errorf("exit %d:\n%s", code, out.String())
	}
}
