#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# Builds the gpu-tagged test binaries (the GPU test suite and the GPU
# benchmarks) into DIR, xz-compressed so that they travel to a GPU machine
# without Go, with the kernel sources beside them for hack/gen-kernels.sh
# there. Run the suite there with hack/gpu-run.sh.
#
# Usage: hack/gpu-bundle.sh [DIR [PKG...]]
#   DIR  default .gpubin-suite (git-ignored)
#   PKG  the packages to build, default kernels internal/gpu internal/cuda
#        agent/nvml.
# The binaries are built with the tag kquant_nocode: they embed none of
# the generated code (the PTX and cubins, about 9 MB a binary compressed)
# and read it from KQUANT_PTX_DIR, which hack/gpu-run.sh points at the
# checkout's kernels/ or at the code it regenerates. kernels and internal/gpu (the
# bit-exactness suites and the benchmarks) are then about 5 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.gpubin-suite}
shift || true
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(kernels internal/gpu internal/cuda agent/nvml)
mkdir -p "$dir"
rm -f "$dir"/*.test "$dir"/*.test.xz
for pkg in "${pkgs[@]}"; do
	name=$(basename "$pkg")
	CGO_ENABLED=1 go test -c -tags gpu,kquant_nocode -ldflags='-s -w' -o "$dir/$name.test" "./$pkg"
	xz -T0 -6 -f "$dir/$name.test"
done
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- kernels internal agent || echo +dirty)" >"$dir/commit"
du -sh "$dir"
