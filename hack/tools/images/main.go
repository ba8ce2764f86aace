// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Command images builds one container image, for one or more platforms, as an
// OCI image-layout archive that both `ctr images import` and `docker load`
// accept, without Docker and without a registry.
//
// The image is a base layer made from a local root filesystem directory (the
// stand-in for the Dockerfile's distroless base, made from Debian's packages by
// hack/images.sh; -base-for gives a platform its own, for a base with a libc)
// and a layer with the binary. Its user, entrypoint,
// environment, working directory and the binary's path come from the final
// stage of the Dockerfile given, so this path and `docker build` produce the
// same run-time image.
//
//	images -dockerfile Dockerfile.manager -base DIR -ref kquant.local/kquant-manager:dev \
//	  -binary linux/amd64=bin/linux_amd64/manager -binary linux/arm64=bin/linux_arm64/manager \
//	  -out bin/images/kquant-manager.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// platformBinaries collects repeated -binary os/arch=path flags.
type platformBinaries []platformBinary

type platformBinary struct {
	OS, Arch, Path string
}

func (b platformBinary) platform() string { return b.OS + "/" + b.Arch }

func (p *platformBinaries) String() string { return fmt.Sprint(*p) }

func (p *platformBinaries) Set(v string) error {
	platform, path, ok := strings.Cut(v, "=")
	goos, arch, ok2 := strings.Cut(platform, "/")
	if !ok || !ok2 || path == "" {
		return fmt.Errorf("want os/arch=path, got %q", v)
	}
	*p = append(*p, platformBinary{OS: goos, Arch: arch, Path: path})
	return nil
}

func main() {
	var spec buildSpec
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	fs.StringVar(&spec.Dockerfile, "dockerfile", "", "Dockerfile whose final stage gives user, entrypoint, env and binary path")
	fs.StringVar(&spec.BaseDir, "base", "", "root filesystem directory of the base layer")
	fs.Var(platformDirs(func(platform, dir string) {
		if spec.BaseDirFor == nil {
			spec.BaseDirFor = map[string]string{}
		}
		spec.BaseDirFor[platform] = dir
	}), "base-for", "os/arch=DIR: the base of that platform instead of -base (repeatable)")
	fs.Var(&envList{&spec.BaseEnv}, "base-env", "KEY=VALUE the base image sets (repeatable), before the Dockerfile's ENV")
	fs.StringVar(&spec.BaseWorkDir, "base-workdir", "", "working directory the base image sets, unless the Dockerfile sets WORKDIR")
	fs.StringVar(&spec.Ref, "ref", "", "image reference with an explicit tag, e.g. kquant.local/kquant-manager:dev")
	fs.StringVar(&spec.Out, "out", "", "archive to write")
	fs.Var(&spec.Binaries, "binary", "os/arch=path of the binary for one platform (repeatable)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	result, err := build(spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
	fmt.Println(result)
}

// platformDirs is a repeatable os/arch=DIR flag.
type platformDirs func(platform, dir string)

func (platformDirs) String() string { return "" }

func (p platformDirs) Set(v string) error {
	platform, dir, ok := strings.Cut(v, "=")
	if _, _, ok2 := strings.Cut(platform, "/"); !ok || !ok2 || dir == "" {
		return fmt.Errorf("want os/arch=DIR, got %q", v)
	}
	p(platform, dir)
	return nil
}

// envList collects repeated KEY=VALUE flags.
type envList struct{ env *[]string }

func (e *envList) String() string {
	if e.env == nil {
		return ""
	}
	return strings.Join(*e.env, ",")
}

func (e *envList) Set(v string) error {
	if !strings.Contains(v, "=") {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	*e.env = append(*e.env, v)
	return nil
}
