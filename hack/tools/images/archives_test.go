// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// builtImagesDir is where `make images` writes its archives.
const builtImagesDir = "../../../bin/images"

// elfMachines is the ELF machine each image architecture's binaries have.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// TestBuiltArchives reads the archives `make images` built, as a node of
// either architecture would: each is an index with linux/amd64 and
// linux/arm64, each manifest's configuration names its architecture, and its
// entrypoint is a binary for that architecture whose program interpreter (the
// agent's, which uses cgo) the image holds. hack/images.sh runs it on what
// it has just built; without archives it skips. Outside CI, an agent built
// where no cross gcc was may be amd64 only, as hack/images.sh allows.
func TestBuiltArchives(t *testing.T) {
	both := []string{"linux/amd64", "linux/arm64"}
	for _, tc := range []struct {
		archive string
		cgo     bool
	}{
		{archive: "kquant-manager.tar"},
		{archive: "kquant-agent.tar", cgo: true},
		{archive: "pause.tar"},
	} {
		t.Run(tc.archive, func(t *testing.T) {
			file := filepath.Join(builtImagesDir, tc.archive)
			if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
				t.Skipf("%s is not built: make images builds it and runs this test", file)
			}
			images := platformImages(t, file)
			got := slices.Sorted(maps.Keys(images))
			switch {
			case slices.Equal(got, both):
			case tc.cgo && slices.Equal(got, both[:1]) && os.Getenv("CI") == "":
				t.Logf("%s is linux/amd64 only: built without Debian's gcc-aarch64-linux-gnu (an error under CI)", file)
			default:
				t.Fatalf("platforms %v, want %v", got, both)
			}
			for platform, img := range images {
				checkPlatformImage(t, platform, img)
			}
		})
	}
}

func checkPlatformImage(t *testing.T, platform string, img v1.Image) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.OS + "/" + cf.Architecture; got != platform {
		t.Errorf("%s: configuration names %s", platform, got)
	}
	if len(cf.Config.Entrypoint) == 0 {
		t.Fatalf("%s: no entrypoint", platform)
	}
	files := flatten(t, img)
	entrypoint := strings.TrimPrefix(cf.Config.Entrypoint[0], "/")
	bin, ok := files[entrypoint]
	if !ok {
		t.Fatalf("%s: no %s in the image", platform, entrypoint)
	}
	f, err := elf.NewFile(bytes.NewReader(bin.data))
	if err != nil {
		t.Fatalf("%s: %s: %v", platform, entrypoint, err)
	}
	if want := elfMachines[cf.Architecture]; f.Machine != want {
		t.Errorf("%s: %s is for %s, want %s", platform, entrypoint, f.Machine, want)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		interp, err := io.ReadAll(p.Open())
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(strings.TrimRight(string(interp), "\x00"), "/")
		if !files.resolves(name) {
			t.Errorf("%s: %s's interpreter /%s is not in the image", platform, entrypoint, name)
		}
	}
}

// platformImages reads an archive's images by os/arch: the image index's, or
// its one image.
func platformImages(t *testing.T, archive string) map[string]v1.Image {
	t.Helper()
	dir := t.TempDir()
	untar(t, archive, dir)
	lp, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1 {
		t.Fatalf("index.json names %d entries, want one", len(top.Manifests))
	}
	if !top.Manifests[0].MediaType.IsIndex() {
		// One platform: the image itself, whose configuration names it.
		img, err := lp.Image(top.Manifests[0].Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		return map[string]v1.Image{cf.OS + "/" + cf.Architecture: img}
	}
	idx, err := lp.ImageIndex(top.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	images := map[string]v1.Image{}
	for _, m := range im.Manifests {
		if m.Platform == nil {
			t.Fatalf("manifest %s names no platform", m.Digest)
		}
		if images[m.Platform.OS+"/"+m.Platform.Architecture], err = idx.Image(m.Digest); err != nil {
			t.Fatal(err)
		}
	}
	return images
}

type imageFile struct {
	link string // a symlink's target
	data []byte
}

// imageFiles is an image's root filesystem, by path without the leading /.
type imageFiles map[string]imageFile

// resolves reports whether name is a regular file, following symlinks.
func (files imageFiles) resolves(name string) bool {
	for range 8 {
		f, ok := files[name]
		switch {
		case !ok:
			return false
		case f.link == "":
			return true
		case path.IsAbs(f.link):
			name = strings.TrimPrefix(f.link, "/")
		default:
			name = path.Join(path.Dir(name), f.link)
		}
	}
	return false
}

func flatten(t *testing.T, img v1.Image) imageFiles {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := imageFiles{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(path.Clean(hdr.Name), "/")
		switch hdr.Typeflag {
		case tar.TypeSymlink:
			files[name] = imageFile{link: hdr.Linkname}
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[name] = imageFile{data: data}
		}
	}
}
