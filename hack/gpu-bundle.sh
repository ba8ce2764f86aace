#!/usr/bin/env bash
# Builds the gpu-tagged test binaries (the GPU test suite and the GPU
# benchmarks) into DIR, xz-compressed so that they travel to a GPU machine
# without Go, with the kernel sources beside them for hack/gen-kernels.sh
# there. Run the suite there with hack/gpu-run.sh.
#
# Usage: hack/gpu-bundle.sh [DIR [PKG...]]
#   DIR  default .gpubin-suite (git-ignored)
#   PKG  the packages to build, default kernels internal/gpu internal/cuda
#        agent/nvml. kernels and internal/gpu (the bit-exactness suites and
#        the benchmarks, about 25 MB) alone travel beside the checkout (38
#        MB, most of it the committed PTX) to a machine that takes 64 MiB a
#        call; the four together (about 33 MB) do not, so such a machine
#        takes internal/cuda and agent/nvml in a bundle of their own.
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
	CGO_ENABLED=1 go test -c -tags gpu -ldflags='-s -w' -o "$dir/$name.test" "./$pkg"
	xz -T0 -6 -f "$dir/$name.test"
done
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- kernels internal agent || echo +dirty)" >"$dir/commit"
du -sh "$dir"
