// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// licenceHeader opens every kernel source; the stamp hashes the sources
// without it, as hack/gen-kernels.sh does, since it is no code: the PTX of a
// source does not change with it.
const licenceHeader = "// Copyright 2026 The kquant Authors.\n// SPDX-License-Identifier: Apache-2.0\n\n"

// TestPTXStamps fails when a kernel source or a header it includes changed
// and its PTX, for either target, or its cubin, for any SM of kernels/sass,
// was not regenerated with hack/gen-kernels.sh (which needs nvcc, so CI
// cannot do it: it can only notice). Every module has a cubin for every SM
// that has any (the machine code of one generation), sm_90 among them.
func TestPTXStamps(t *testing.T) {
	if _, err := os.Stat("kernels.go"); err != nil {
		// A compiled test binary run elsewhere (the GPU machine runs
		// them from the repository root) cannot see the sources.
		t.Skip("not running in the kernels package directory")
	}
	sources, err := filepath.Glob("*.cu")
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) == 0 {
		t.Fatal("no kernel sources found")
	}
	headers, err := filepath.Glob("*.cuh") // in byte order of the names, as gen-kernels.sh (LC_ALL=C)
	if err != nil {
		t.Fatal(err)
	}
	sms, err := codeFS.ReadDir("sass")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(sms, func(e fs.DirEntry) bool { return e.Name() == SMFor(9, 0) }) {
		t.Errorf("no %s cubins embedded: run hack/gen-kernels.sh", SMFor(9, 0))
	}
	for _, src := range sources {
		module := strings.TrimSuffix(src, ".cu")
		t.Run(module, func(t *testing.T) {
			h := sha256.New()
			for _, f := range append([]string{src}, headers...) {
				text, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				h.Write(bytes.TrimPrefix(text, []byte(licenceHeader)))
			}
			want := hex.EncodeToString(h.Sum(nil))
			for _, target := range []Target{TargetHopper, TargetAmpere} {
				if strings.HasSuffix(module, "_sm100a") && target == TargetAmpere {
					continue
				}
				ptx, err := PTX(module, target)
				if err != nil {
					t.Fatalf("%s has no embedded %s PTX: run hack/gen-kernels.sh on a machine with nvcc", src, target)
				}
				if got := SourceHash(ptx); got != want {
					t.Errorf("%s PTX of %s was generated from source sha256 %q, %s and the headers are now %s: run hack/gen-kernels.sh", target, module, got, src, want)
				}
			}
			if strings.HasSuffix(module, "_sm100a") {
				return // PTX alone
			}
			for _, sm := range sms {
				cubin, err := stampedCubin(module, sm.Name())
				if err != nil {
					t.Errorf("%s has no %s cubin: run hack/gen-kernels.sh on a machine with nvcc", src, sm.Name())
					continue
				}
				if got := SourceHash(cubin); got != want {
					t.Errorf("%s cubin of %s was assembled from source sha256 %q, %s and the headers are now %s: run hack/gen-kernels.sh", sm.Name(), module, got, src, want)
				}
				if _, err := Cubin(module, sm.Name()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	// Every embedded PTX and cubin must still have its source.
	dirs := []string{".", "ptx80"}
	for _, sm := range sms {
		dirs = append(dirs, "sass/"+sm.Name())
	}
	for _, dir := range dirs {
		entries, err := codeFS.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			src := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(e.Name(), codeExt), ".ptx"), ".cubin") + ".cu"
			if _, err := os.Stat(src); err != nil {
				t.Errorf("%s/%s has no source %s", dir, e.Name(), src)
			}
		}
	}
}

func TestTargetFor(t *testing.T) {
	cases := []struct {
		major, minor int
		want         Target
	}{
		{8, 0, TargetAmpere}, {8, 6, TargetAmpere}, {8, 9, TargetAmpere},
		{9, 0, TargetHopper}, {10, 0, TargetHopper}, {12, 0, TargetHopper},
	}
	for _, tc := range cases {
		if got, err := TargetFor(tc.major, tc.minor); err != nil || got != tc.want {
			t.Errorf("TargetFor(%d, %d) = %q, %v; want %q", tc.major, tc.minor, got, err, tc.want)
		}
	}
	if _, err := TargetFor(7, 5); err == nil {
		t.Error("TargetFor(7, 5) found a target; the kernels need 8.0")
	}
}

// TestEmbeddedCodeDecompresses reads every embedded file of generated code
// as Load does: each must be an xz stream whose contents start with a stamp
// line, so a file compressed by other means, or left uncompressed, fails
// here rather than on a GPU.
func TestEmbeddedCodeDecompresses(t *testing.T) {
	if !codeEmbedded {
		t.Skip("built with kquant_nocode: no code embedded")
	}
	var n int
	err := fs.WalkDir(codeFS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		if !strings.HasSuffix(path, codeExt) {
			t.Errorf("%s: embedded code must end in %s", path, codeExt)
			return nil
		}
		b, err := readCode(path)
		if err != nil {
			t.Error(err)
			return nil
		}
		if SourceHash(b) == "" {
			t.Errorf("%s: no %q line after decompressing", path, StampPrefix)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no generated code embedded")
	}
}

func TestDecompressRejectsOtherFormats(t *testing.T) {
	for name, b := range map[string][]byte{
		"plain": []byte(StampPrefix + "0123\n.version 8.0\n"),
		"gzip":  {0x1f, 0x8b, 0x08, 0x00},
		"empty": nil,
	} {
		if _, err := decompress(name, b); err == nil {
			t.Errorf("decompress(%s) succeeded; want an error", name)
		}
	}
}
