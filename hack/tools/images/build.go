// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ociImage and ociIndex are the empty image and index with OCI media types
// (go-containerregistry's empty ones have Docker's).
var (
	ociImage = mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	ociIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
)

// epoch is every timestamp in the images: the same inputs give the same
// digests, whenever and wherever they are built.
var epoch = time.Unix(0, 0).UTC()

// buildSpec is one image to build.
type buildSpec struct {
	Dockerfile string
	// BaseDir is the base of every platform that BaseDirFor does not name:
	// a base of files only (the static one) serves every architecture, one
	// with a libc does not.
	BaseDir    string
	BaseDirFor map[string]string // "os/arch" -> root filesystem directory
	// BaseEnv and BaseWorkDir are the configuration the Dockerfile's base
	// image brings (distroless: SSL_CERT_FILE and /home/nonroot), which the
	// Dockerfile's own ENV and WORKDIR extend or override, as in a docker build.
	BaseEnv     []string
	BaseWorkDir string
	Ref         string
	Out         string
	Binaries    platformBinaries
}

func (s buildSpec) validate() (name.Tag, error) {
	switch {
	case s.Dockerfile == "" || s.BaseDir == "" || s.Ref == "" || s.Out == "":
		return name.Tag{}, fmt.Errorf("-dockerfile, -base, -ref and -out are required")
	case len(s.Binaries) == 0:
		return name.Tag{}, fmt.Errorf("at least one -binary os/arch=path is required")
	}
	for platform := range s.BaseDirFor {
		if !slices.ContainsFunc(s.Binaries, func(b platformBinary) bool { return b.platform() == platform }) {
			return name.Tag{}, fmt.Errorf("-base-for %s: no -binary for that platform", platform)
		}
	}
	tag, err := name.NewTag(s.Ref, name.StrictValidation)
	if err != nil {
		return name.Tag{}, fmt.Errorf("-ref %q needs an explicit tag: %w", s.Ref, err)
	}
	// A :latest image makes the kubelet's default pull policy Always, and
	// nothing can be pulled where these archives are imported.
	if tag.TagStr() == "latest" {
		return name.Tag{}, fmt.Errorf("-ref %q: use an explicit tag, not latest", s.Ref)
	}
	return tag, nil
}

// build writes the archive and returns a line naming the image: reference,
// digest and archive size.
func build(s buildSpec) (string, error) {
	tag, err := s.validate()
	if err != nil {
		return "", err
	}
	f, err := os.Open(s.Dockerfile)
	if err != nil {
		return "", err
	}
	st, err := parseFinalStage(f)
	f.Close()
	if err != nil {
		return "", fmt.Errorf("%s: %w", s.Dockerfile, err)
	}
	bases := map[string]v1.Layer{}
	images := make([]platformImage, 0, len(s.Binaries))
	for _, b := range s.Binaries {
		dir := s.baseDir(b)
		if bases[dir] == nil {
			if bases[dir], err = dirLayer(dir); err != nil {
				return "", fmt.Errorf("base layer from %s: %w", dir, err)
			}
		}
		img, err := platformImageFor(st, bases[dir], s.BaseEnv, s.BaseWorkDir, b)
		if err != nil {
			return "", fmt.Errorf("%s/%s image: %w", b.OS, b.Arch, err)
		}
		images = append(images, img)
	}
	digest, err := writeArchive(s.Out, tag, images)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(s.Out)
	if err != nil {
		return "", err
	}
	platforms := make([]string, len(images))
	for i, img := range images {
		platforms[i] = img.platform.OS + "/" + img.platform.Architecture
	}
	return fmt.Sprintf("%s %s %s %.1f MiB", tag.Name(), digest, strings.Join(platforms, ","), float64(fi.Size())/(1<<20)), nil
}

// baseDir is the root filesystem of b's platform.
func (s buildSpec) baseDir(b platformBinary) string {
	if dir, ok := s.BaseDirFor[b.platform()]; ok {
		return dir
	}
	return s.BaseDir
}

type platformImage struct {
	platform v1.Platform
	image    v1.Image
}

func platformImageFor(st *stage, base v1.Layer, baseEnv []string, baseWorkDir string, b platformBinary) (platformImage, error) {
	bin, err := fileLayer(b.Path, st.Binary)
	if err != nil {
		return platformImage{}, err
	}
	img, err := mutate.AppendLayers(ociImage, base, bin)
	if err != nil {
		return platformImage{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return platformImage{}, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = b.OS, b.Arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = st.Entrypoint
	cf.Config.User = st.User
	cf.Config.WorkingDir = baseWorkDir
	if st.WorkingDir != "" {
		cf.Config.WorkingDir = st.WorkingDir
	}
	cf.Config.Env = mergeEnv(append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, baseEnv...), st.Env)
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return platformImage{}, err
	}
	return platformImage{platform: v1.Platform{OS: b.OS, Architecture: b.Arch}, image: img}, nil
}

// mergeEnv applies ENV assignments over a base environment: a key already
// set keeps its place and takes the new value, a new key is appended.
func mergeEnv(base, over []string) []string {
	env := slices.Clone(base)
	for _, kv := range over {
		key, _, _ := strings.Cut(kv, "=")
		i := slices.IndexFunc(env, func(e string) bool { k, _, _ := strings.Cut(e, "="); return k == key })
		if i >= 0 {
			env[i] = kv
		} else {
			env = append(env, kv)
		}
	}
	return env
}

// dirLayer is a layer holding dir's tree as the image's root: sorted, owned
// by root, timestamps at the epoch, symlinks kept.
func dirLayer(dir string) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := addTree(tw, dir, true); err != nil {
		return nil, err
	}
	return closeLayer(tw, &buf)
}

// addTree writes dir's entries into tw under their paths relative to dir,
// sorted, so that the same tree always gives the same bytes; directories too
// when withDirs.
func addTree(tw *tar.Writer, dir string, withDirs bool) error {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir && (withDirs || !d.IsDir()) {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	for _, p := range paths {
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if err := addPath(tw, p, filepath.ToSlash(rel)); err != nil {
			return err
		}
	}
	return nil
}

// fileLayer is a layer with one executable file at dest (an absolute path).
func fileLayer(src, dest string) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dest = strings.TrimPrefix(path.Clean(dest), "/")
	if dir := path.Dir(dest); dir != "." {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	if err := addPath(tw, src, dest); err != nil {
		return nil, err
	}
	return closeLayer(tw, &buf)
}

func addPath(tw *tar.Writer, src, name string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	link := ""
	if fi.Mode()&fs.ModeSymlink != 0 {
		if link, err = os.Readlink(src); err != nil {
			return err
		}
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return err
	}
	hdr.Name = name
	if fi.IsDir() {
		hdr.Name += "/"
	}
	// Owners are kept (the bases are made as root, with /home/nonroot owned
	// by nonroot as in distroless); names are dropped, only numbers count.
	hdr.Uname, hdr.Gname = "", ""
	hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = epoch, time.Time{}, time.Time{}
	hdr.Format = tar.FormatPAX
	hdr.PAXRecords = nil
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}

func closeLayer(tw *tar.Writer, buf *bytes.Buffer) (v1.Layer, error) {
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithCompressedCaching, tarball.WithMediaType(types.OCILayer))
}

// writeArchive writes the images as an OCI image layout, tarred, whose
// index.json names the image for containerd (io.containerd.image.name) and
// OCI tools (org.opencontainers.image.ref.name), plus the manifest.json of
// `docker save` for the host's platform, so that `docker load` reads it too.
// It returns the digest of what the index names: the image, or the image
// index when there are several platforms.
func writeArchive(out string, tag name.Tag, images []platformImage) (v1.Hash, error) {
	dir, err := os.MkdirTemp(filepath.Dir(out), ".layout-")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.RemoveAll(dir)
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	annotations := map[string]string{
		"io.containerd.image.name":          tag.Name(),
		"org.opencontainers.image.ref.name": tag.TagStr(),
	}
	var digest v1.Hash
	if len(images) == 1 {
		if err := lp.AppendImage(images[0].image, layout.WithAnnotations(annotations)); err != nil {
			return v1.Hash{}, err
		}
		if digest, err = images[0].image.Digest(); err != nil {
			return v1.Hash{}, err
		}
	} else {
		adds := make([]mutate.IndexAddendum, len(images))
		for i, img := range images {
			p := img.platform
			adds[i] = mutate.IndexAddendum{Add: img.image, Descriptor: v1.Descriptor{Platform: &p}}
		}
		idx := mutate.AppendManifests(ociIndex, adds...)
		if err := lp.AppendIndex(idx, layout.WithAnnotations(annotations)); err != nil {
			return v1.Hash{}, err
		}
		if digest, err = idx.Digest(); err != nil {
			return v1.Hash{}, err
		}
	}
	if err := writeDockerManifest(dir, tag, hostImage(images)); err != nil {
		return v1.Hash{}, err
	}
	if err := tarDir(dir, out); err != nil {
		return v1.Hash{}, err
	}
	return digest, nil
}

// hostImage is the image for this machine's architecture, else the first.
func hostImage(images []platformImage) v1.Image {
	for _, img := range images {
		if img.platform.Architecture == runtime.GOARCH {
			return img.image
		}
	}
	return images[0].image
}

// dockerManifestEntry is one entry of `docker save`'s manifest.json.
type dockerManifestEntry struct {
	Config   string
	RepoTags []string
	Layers   []string
}

func writeDockerManifest(dir string, tag name.Tag, img v1.Image) error {
	cfg, err := img.ConfigName()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	entry := dockerManifestEntry{Config: blobPath(cfg), RepoTags: []string{tag.Name()}}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		entry.Layers = append(entry.Layers, blobPath(d))
	}
	data, err := json.Marshal([]dockerManifestEntry{entry})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "manifest.json"), data, 0o644)
}

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

// tarDir writes dir's files into a tar archive at out, sorted, timestamps at
// the epoch, through a temporary file so a failed build leaves no half archive.
func tarDir(dir, out string) error {
	tmp, err := os.CreateTemp(filepath.Dir(out), ".archive-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	tw := tar.NewWriter(tmp)
	if err := addTree(tw, dir, false); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; an image archive is for everyone to read.
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}
