#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# bundle.sh builds what the scale harness needs on a machine without Go (the
# device machine, where the 1,000- and 5,000-node scenarios run on idle
# cores): the harness as a compiled test binary, the manager, kube-apiserver,
# etcd and KWOK (the run-pod mode's kubelets), stripped, in one xz archive
# (scale.tar.xz) that travels with the checkout within the device tool's
# 64 MiB. The tree itself (config/crd/bases, test/scale/kwok.yaml,
# test/scale/device-run.sh) travels as usual.
#
#   test/scale/bundle.sh [DIR]     # default .gpubin-scale (git-ignored)
#
# Then, on the device machine, from the repository root:
#   test/scale/device-run.sh .gpubin-scale $OUT     # both sizes, see there
#
# Why one archive: the five are Go programs built on the same Kubernetes
# libraries, so one LZMA2 stream whose dictionary spans all of them stores
# what they share once (type names, strings, tables), and the x86 filter
# makes their call sites compress as well. Compressed one by one they took
# 60 MB; the check below fails the bundle past BUNDLE_MAX_MIB.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DIR=${1:-$ROOT/.gpubin-scale}
# The checkout travels beside the bundle (about 17 MB tracked): together
# they must fit the device tool's 64 MiB a call.
BUNDLE_MAX_MIB=${BUNDLE_MAX_MIB:-44}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
cd "$ROOT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

go build -trimpath -ldflags='-s -w' -o "$TMP/manager" ./cmd/manager
go test -c -tags scale -trimpath -ldflags='-s -w' -o "$TMP/scale.test" ./test/scale
ASSETS=$(hack/envtest-assets.sh)
for b in kube-apiserver etcd; do strip -o "$TMP/$b" "$ASSETS/$b"; done
KWOK=$(hack/kwok-assets.sh)
cp "$KWOK/kwok" "$TMP/kwok"
# Single-threaded: threads would cut the stream into blocks, each with its
# own dictionary, and lose what the binaries share.
tar -C "$TMP" -cf - manager scale.test kwok kube-apiserver etcd |
  xz -T1 --x86 --lzma2=preset=9,dict=256MiB -c >"$DIR/scale.tar.xz.tmp"
mv "$DIR/scale.tar.xz.tmp" "$DIR/scale.tar.xz"
# What earlier versions of this script left, one file per binary.
rm -f "$DIR"/{manager,scale.test,kwok,kube-apiserver,etcd}.xz "$DIR"/{assets,kwok}.stamp
git rev-parse HEAD >"$DIR/commit"
ls -l "$DIR" >&2
size=$(du -sm "$DIR" | cut -f1)
echo "bundle: ${size} MiB in $DIR (at most ${BUNDLE_MAX_MIB})" >&2
if ((size > BUNDLE_MAX_MIB)); then
  echo "bundle.sh: $DIR is ${size} MiB, over ${BUNDLE_MAX_MIB} MiB" >&2
  exit 1
fi
