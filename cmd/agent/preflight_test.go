// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kquant/kquant/agent/preflight"
	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/api/v1alpha1"
)

func TestParsePreflightFlags(t *testing.T) {
	cases := []struct {
		name        string
		args        []string
		node        string
		wantRecipes []string
		wantErr     string
	}{
		{name: "names, spaces and empties trimmed", args: []string{"--recipes= nvfp4,,mxfp8 "}, wantRecipes: []string{"nvfp4", "mxfp8"}},
		{name: "no recipes", args: nil, wantErr: "--recipes: name at least one recipe"},
		{name: "simulated GPUs need the node's name", args: []string{"--recipes=nvfp4", "--simulate=H100:2"},
			wantErr: "--simulate needs $NODE_NAME"},
		{name: "simulated on a named node", args: []string{"--recipes=nvfp4", "--simulate=H100:2"}, node: "n", wantRecipes: []string{"nvfp4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NODE_NAME", tc.node)
			c, err := parsePreflightFlags(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(c.recipes, ",") != strings.Join(tc.wantRecipes, ",") || c.termination != defaultTerminationLog || c.backend != "auto" {
				t.Errorf("config %+v", c)
			}
		})
	}
}

// TestPreflightMode runs the mode as an init container would, on simulated
// GPUs without an API server: the exit code follows NVSentinel's contract
// and the termination message names the verdict and the GPUs given.
func TestPreflightMode(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "recipes.yaml")
	const strict = `apiVersion: kquant.dev/v1alpha1
kind: QuantJob
metadata: {name: strict}
spec:
  recipeRef: {name: mxfp8}
  mode: Validation
  workload: {shapes: [{rows: 32, cols: 64}]}
  tolerances: {minSNRdB: "200"}
`
	if err := os.WriteFile(file, []byte(strict), 0o600); err != nil {
		t.Fatal(err)
	}
	node := "node-a"
	given := []string{simulate.UUID(node, 0), simulate.UUID(node, 2)}
	cases := []struct {
		name        string
		args        []string
		wantCode    int
		wantVerdict v1alpha1.Verdict
		wantSummary string
	}{
		{name: "a failing tolerance exits 1", args: []string{"--recipes=mxfp8", "--recipe-file=" + file},
			wantCode: exitPreflightFailed, wantVerdict: v1alpha1.VerdictFail, wantSummary: "SNRBelowTolerance: "},
		{name: "an unknown recipe exits 2", args: []string{"--recipes=nope", "--recipe-file=" + file},
			wantCode: exitPreflightConfig, wantSummary: `ConfigError: preflight configuration: recipe "nope" is in none of`},
		{name: "a missing file exits 2", args: []string{"--recipes=mxfp8", "--recipe-file=" + filepath.Join(dir, "none.yaml")},
			wantCode: exitPreflightConfig, wantSummary: "ConfigError: "},
		{name: "no recipes exits 2", args: []string{"--recipes=,"},
			wantCode: exitPreflightConfig, wantSummary: "ConfigError: --recipes: name at least one recipe"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NODE_NAME", node)
			t.Setenv(envSimulatedGPUs, strings.Join(given, ","))
			term := filepath.Join(t.TempDir(), "termination-log")
			args := append([]string{"--simulate=H100:4", "--offline", "--termination-log=" + term}, tc.args...)
			if code := preflightMode(args, time.Now()); code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
			msg, err := os.ReadFile(term)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(msg), tc.wantSummary) {
				t.Errorf("termination message %q, want it to start with %q", msg, tc.wantSummary)
			}
			if tc.wantVerdict == "" {
				return
			}
			d, err := preflight.DecodeTerminationMessage(string(msg))
			if err != nil {
				t.Fatal(err)
			}
			if d.Verdict != tc.wantVerdict || strings.Join(d.GPUs, ",") != strings.Join(given, ",") {
				t.Errorf("document verdict %s GPUs %v, want %s on %v", d.Verdict, d.GPUs, tc.wantVerdict, given)
			}
		})
	}
}
