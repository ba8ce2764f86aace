// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package preflight

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"github.com/kquant/kquant/agent/runner"
	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/bench"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/reference"
	"github.com/kquant/kquant/internal/runoutcome"
)

// smallJob keeps the reference backend's work small.
const smallJob = `apiVersion: kquant.dev/v1alpha1
kind: QuantJob
metadata: {name: small}
spec:
  recipeRef: {name: ignored}
  mode: Validation
  workload:
    shapes: [{rows: 32, cols: 128}]
    tensorRole: Gradient
  tolerances: {minSNRdB: "%s"}
`

// failingRunner fails every run, as a backend that cannot open would.
type failingRunner struct{}

func (failingRunner) Run(context.Context, *v1alpha1.QuantRun, v1alpha1.GPU) (*v1alpha1.RunResults, error) {
	return nil, errors.New("CUDA_ERROR_NO_DEVICE")
}

func TestRun(t *testing.T) {
	spec, err := simulate.Parse("H100:4")
	if err != nil {
		t.Fatal(err)
	}
	node := simulate.NewNode("node-a", spec)
	given := []string{simulate.UUID("node-a", 1), simulate.UUID("node-a", 3)}
	pair, ok := node.Only(given...)
	if !ok {
		t.Fatal("the simulated node lacks the given GPUs")
	}
	none, _ := simulate.NewNode("node-a", nil).Only()
	ref := reference.New()
	onReference := &bench.Runner{BackendFor: func(context.Context, v1alpha1.GPU) (quant.Backend, error) { return ref, nil }}
	recipes := func(t *testing.T) []Recipe {
		f := mustRead(t, "strict.yaml", strictFile)
		return []Recipe{f.Recipes["mine"], f.Recipes["nvfp4"]}
	}

	cases := []struct {
		name        string
		lib         gonvml.Interface
		minSNR      string
		runner      runner.Runner
		wantVerdict v1alpha1.Verdict
		wantReason  string
		wantGPUs    []string
		wantChecks  int
	}{
		{name: "two given GPUs pass", lib: pair.Library(), minSNR: "10", wantVerdict: v1alpha1.VerdictPass,
			wantReason: v1alpha1.VerdictReasonPass, wantGPUs: given, wantChecks: 4},
		{name: "an impossible tolerance fails", lib: pair.Library(), minSNR: "200", wantVerdict: v1alpha1.VerdictFail,
			wantReason: v1alpha1.VerdictReasonSNRBelowTolerance, wantGPUs: given, wantChecks: 4},
		{name: "no GPU visible", lib: none.Library(), minSNR: "10", wantVerdict: v1alpha1.VerdictFail, wantReason: ReasonNoGPU},
		{name: "a backend that cannot run", lib: pair.Library(), minSNR: "10", runner: failingRunner{},
			wantVerdict: v1alpha1.VerdictFail, wantReason: ReasonCheckError, wantGPUs: given, wantChecks: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := mustRead(t, "small.yaml", fmt.Sprintf(smallJob, tc.minSNR))
			s, err := SettingsFor(f.Job, "")
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{Recipes: recipes(t), Settings: s, NVML: tc.lib, Runner: onReference, Pod: Pod{Namespace: "ns", Name: "train-0", Node: "node-a"}}
			if tc.runner != nil {
				opts.Runner = tc.runner
			}
			out := Run(context.Background(), opts)
			if out.Verdict != tc.wantVerdict || out.Reason != tc.wantReason {
				t.Errorf("verdict %s (%s: %s), want %s (%s)", out.Verdict, out.Reason, out.Message, tc.wantVerdict, tc.wantReason)
			}
			if out.Failed() != (tc.wantVerdict == v1alpha1.VerdictFail) {
				t.Errorf("Failed() = %v", out.Failed())
			}
			if diff := cmp.Diff(tc.wantGPUs, out.GPUs); diff != "" {
				t.Errorf("GPUs (-want +got):\n%s", diff)
			}
			if len(out.Checks) != tc.wantChecks {
				t.Errorf("%d checks, want %d", len(out.Checks), tc.wantChecks)
			}
			for _, c := range out.Checks {
				if !strings.Contains(c.Message, c.GPU) {
					t.Errorf("check message %q does not name GPU %s", c.Message, c.GPU)
				}
			}
		})
	}
}

func TestTerminationMessage(t *testing.T) {
	results := &v1alpha1.RunResults{Backend: "cuda", Verdict: v1alpha1.VerdictPass, Reason: v1alpha1.VerdictReasonPass,
		Accuracy: &v1alpha1.Accuracy{SNRdB: "31.49"}, Numbers: &v1alpha1.ResultNumbers{}}
	check := func(i int, v v1alpha1.Verdict, reason string) Check {
		return Check{Recipe: fmt.Sprintf("recipe-%d", i), GPU: fmt.Sprintf("GPU-%036d", i), Verdict: v, Reason: reason,
			Message: strings.Repeat("m", 80), Results: results}
	}
	fail := check(99, v1alpha1.VerdictFail, v1alpha1.VerdictReasonSNRBelowTolerance)
	cases := []struct {
		name        string
		checks      int
		message     string
		failMessage string
		wantDropped []string
		wantChecks  int
	}{
		{name: "a few checks fit whole", checks: 2, wantChecks: 3},
		{name: "eight GPUs lose their results", checks: 12, wantDropped: []string{DroppedResults}, wantChecks: 13},
		{name: "many lose the passing checks", checks: 40, wantDropped: []string{DroppedResults, DroppedPassed}, wantChecks: 1},
		{name: "a huge message is cut, the checks stay", checks: 40, message: strings.Repeat("x ", 3000),
			wantDropped: []string{DroppedResults, DroppedPassed}, wantChecks: 1},
		{name: "a failing check's huge message is dropped", checks: 2, failMessage: strings.Repeat("y", 5000),
			wantDropped: []string{DroppedResults, DroppedPassed, DroppedMessages}, wantChecks: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := Outcome{Verdict: v1alpha1.VerdictFail, Reason: fail.Reason, Message: "recipe-99 failed " + tc.message}
			for i := range tc.checks {
				o.Checks = append(o.Checks, check(i, v1alpha1.VerdictPass, v1alpha1.VerdictReasonPass))
				o.GPUs = append(o.GPUs, o.Checks[i].GPU)
			}
			failing := fail
			if tc.failMessage != "" {
				failing.Message = tc.failMessage
			}
			o.Checks = append(o.Checks, failing)
			msg := o.TerminationMessage()
			if len(msg) > runoutcome.MaxBytes {
				t.Fatalf("message of %d bytes, more than %d", len(msg), runoutcome.MaxBytes)
			}
			if first, _, _ := strings.Cut(msg, "\n"); !strings.HasPrefix(first, "SNRBelowTolerance: recipe-99 failed") {
				t.Errorf("summary line %q", first)
			}
			d, err := DecodeTerminationMessage(msg)
			if err != nil {
				t.Fatal(err)
			}
			if d.Verdict != v1alpha1.VerdictFail || d.Reason != fail.Reason {
				t.Errorf("document verdict %s (%s)", d.Verdict, d.Reason)
			}
			if diff := cmp.Diff(tc.wantDropped, d.Dropped); diff != "" {
				t.Errorf("dropped (-want +got):\n%s", diff)
			}
			if len(d.Checks) != tc.wantChecks {
				t.Errorf("%d checks, want %d", len(d.Checks), tc.wantChecks)
			}
			if tc.wantChecks > 0 && d.Checks[len(d.Checks)-1].Recipe != fail.Recipe {
				t.Errorf("the failing check was dropped: %+v", d.Checks)
			}
			for _, c := range d.Checks {
				if c.Results != nil && c.Results.Numbers != nil {
					t.Errorf("results carry numbers")
				}
			}
			if o.Checks[0].Results.Numbers == nil {
				t.Errorf("TerminationMessage changed the outcome's results")
			}
		})
	}
}
