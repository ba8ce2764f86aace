// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package arch

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxProductionLines is the size budget of a hand-written production Go file
// (issue 41): past it, a file holds more than one job and is split by job.
const maxProductionLines = 600

// TestProductionFilesStayWithinBudget fails on a tracked, hand-written,
// non-test Go file longer than maxProductionLines.
func TestProductionFilesStayWithinBudget(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "*.go").Output()
	if err != nil {
		t.Skipf("no git checkout to read: %v", err)
	}
	for _, path := range strings.Fields(string(out)) {
		if strings.HasSuffix(path, "_test.go") || generated(root, path) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(data, []byte("\n")); n > maxProductionLines {
			t.Errorf("%s has %d lines, over the budget of %d: split it by job", path, n, maxProductionLines)
		}
	}
}

// generated reports whether path (under root) is written by a generator (controller-gen,
// applyconfiguration-gen), which says so in its first lines as Go's
// convention asks.
func generated(root, path string) bool {
	if strings.Contains(path, "/applyconfiguration/") {
		return true
	}
	f, err := os.Open(filepath.Join(root, path))
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for i := 0; i < 20 && s.Scan(); i++ {
		if strings.HasPrefix(s.Text(), "// Code generated ") && strings.HasSuffix(s.Text(), " DO NOT EDIT.") {
			return true
		}
	}
	return false
}
