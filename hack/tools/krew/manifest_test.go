// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package krew

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// repoRoot is the kquant checkout, three levels up.
var repoRoot = filepath.Join("..", "..", "..")

// manifest is what this test reads of the krew manifest.
type manifest struct {
	Spec struct {
		Version   string `json:"version"`
		Platforms []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
		} `json:"platforms"`
	} `json:"spec"`
}

// TestManifestIsValidForKrew runs krew's validate-krew-manifest on the
// manifest: krew's schema, name, version, platforms, selectors and sums.
// (Its install step downloads the release; TestKrewInstallsTheArchive
// installs the local archive instead.)
func TestManifestIsValidForKrew(t *testing.T) {
	out, err := exec.Command("go", "tool", "validate-krew-manifest", "-skip-install",
		"-manifest", filepath.Join(repoRoot, "plugins", "kquant.yaml")).CombinedOutput()
	if err != nil {
		t.Fatalf("validate-krew-manifest: %v\n%s", err, out)
	}
}

// TestKrewInstallsTheArchive installs this platform's archive of `make
// dist` with krew itself (krew install --manifest --archive) into a
// temporary KREW_ROOT, after checking that the manifest's sums are
// dist/SHA256SUMS', and runs the installed plugin.
func TestKrewInstallsTheArchive(t *testing.T) {
	sums := readSums(t)
	data, err := os.ReadFile(filepath.Join(repoRoot, "plugins", "kquant.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	archive := ""
	for _, p := range m.Spec.Platforms {
		name := filepath.Base(p.URI)
		if sums[name] != p.SHA256 {
			t.Errorf("%s: manifest sha256 %s, dist/SHA256SUMS %s: run make dist again", name, p.SHA256, sums[name])
		}
		if l := p.Selector.MatchLabels; l["os"] == runtime.GOOS && l["arch"] == runtime.GOARCH {
			archive = filepath.Join(repoRoot, "dist", name)
		}
	}
	if archive == "" {
		t.Skipf("the manifest has no archive for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	root := t.TempDir()
	cmd := exec.Command("go", "tool", "krew", "install", "--manifest", filepath.Join(repoRoot, "plugins", "kquant.yaml"), "--archive", archive)
	cmd.Env = append(os.Environ(), "KREW_ROOT="+root)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("krew install: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(root, "bin", "kubectl-kquant"), "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), m.Spec.Version) {
		t.Errorf("installed plugin: %v: %s, want version %s", err, out, m.Spec.Version)
	}
}

// readSums reads dist/SHA256SUMS (archive name to sum); it skips the test
// when make dist has not run.
func readSums(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "dist", "SHA256SUMS"))
	if os.IsNotExist(err) {
		t.Skip("no dist/SHA256SUMS: run make dist first")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sum, name, ok := strings.Cut(sc.Text(), "  "); ok {
			sums[name] = sum
		}
	}
	return sums
}
