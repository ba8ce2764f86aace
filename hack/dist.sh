#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# dist.sh builds kquantctl's release archives and its krew manifest:
#   dist/kquantctl_<version>_<os>_<arch>.tar.gz   kubectl-kquant (also kquantctl under
#                                                  that name), README.md, LICENSE
#   dist/SHA256SUMS                                sha256sum's format
#   plugins/kquant.yaml                            the krew plugin manifest, pointing at the archives
# for every platform kquantctl builds for without cgo (the CUDA backend
# needs cgo, so these binaries run the reference backend and the cluster
# commands; `make build` builds the one with CUDA). The archives are
# reproducible: -trimpath, fixed file times, owners and order, and gzip
# without a timestamp, so that the manifest's sums can be checked again.
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:?usage: hack/dist.sh VERSION}
if [[ ! $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "dist: VERSION=$version: krew needs a semantic version such as v0.1.0 (make dist VERSION=v0.1.0)" >&2
  exit 2
fi
url=${KQUANT_RELEASE_URL:-https://github.com/kquant/kquant/releases/download}
platforms=(linux/amd64 linux/arm64 darwin/arm64)
# The commit's time: the same for every build of one commit.
mtime=$(git log -1 --format=%cI 2>/dev/null || echo 2026-01-01T00:00:00Z)

rm -rf dist && mkdir -p dist
for p in "${platforms[@]}"; do
  os=${p%/*} arch=${p#*/}
  name=kquantctl_${version}_${os}_${arch}
  stage=dist/$name
  mkdir -p "$stage"
  echo "dist: building $name"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
    -ldflags "-s -w -X github.com/kquant/kquant/cmd/internal/version.Version=$version" \
    -o "$stage/kubectl-kquant" ./cmd/kquantctl
  cp README.md "$stage/"
  for f in LICENSE LICENSE.md NOTICE; do [[ -f $f ]] && cp "$f" "$stage/"; done
  tar --sort=name --mtime="$mtime" --owner=0 --group=0 --numeric-owner \
    -C "$stage" -cf - . | gzip -n -9 > "dist/$name.tar.gz"
  rm -rf "$stage"
done
(cd dist && sha256sum ./*.tar.gz | sed 's| \./| |' > SHA256SUMS)

# The krew manifest: one platform entry per archive.
{
  cat <<YAML
# The krew plugin manifest of kubectl kquant, written by \`make dist\`
# (hack/dist.sh) for release $version; hack/tools/krew checks it with krew's
# own validation code.
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: kquant
spec:
  version: $version
  homepage: https://github.com/kquant/kquant
  shortDescription: Run and compare FP8/FP4 quantization checks on GPUs
  description: |
    kubectl kquant reads kquant's QuantJobs and QuantRuns: one row per GPU
    with its verdict and numbers (get results), the fleet per GPU model,
    node or driver with outliers (compare), CSV (export) and one run in
    detail (describe run). It also runs a QuantJob locally without a
    cluster (run) on the pure-Go reference backend.
  platforms:
YAML
  for p in "${platforms[@]}"; do
    os=${p%/*} arch=${p#*/}
    name=kquantctl_${version}_${os}_${arch}
    sum=$(awk -v f="$name.tar.gz" '$2 == f {print $1}' dist/SHA256SUMS)
    cat <<YAML
  - selector:
      matchLabels: {os: $os, arch: $arch}
    uri: $url/$version/$name.tar.gz
    sha256: $sum
    bin: kubectl-kquant
YAML
  done
} > plugins/kquant.yaml
echo "dist: wrote dist/*.tar.gz, dist/SHA256SUMS and plugins/kquant.yaml"
