#!/usr/bin/env bash
# Builds the gpu-tagged test binaries (the GPU test suite and the GPU
# benchmarks) into DIR, xz-compressed so that they travel to a GPU machine
# without Go (64 MiB limit), with the kernel sources beside them for
# hack/gen-kernels.sh there. Run the suite there with hack/gpu-run.sh.
#
# Usage: hack/gpu-bundle.sh [DIR]   (default .gpubin-suite, git-ignored)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.gpubin-suite}
mkdir -p "$dir"
rm -f "$dir"/*.test "$dir"/*.test.xz
for pkg in kernels internal/gpu internal/cuda agent/nvml; do
	name=$(basename "$pkg")
	CGO_ENABLED=1 go test -c -tags gpu -ldflags='-s -w' -o "$dir/$name.test" "./$pkg"
	xz -T0 -6 -f "$dir/$name.test"
done
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- kernels internal agent || echo +dirty)" >"$dir/commit"
du -sh "$dir"
