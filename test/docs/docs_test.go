// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package docs

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// blockTimeout bounds one block or command, so that a command that never
// ends (a watch) fails the test instead of hanging it.
const blockTimeout = 3 * time.Minute

// TestDocsAgainstDemo runs every shell block of README.md and docs/*.md, in
// order, against the demo in KQUANT_DOCS_DEMO (make demo-test).
func TestDocsAgainstDemo(t *testing.T) {
	demo := os.Getenv("KQUANT_DOCS_DEMO")
	if demo == "" {
		t.Skip("KQUANT_DOCS_DEMO is not set: make demo-test runs this against make demo")
	}
	root := repoRoot(t)
	env := demoEnv(t, root, demo)
	for _, b := range shellBlocks(t, root) {
		t.Run(b.Name(), func(t *testing.T) {
			if b.Skip != "" {
				t.Skip(b.Skip)
			}
			if !b.Transcript() {
				if out, err := runShell(root, env, b.Text); err != nil {
					t.Fatalf("%s failed: %v\n%s\n--- the block:\n%s", b.Name(), err, out, b.Text)
				}
				return
			}
			steps, err := ParseTranscript(b.Text)
			if err != nil {
				t.Fatalf("%s: %v", b.Name(), err)
			}
			for _, s := range steps {
				got, err := runShell(root, env, s.Command)
				if s.Want == "" && err != nil {
					t.Errorf("%s: $ %s\n%v (the docs show no output, so it must succeed)\n%s", b.Name(), s.Command, err, got)
					continue
				}
				if err := Alike(s.Want, got); err != nil {
					t.Errorf("%s: $ %s\n%v\n--- the docs show:\n%s--- the command printed:\n%s", b.Name(), s.Command, err, s.Want, got)
				}
			}
		})
	}
}

// TestEveryShellBlockParses runs without a demo, in make test: every marker
// is well formed and every transcript parses.
func TestEveryShellBlockParses(t *testing.T) {
	for _, b := range shellBlocks(t, repoRoot(t)) {
		if b.Transcript() && b.Skip == "" {
			if _, err := ParseTranscript(b.Text); err != nil {
				t.Errorf("%s: %v", b.Name(), err)
			}
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// shellBlocks returns the shell blocks of README.md and docs/*.md, README
// first, as a reader meets them.
func shellBlocks(t *testing.T, root string) []Block {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []Block
	for _, p := range append([]string{filepath.Join(root, "README.md")}, pages...) {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		bs, err := ParseBlocks(rel, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			if b.Shell() {
				blocks = append(blocks, b)
			}
		}
	}
	return blocks
}

// demoEnv is the environment a reader of the docs has after make demo: the
// demo's kubeconfig, kubectl (the demo's) and bin/ (kquantctl and the
// kubectl plugin) on PATH, in the repository's root.
func demoEnv(t *testing.T, root, demo string) []string {
	t.Helper()
	kubeconfig := filepath.Join(demo, "kubeconfig")
	if _, err := os.Stat(kubeconfig); err != nil {
		t.Fatalf("no demo in %s (make demo first): %v", demo, err)
	}
	assets, err := exec.Command(filepath.Join(root, "hack", "envtest-assets.sh")).Output()
	if err != nil {
		t.Fatalf("hack/envtest-assets.sh: %v", err)
	}
	tools := t.TempDir()
	if err := os.Symlink(filepath.Join(strings.TrimSpace(string(assets)), "kubectl"), filepath.Join(tools, "kubectl")); err != nil {
		t.Fatal(err)
	}
	path := strings.Join([]string{tools, filepath.Join(root, "bin"), os.Getenv("PATH")}, string(os.PathListSeparator))
	env := []string{"KUBECONFIG=" + kubeconfig, "PATH=" + path, "PWD=" + root}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "PWD=") {
			env = append(env, kv)
		}
	}
	return env
}

// runShell runs a script with bash in root and returns what it printed,
// stdout and stderr together as a terminal shows them.
func runShell(root string, env []string, script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), blockTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = root, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
