// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"archive/tar"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// testSpec is a two-platform image from a tiny Dockerfile, base and binaries.
func testSpec(t *testing.T, dir string) buildSpec {
	t.Helper()
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM golang AS build\nRUN go build\nFROM base\nCOPY --from=build /out/tool /tool\nENV A=1\nUSER 65532:65532\nENTRYPOINT [\"/tool\"]\n", 0o644)
	writeFile(t, filepath.Join(dir, "base", "etc", "passwd"), "nonroot:x:65532:65532::/:/sbin/nologin\n", 0o644)
	if err := os.Symlink("passwd", filepath.Join(dir, "base", "etc", "passwd.link")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "amd64"), "amd64 binary", 0o755)
	writeFile(t, filepath.Join(dir, "arm64"), "arm64 binary", 0o755)
	return buildSpec{
		Dockerfile: filepath.Join(dir, "Dockerfile"),
		BaseDir:    filepath.Join(dir, "base"),
		Ref:        "kquant.local/tool:dev",
		Binaries: platformBinaries{
			{OS: "linux", Arch: "amd64", Path: filepath.Join(dir, "amd64")},
			{OS: "linux", Arch: "arm64", Path: filepath.Join(dir, "arm64")},
		},
	}
}

// TestBuildIsReproducible: the same inputs give the same archive, byte for byte.
func TestBuildIsReproducible(t *testing.T) {
	dir := t.TempDir()
	spec := testSpec(t, dir)
	var archives [][]byte
	for _, out := range []string{"one.tar", "two.tar"} {
		spec.Out = filepath.Join(dir, out)
		if _, err := build(spec); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(spec.Out)
		if err != nil {
			t.Fatal(err)
		}
		archives = append(archives, data)
	}
	if !slices.Equal(archives[0], archives[1]) {
		t.Error("two builds of the same inputs differ")
	}
}

// TestArchiveLayout reads the archive back as containerd and Docker would: an
// OCI layout whose index names the image, one manifest per platform with the
// Dockerfile's configuration, and docker save's manifest.json.
func TestArchiveLayout(t *testing.T) {
	dir := t.TempDir()
	spec := testSpec(t, dir)
	spec.Out = filepath.Join(dir, "image.tar")
	if _, err := build(spec); err != nil {
		t.Fatal(err)
	}
	unpacked := filepath.Join(dir, "unpacked")
	untar(t, spec.Out, unpacked)

	idx, err := layout.ImageIndexFromPath(unpacked)
	if err != nil {
		t.Fatal(err)
	}
	top, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1 {
		t.Fatalf("index.json names %d entries, want 1", len(top.Manifests))
	}
	ann := top.Manifests[0].Annotations
	if ann["io.containerd.image.name"] != "kquant.local/tool:dev" || ann["org.opencontainers.image.ref.name"] != "dev" {
		t.Errorf("annotations %v", ann)
	}
	platforms, err := idx.ImageIndex(top.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := platforms.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 {
		t.Fatalf("%d platform manifests, want 2", len(im.Manifests))
	}
	for _, m := range im.Manifests {
		img, err := platforms.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/tool"}) || !slices.Contains(c.Env, "A=1") || cf.Architecture != m.Platform.Architecture {
			t.Errorf("%s config: user %q entrypoint %q env %q arch %q", m.Platform.Architecture, c.User, c.Entrypoint, c.Env, cf.Architecture)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 2 {
			t.Fatalf("%d layers (%v), want base and binary", len(layers), err)
		}
	}

	var docker []dockerManifestEntry
	data, err := os.ReadFile(filepath.Join(unpacked, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &docker); err != nil {
		t.Fatal(err)
	}
	if len(docker) != 1 || !slices.Equal(docker[0].RepoTags, []string{"kquant.local/tool:dev"}) || len(docker[0].Layers) != 2 {
		t.Fatalf("manifest.json %+v", docker)
	}
	for _, p := range append([]string{docker[0].Config}, docker[0].Layers...) {
		if _, err := os.Stat(filepath.Join(unpacked, p)); err != nil {
			t.Errorf("manifest.json names %s: %v", p, err)
		}
	}
}

// TestBaseFor: -base-for gives one platform its own base (a libc of its
// architecture); the others keep -base, and a platform without a binary is
// refused.
func TestBaseFor(t *testing.T) {
	dir := t.TempDir()
	spec := testSpec(t, dir)
	spec.Out = filepath.Join(dir, "image.tar")
	writeFile(t, filepath.Join(dir, "base-arm64", "lib", "ld-linux-aarch64.so.1"), "arm64 loader", 0o755)
	spec.BaseDirFor = map[string]string{"linux/arm64": filepath.Join(dir, "base-arm64")}
	if _, err := build(spec); err != nil {
		t.Fatal(err)
	}
	images := platformImages(t, spec.Out)
	for _, tc := range []struct {
		platform, present, absent string
	}{
		{platform: "linux/amd64", present: "etc/passwd", absent: "lib/ld-linux-aarch64.so.1"},
		{platform: "linux/arm64", present: "lib/ld-linux-aarch64.so.1", absent: "etc/passwd"},
	} {
		files := flatten(t, images[tc.platform])
		if _, ok := files[tc.present]; !ok {
			t.Errorf("%s: no %s", tc.platform, tc.present)
		}
		if _, ok := files[tc.absent]; ok {
			t.Errorf("%s: has %s, from the other platform's base", tc.platform, tc.absent)
		}
	}

	spec.BaseDirFor["linux/riscv64"] = filepath.Join(dir, "base-arm64")
	if _, err := build(spec); err == nil || !strings.Contains(err.Error(), "-base-for linux/riscv64") {
		t.Errorf("-base-for a platform without a binary: error %v", err)
	}
}

func TestBuildRefusesLatest(t *testing.T) {
	dir := t.TempDir()
	spec := testSpec(t, dir)
	spec.Out = filepath.Join(dir, "x.tar")
	for _, ref := range []string{"kquant.local/tool:latest", "kquant.local/tool"} {
		spec.Ref = ref
		if _, err := build(spec); err == nil {
			t.Errorf("-ref %s accepted; want an explicit tag other than latest", ref)
		}
	}
}

func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, hdr.Name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
