// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestHelpIsKubectlLike: every command's help has an Examples: section,
// only the commands that read a cluster show the kubeconfig flags, the
// listing commands take -A and -l, -v is the verbosity and --version the
// version.
func TestHelpIsKubectlLike(t *testing.T) {
	a, _, _ := testApp()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "__complete" || c.Name() == "__completeNoDesc" {
			return
		}
		t.Run(c.CommandPath(), func(t *testing.T) {
			path := strings.Fields(c.CommandPath())[1:]
			code, out, errOut := runCmd(t, append(path, "--help")...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.Contains(out, "Examples:") {
				t.Errorf("no Examples:\n%s", out)
			}
			cluster := map[string]bool{"results": true, "compare": true, "export": true, "run": c.Parent() != nil && c.Parent().Name() == "describe"}
			if got := strings.Contains(out, "--kubeconfig"); got != cluster[c.Name()] {
				t.Errorf("shows --kubeconfig %v, want %v:\n%s", got, cluster[c.Name()], out)
			}
			if lists := c.Name() == "results" || c.Name() == "compare" || c.Name() == "export"; lists &&
				(!strings.Contains(out, "-A, --all-namespaces") || !strings.Contains(out, "-l, --selector")) {
				t.Errorf("lists runs without -A and -l:\n%s", out)
			}
			if !strings.Contains(out, "-v, --v int") {
				t.Errorf("no -v verbosity:\n%s", out)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	root := a.rootCommand()
	walk(root)

	code, out, _ := runCmd(t, "--version")
	if code != exitOK || !strings.HasPrefix(out, "kquantctl ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	if code, out, errOut := runCmd(t, "-v", "1", "version"); code != exitOK || !strings.HasPrefix(out, "kquantctl ") {
		t.Errorf("-v 1 version: exit %d, %q %q", code, out, errOut)
	}
}
