#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# bundle.sh builds what the scale harness needs on a machine without Go (the
# device machine, where the 1,000-node scenarios run on idle cores): the harness
# as a compiled test binary, the manager, kube-apiserver, etcd and KWOK (the
# run-pod mode's kubelets), stripped and xz-compressed so that they travel
# within the device tool's 64 MiB. The tree itself (config/crd/bases,
# test/scale/kwok.yaml, test/scale/device-run.sh) travels as usual.
#
#   test/scale/bundle.sh [DIR]     # default .gpubin-scale (git-ignored)
#
# Then, on the device machine, from the repository root:
#   test/scale/device-run.sh .gpubin-scale $OUT -nodes 1000 -scenarios eachgpu
#   test/scale/device-run.sh .gpubin-scale $OUT -nodes 1000 -scenarios eachgpu -gpu-allocation DevicePlugin
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DIR=${1:-$ROOT/.gpubin-scale}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
cd "$ROOT"
# shellcheck source=../../hack/lib/assets.sh
source hack/lib/assets.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

go build -trimpath -ldflags='-s -w' -o "$TMP/manager" ./cmd/manager
go test -c -tags scale -trimpath -ldflags='-s -w' -o "$TMP/scale.test" ./test/scale
for b in manager scale.test; do
  xz -6 -T0 -c "$TMP/$b" >"$DIR/$b.xz"
done
# The control plane, compressed only when hack/envtest-assets.sh's stamp changed.
assets_pack_control_plane "$DIR"
# KWOK, compressed only when hack/kwok-assets.sh's stamp changed.
KWOK=$(hack/kwok-assets.sh)
if ! { [[ -f $DIR/kwok.stamp ]] && cmp -s "$KWOK/.stamp" "$DIR/kwok.stamp"; }; then
  xz -6 -T0 -c "$KWOK/kwok" >"$DIR/kwok.xz"
  cp "$KWOK/.stamp" "$DIR/kwok.stamp"
fi
git rev-parse HEAD >"$DIR/commit"
ls -l "$DIR" >&2
du -sh "$DIR" >&2
