#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# device-run.sh runs the scale harness from a bundle made by bundle.sh, on a
# machine without the Go toolchain. Run it from anywhere inside a copy of the
# repository (the harness reads config/crd/bases from it).
#
#   test/scale/device-run.sh BUNDLE OUTDIR [harness flags...]
#
# OUTDIR receives scale.log (the harness's output, the table at its end) and
# manager.log.xz. Harness flags: -nodes, -gpus, -jobs, -scenarios
# eachgpu,anygpu, -gpu-allocation None|DevicePlugin (run pods on KWOK's
# kubelets; OUTDIR then also receives kwok.log.xz), -runpod-workers,
# -manager-args "...", -pool-workers, -create-workers,
# -scenario-timeout, -profile-apiserver (OUTDIR then also receives
# apiserver-SCENARIO.pprof).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUNDLE=$(cd "$1" && pwd)
OUTDIR=$2
shift 2
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
BIN=$(mktemp -d /tmp/kquant-scale.XXXXXX)
# shellcheck source=../../hack/lib/assets.sh
source "$ROOT/hack/lib/assets.sh"
for b in manager scale.test kube-apiserver etcd kwok; do assets_unxz "$BUNDLE/$b.xz" "$BIN/$b"; done
echo "bundle of commit $(cat "$BUNDLE/commit" 2>/dev/null || echo unknown); $(nproc) CPUs; $(uname -r)" | tee "$OUTDIR/scale.log"
cd "$ROOT/test/scale"
status=0
KQUANT_REPO_ROOT=$ROOT KUBEBUILDER_ASSETS=$BIN "$BIN/scale.test" -test.run '^TestScale$' -test.v -test.timeout 60m \
  -manager-bin "$BIN/manager" -kwok-bin "$BIN/kwok" -log-dir "$BIN" "$@" 2>&1 | tee -a "$OUTDIR/scale.log" || status=$?
for log in manager kwok; do
  if [[ -f $BIN/$log.log ]]; then xz -c "$BIN/$log.log" >"$OUTDIR/$log.log.xz" 2>/dev/null || true; fi
done
# API server CPU profiles of -profile-apiserver, if any.
cp "$BIN"/apiserver-*.pprof "$OUTDIR/" 2>/dev/null || true
rm -rf "$BIN"
exit "$status"
