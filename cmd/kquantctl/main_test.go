// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/bench/npy"
	"github.com/kquant/kquant/internal/quant"
)

// repoRoot is where the recipes and samples are, relative to this package.
const repoRoot = "../.."

// testApp is kquantctl with captured streams and no CUDA driver.
func testApp() (*app, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	a := newApp("kquantctl", &out, &errOut, strings.NewReader(""), false)
	a.cudaAvailable = func() (bool, string) { return false, "no CUDA driver: libcuda.so.1: not found (test)" }
	return a, &out, &errOut
}

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	a, out, errOut := testApp()
	code := a.main(context.Background(), args)
	return code, out.String(), errOut.String()
}

func TestVersion(t *testing.T) {
	code, out, _ := runCmd(t, "version")
	if code != exitOK || !strings.HasPrefix(out, "kquantctl ") {
		t.Errorf("exit %d, output %q", code, out)
	}
}

// TestRunEveryRecipeOnTheValidationSamples is the acceptance run: every
// recipe of the catalog with every validation sample, dumps included.
func TestRunEveryRecipeOnTheValidationSamples(t *testing.T) {
	recipes, err := filepath.Glob(filepath.Join(repoRoot, "recipes", "*.yaml"))
	if err != nil || len(recipes) != 5 {
		t.Fatalf("recipes: %v %v", recipes, err)
	}
	samples := map[string][]string{
		// sample: the dump files every run must produce, relative to the dump dir
		"validation-quantize.yaml": {"1x33/input.npy", "129x17/data.npy", "256x1024/scale_inv.npy", "256x1024/dequantized.npy", "256x1024/columnwise_data.npy", "256x1024/meta.json"},
		"validation-grouped.yaml":  {"4096x512/meta.json", "4096x512/group-0/meta.json", "4096x512/group-63/input.npy"},
		"validation-linear.yaml":   {"256x512/x/data.npy", "256x512/w/scale_inv.npy", "256x512/y.npy", "256x512/y_exact.npy", "256x512/meta.json"},
	}
	for _, recipe := range recipes {
		for sample, wantFiles := range samples {
			name := strings.TrimSuffix(filepath.Base(recipe), ".yaml") + "/" + strings.TrimSuffix(sample, ".yaml")
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				// The whole catalog as a directory; --recipe picks one.
				code, out, errOut := runCmd(t, "run", "-f", filepath.Join(repoRoot, "recipes"), "-f", filepath.Join(repoRoot, "config", "samples", sample),
					"--recipe", strings.TrimSuffix(filepath.Base(recipe), ".yaml"), "--fail-on", "never",
					"--backend", "reference", "-o", "json", "--dump-dir", dir)
				if code != exitOK {
					t.Fatalf("exit %d: %s", code, errOut)
				}
				var res v1alpha1.RunResults
				if err := json.Unmarshal([]byte(out), &res); err != nil {
					t.Fatalf("output is not RunResults JSON: %v\n%s", err, out)
				}
				if res.Backend != "reference" || res.Verdict == "" || res.Reason == "" || res.Accuracy == nil {
					t.Errorf("results %+v", res)
				}
				for _, f := range wantFiles {
					p := filepath.Join(dir, f)
					if strings.HasSuffix(f, ".npy") {
						fh, err := os.Open(p)
						if err != nil {
							t.Error(err)
							continue
						}
						if _, err := npy.Read(fh); err != nil {
							t.Errorf("%s: %v", f, err)
						}
						fh.Close()
					} else if _, err := os.Stat(p); err != nil {
						t.Error(err)
					}
				}
				swizzled := filepath.Join(dir, "256x1024", "scale_inv_swizzled.npy")
				if sample == "validation-quantize.yaml" {
					_, err := os.Stat(swizzled)
					block := strings.Contains(recipe, "mxfp8") || strings.Contains(recipe, "nvfp4")
					if (err == nil) != block {
						t.Errorf("scale_inv_swizzled.npy present %v for %s", err == nil, recipe)
					}
				}
			})
		}
	}
}

func TestTableOutput(t *testing.T) {
	code, out, _ := runCmd(t, "run", "-f", filepath.Join(repoRoot, "recipes/mxfp8.yaml"), "-f", filepath.Join(repoRoot, "config/samples/validation-quantize.yaml"),
		"--backend", "reference")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"MXFP8BlockScaling/E4M3;scaleRounding=TE", "BACKEND  reference", "SNR-dB", "256x1024", "VERDICT  Pass"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchmarkOverridesShowCPUFigures(t *testing.T) {
	code, out, errOut := runCmd(t, "run", "-f", filepath.Join(repoRoot, "recipes/fp8-current-scaling.yaml"), "-f", filepath.Join(repoRoot, "config/samples/validation-quantize.yaml"),
		"--recipe", "fp8-current-scaling", "--backend", "reference", "--iterations", "2", "--warmup", "0", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// Validation mode: no timing even with iterations.
	if strings.Contains(out, "hostEagerMicros") {
		t.Errorf("validation run has timings:\n%s", out)
	}
	job := writeFile(t, "job.yaml", `apiVersion: kquant.dev/v1alpha1
kind: QuantJob
metadata: {name: bench}
spec:
  recipeRef: {name: fp8-current-scaling}
  mode: Benchmark
  level: Quick
  workload:
    shapes: [{rows: 64, cols: 64}]
`)
	code, out, errOut = runCmd(t, "run", "-f", filepath.Join(repoRoot, "recipes/fp8-current-scaling.yaml"), "-f", job, "--backend", "reference", "--iterations", "3")
	if code != exitOK || !strings.Contains(out, "CPU/STEP") || !strings.Contains(out, " µs") {
		t.Errorf("exit %d: %s\n%s", code, errOut, out)
	}
}

func TestCUDABackendWithoutDriver(t *testing.T) {
	code, _, errOut := runCmd(t, "run", "-f", filepath.Join(repoRoot, "recipes/mxfp8.yaml"), "-f", filepath.Join(repoRoot, "config/samples/validation-quantize.yaml"),
		"--backend", "cuda")
	if code == exitOK || !strings.Contains(errOut, "no CUDA driver") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestAutoBackend(t *testing.T) {
	a, out, errOut := testApp()
	a.cudaAvailable = func() (bool, string) { return true, "" }
	opened := false
	a.openCUDA = func(context.Context) (quant.Backend, error) { opened = true; return nil, errNoCUDABackend }
	code := a.main(context.Background(), []string{"run", "-f", filepath.Join(repoRoot, "recipes/mxfp8.yaml"),
		"-f", filepath.Join(repoRoot, "config/samples/validation-quantize.yaml"), "-o", "json"})
	if code != exitOK || !opened || !strings.Contains(errOut.String(), "using the reference backend") || !strings.Contains(out.String(), `"backend": "reference"`) {
		t.Errorf("exit %d, opened %v, stderr %q", code, opened, errOut)
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const goodRecipe = `apiVersion: kquant.dev/v1alpha1
kind: QuantRecipe
metadata: {name: mxfp8}
spec:
  scheme: MXFP8BlockScaling
`

const goodJob = `apiVersion: kquant.dev/v1alpha1
kind: QuantJob
metadata: {name: job}
spec:
  recipeRef: {name: mxfp8}
  workload:
    shapes: [{rows: 32, cols: 32}]
`

// TestBadInputExits2NamingFileAndField drives every bad input: each exits
// 2 before anything runs (no output), with a message naming the file and the
// field, or the flag the value came from.
func TestBadInputExits2NamingFileAndField(t *testing.T) {
	grouped := strings.Replace(goodJob, "shapes: [{rows: 32, cols: 32}]", "operation: GroupedQuantize\n    shapes: [{rows: 96, cols: 32}]\n    groups: {count: 2, splits: Explicit, sizes: SIZES}", 1)
	cases := []struct {
		name, recipe, job string
		args              []string
		want              []string // in stderr
	}{
		{"unknown recipe field", goodRecipe + "  colour: red\n", goodJob, nil, []string{"recipe.yaml", `unknown field "spec.colour"`}},
		{"unknown nested job field", goodRecipe, strings.Replace(goodJob, "cols: 32}", "cols: 32, depth: 2}", 1), nil, []string{"job.yaml", `unknown field "spec.workload.shapes[0].depth"`}},
		{"duplicate field", goodRecipe + "  scheme: NVFP4BlockScaling\n", goodJob, nil, []string{"recipe.yaml", `"scheme" already set`}},
		{"wrong type", goodRecipe, strings.Replace(goodJob, "rows: 32", "rows: many", 1), nil, []string{"job.yaml", "spec.workload.shapes.rows"}},
		{"bad scheme", strings.Replace(goodRecipe, "MXFP8BlockScaling", "FP7", 1), goodJob, nil, []string{"recipe.yaml", "spec.scheme"}},
		{"E5M2", goodRecipe + "  format: E5M2\n", goodJob, nil, []string{"recipe.yaml", "spec.format"}},
		{"options of another scheme", goodRecipe + "  nvfp4: {}\n", goodJob, nil, []string{"recipe.yaml", "spec.nvfp4"}},
		{"zero rows", goodRecipe, strings.Replace(goodJob, "rows: 32", "rows: 0", 1), nil, []string{"job.yaml", "spec.workload.shapes[0].rows"}},
		{"groups without grouped", goodRecipe, goodJob + "    groups: {count: 2}\n", nil, []string{"job.yaml", "spec.workload.groups"}},
		{"bad level", goodRecipe, goodJob + "  level: Heroic\n", nil, []string{"job.yaml", "spec.level", `"Quick"`}},
		{"bad tolerance", goodRecipe, goodJob + "  tolerances: {minSNRdB: \"lots\"}\n", nil, []string{"job.yaml", "spec.tolerances.minSNRdB"}},
		{"no job", goodRecipe, "", nil, []string{"no QuantJob"}},
		{"two recipes of one name", goodRecipe, goodRecipe + "---\n" + goodJob, nil, []string{`a second QuantRecipe "mxfp8"`}},
		{"recipe not given", strings.Replace(goodRecipe, "name: mxfp8", "name: other", 1), goodJob, nil, []string{`job.yaml: spec.recipeRef.name "mxfp8" names no given QuantRecipe: the recipes given are other`}},
		{"malformed yaml", goodRecipe, goodJob + "  mode: [Benchmark\n", nil, []string{"job.yaml", "line"}},
		{"no kind", goodRecipe, "metadata: {name: x}\n", nil, []string{"job.yaml", "apiVersion and kind are required"}},
		{"other kind", goodRecipe, "apiVersion: v1\nkind: Pod\n", nil, []string{"job.yaml", `apiVersion "v1"`}},
		{"not yaml", goodRecipe, "{{{", nil, []string{"job.yaml"}},
		// The cases of issue 40's table.
		{"--recipe naming no recipe", goodRecipe, goodJob, []string{"--recipe", "nope"}, []string{`--recipe "nope" names no given QuantRecipe: the recipes given are mxfp8`}},
		{"a YAML NaN", goodRecipe, goodJob + "  tolerances: {minSNRdB: .nan}\n", nil, []string{"job.yaml", "spec.tolerances.minSNRdB", ".nan (line 8)"}},
		{"a YAML infinity in a list", goodRecipe, strings.Replace(goodJob, "rows: 32", "rows: -.inf", 1), nil, []string{"job.yaml", "spec.workload.shapes[0].rows"}},
		{"a URL", goodRecipe, goodJob, []string{"-f", "https://example.com/job.yaml"}, []string{"-f https://example.com/job.yaml: URLs are not supported"}},
		{"a shape over --max-elements", goodRecipe, strings.Replace(goodJob, "{rows: 32, cols: 32}", "{rows: 1048576, cols: 1048576}", 1), nil,
			[]string{"job.yaml", "spec.workload.shapes[0]", "more than this run's limit", "--max-elements"}},
		{"a job without a name", goodRecipe, strings.Replace(goodJob, "metadata: {name: job}", "metadata: {labels: {a: b}}", 1), nil, []string{"job.yaml", "metadata.name", "required"}},
		{"a job name that is not a DNS name", goodRecipe, strings.Replace(goodJob, "name: job", "name: My_Job", 1), nil, []string{"job.yaml", "metadata.name"}},
		{"MXFP8 explicit groups off 32 rows", goodRecipe, strings.Replace(grouped, "SIZES", "[48, 48]", 1), nil,
			[]string{"job.yaml", "QuantRecipe mxfp8", "spec.workload.groups.sizes", "multiple of the recipe's group alignment"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := writeFile(t, "recipe.yaml", tc.recipe)
			j := writeFile(t, "job.yaml", tc.job)
			args := append([]string{"run", "-f", r, "-f", j, "--backend", "reference"}, tc.args...)
			code, out, errOut := runCmd(t, args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stderr %q", code, exitUsage, errOut)
			}
			if out != "" {
				t.Errorf("something ran: %s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not contain %q", errOut, w)
				}
			}
		})
	}
	// The same job with sizes of 32 and 64 rows runs.
	code, _, errOut := runCmd(t, "run", "-f", writeFile(t, "recipe.yaml", goodRecipe), "-f", writeFile(t, "job.yaml", strings.Replace(grouped, "SIZES", "[32, 64]", 1)), "--backend", "reference")
	if code != exitOK {
		t.Errorf("aligned groups: exit %d: %s", code, errOut)
	}
}

func TestBadFlagsExit2(t *testing.T) {
	r := filepath.Join(repoRoot, "recipes/mxfp8.yaml")
	j := filepath.Join(repoRoot, "config/samples/validation-quantize.yaml")
	for _, args := range [][]string{
		{"run", "-f", r, "-f", j, "--backend", "tpu"},
		{"run", "-f", r, "-f", j, "-o", "yaml"},
		{"run", "-f", r, "-f", j, "--iterations", "0"},
		{"run", "-f", r, "-f", j, "--no-such-flag"},
		{"run"},
		{"run", "-f", "does-not-exist.yaml"},
		{"frobnicate"},
	} {
		if code, _, errOut := runCmd(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}

func FuzzDecodeManifests(f *testing.F) {
	for _, p := range []string{"recipes/mxfp8.yaml", "recipes/nvfp4.yaml", "recipes/fp8-delayed-scaling.yaml", "config/samples/validation-grouped.yaml", "config/samples/validation-linear.yaml"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(goodRecipe + "---\n" + goodJob))
	f.Add([]byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := splitDocuments("fuzz.yaml", bytes.NewReader(data))
		if err == nil {
			_, err = decodeManifests(t.Context(), docs, "")
		}
		if err != nil {
			var ue usageError
			if !errors.As(err, &ue) {
				t.Fatalf("decode error is not a usage error: %v", err)
			}
			return
		}
		// What decodes must make a valid spec.
		m, _ := decodeManifests(t.Context(), docs, "")
		spec := m.spec()
		if err := spec.Validate(); err != nil {
			t.Fatalf("decoded manifests give an invalid spec: %v", err)
		}
	})
}

func TestUsageInTableAndJSON(t *testing.T) {
	job := `apiVersion: kquant.dev/v1alpha1
kind: QuantJob
metadata: {name: inference}
spec:
  recipeRef: {name: nvfp4}
  workload:
    shapes: [{rows: 64, cols: 128}]
    usage: USAGE
`
	for _, usage := range []string{"Rowwise", "Columnwise"} {
		t.Run(usage, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "job.yaml")
			if err := os.WriteFile(f, []byte(strings.Replace(job, "USAGE", usage, 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			recipe := filepath.Join(repoRoot, "recipes/nvfp4.yaml")
			code, out, errOut := runCmd(t, "run", "-f", recipe, "-f", f, "--backend", "reference")
			if code != exitOK || !strings.Contains(out, "usage "+usage) {
				t.Errorf("exit %d, table without %q:\n%s%s", code, "usage "+usage, out, errOut)
			}
			code, out, errOut = runCmd(t, "run", "-f", recipe, "-f", f, "--backend", "reference", "-o", "json")
			var res v1alpha1.RunResults
			if err := json.Unmarshal([]byte(out), &res); code != exitOK || err != nil || string(res.Usage) != usage {
				t.Errorf("exit %d, %v: usage %q, want %q; %s", code, err, res.Usage, usage, errOut)
			}
		})
	}
}
