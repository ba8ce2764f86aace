#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# device-run.sh runs the scale harness from a bundle made by bundle.sh, on a
# machine without the Go toolchain. Run it from anywhere inside a copy of the
# repository (the harness reads config/crd/bases from it).
#
#   test/scale/device-run.sh BUNDLE OUTDIR                      # issue 38's two sizes
#   test/scale/device-run.sh BUNDLE OUTDIR [harness flags...]   # one run of your own
#
# Without flags it runs, one after the other, the two sizes of
# docs/benchmarks.md's run-pod tables, each in run-pod mode (DevicePlugin,
# KWOK's kubelets) with the manager's memory limit the chart would give it:
#   k1000: 1,000 nodes x 8 GPUs, one EachGPU job (8,000 runs) and a burst
#          of 10,000 one-run AnyGPU jobs, --memory-limit=512Mi (the chart's
#          default);
#   k5000: 5,000 nodes x 8 GPUs, one EachGPU job (40,000 runs),
#          --memory-limit=1Gi (values.yaml's advice for that size).
# Each is cut off in time (K1000_SECONDS, K5000_SECONDS: 190 and 330 by
# default) so that both fit a 10-minute call on 16 cores; a scenario that
# finished before the cut has its row logged already.
#
# OUTDIR/NAME receives scale.log (the harness's output, the table at its end),
# manager.log.xz, kwok.log.xz and manager-heap-SCENARIO.pprof (the manager's
# heap after each scenario); OUTDIR/tables.md gathers every size's table rows.
# Harness flags: -nodes, -gpus, -jobs, -scenarios eachgpu,anygpu,
# -gpu-allocation None|DevicePlugin|DRA, -runpod-workers, -manager-args "...",
# -pool-workers, -create-workers, -scenario-timeout, -profile-apiserver
# (NAME/apiserver-SCENARIO.pprof).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUNDLE=$(cd "$1" && pwd)
OUTDIR=$2
shift 2
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
BIN=$(mktemp -d /tmp/kquant-scale.XXXXXX)
trap 'rm -rf "$BIN"' EXIT
# shellcheck source=../../hack/lib/assets.sh
source "$ROOT/hack/lib/assets.sh"
assets_untar_xz "$BUNDLE/scale.tar.xz" "$BIN"
HEADER="bundle of commit $(cat "$BUNDLE/commit" 2>/dev/null || echo unknown); $(nproc) CPUs; $(uname -r)"

# stop_children kills what still runs from the bundle's binaries.
stop_children() {
  local exe pid
  for exe in /proc/[0-9]*/exe; do
    pid=${exe#/proc/}
    pid=${pid%/exe}
    if [[ $(readlink "$exe" 2>/dev/null) == "$BIN"/* ]]; then kill -9 "$pid" 2>/dev/null || true; fi
  done
}

# run NAME SECONDS [harness flags...] runs the harness once into OUTDIR/NAME,
# stopped after SECONDS (0: no limit).
run() {
  local name=$1 seconds=$2 out=$OUTDIR/$1 logs status=0
  shift 2
  mkdir -p "$out"
  logs=$(mktemp -d "$BIN/logs.XXXXXX")
  echo "$HEADER; $name: $*" | tee "$out/scale.log"
  local limit=()
  if ((seconds > 0)); then limit=(timeout -k 10 "$seconds"); fi
  (cd "$ROOT/test/scale" && KQUANT_REPO_ROOT=$ROOT KUBEBUILDER_ASSETS=$BIN "${limit[@]}" "$BIN/scale.test" \
    -test.run '^TestScale$' -test.v -test.timeout 60m \
    -manager-bin "$BIN/manager" -kwok-bin "$BIN/kwok" -log-dir "$logs" "$@") 2>&1 | tee -a "$out/scale.log" || status=$?
  # A harness stopped by the cut leaves its children (the manager, KWOK,
  # the API server, etcd) running: stop them before the next size.
  stop_children
  for log in manager kwok; do
    if [[ -f $logs/$log.log ]]; then xz -c "$logs/$log.log" >"$out/$log.log.xz" 2>/dev/null || true; fi
  done
  cp "$logs"/*.pprof "$out/" 2>/dev/null || true
  rm -rf "$logs"
  echo "$name: exit status $status" | tee -a "$out/scale.log"
  # The table's rows, and the per-scenario lines that explain them.
  {
    echo "## $name: $*"
    echo
    if grep -q '^| scenario' "$out/scale.log"; then
      grep -E '^\| ' "$out/scale.log"
    else
      # Cut off before the table: the rows each finished scenario logged.
      echo "(cut off; the rows of the scenarios that finished, columns as in docs/benchmarks.md)"
      grep -E ': (eachgpu|anygpu): \| ' "$out/scale.log" | sed -E 's/^.*: (eachgpu|anygpu): //' || echo "(no finished scenario)"
    fi
    echo
    grep -E ': (API writes per run|API requests answered with an error|controllers \(per run\)|CPU beside the manager)' "$out/scale.log" | sed 's/^ *scale_test.go:[0-9]*: /- /' || true
    echo
  } >>"$OUTDIR/tables.md"
  return "$status"
}

echo "$HEADER" >"$OUTDIR/tables.md"
status=0
if (($# == 0)); then
  run k1000 "${K1000_SECONDS:-190}" -nodes 1000 -gpus 8 -jobs 10000 -scenarios eachgpu,anygpu \
    -gpu-allocation DevicePlugin -scenario-timeout 150s -manager-args --memory-limit=512Mi || status=$?
  run k5000 "${K5000_SECONDS:-330}" -nodes 5000 -gpus 8 -scenarios eachgpu \
    -gpu-allocation DevicePlugin -scenario-timeout 280s -manager-args --memory-limit=1Gi || status=$?
else
  run custom 0 "$@" || status=$?
fi
cat "$OUTDIR/tables.md"
exit "$status"
