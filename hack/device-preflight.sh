#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# device-preflight.sh times `kquant-agent preflight` on a real GPU, as an init
# container would run it (no API server: --offline), phase by phase: the
# agent's log stamps the driver's opening ("Backend ready", seconds since the
# process started), each GPU's context and kernels ("GPU opened", where the
# kernels load: the committed cubins, or a JIT of the PTX on a GPU that has
# none), each recipe ("Recipe checked") and the exit ("Exiting"). It runs three
# times: with the JIT cache disabled (what a fresh pod pays), then twice with
# one fresh cache directory (the second run would skip any JIT), so that a
# JIT shows as the difference.
#
# The agent is built with the tag kquant_nocode and reads the kernels from the
# checkout's kernels/ (KQUANT_PTX_DIR), so that the bundle travels beside the
# checkout within the device tool's limit.
#
# Here (with Go):   hack/device-preflight.sh bundle [DIR]     (default .gpubin-preflight)
# There (GPU):      hack/device-preflight.sh run DIR OUT [RECIPES] [LEVEL]
#   (default nvfp4,mxfp8 and Quick; OUT/preflight.log gets every run's log
#   and wall time)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=lib/assets.sh
source hack/lib/assets.sh
bundle() {
  local dir=${1:-$ROOT/.gpubin-preflight}
  mkdir -p "$dir"
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  CGO_ENABLED=1 go build -tags kquant_nocode -trimpath -ldflags='-s -w' -o "$tmp/agent" ./cmd/agent
  assets_xz "$tmp" "$dir" agent
  bundle_stamp "$dir"
  du -sh "$dir" >&2
}
run() {
  local dir out bin recipes=${3:-nvfp4,mxfp8} level=${4:-Quick}
  dir=$(cd "$1" && pwd)
  mkdir -p "$2"
  out=$(cd "$2" && pwd)
  bin=$(mktemp -d /tmp/kquant-preflight.XXXXXX)
  assets_unxz "$dir/agent.xz" "$bin/agent"
  bundle_log_start "$dir" "$out/preflight.log"
  local cache status=0
  cache=$(mktemp -d /tmp/kquant-cuda-cache.XXXXXX)
  for mode in cold-no-jit-cache fresh-jit-cache warm-jit-cache; do
    local env=(KQUANT_PTX_DIR="$ROOT/kernels" CUDA_CACHE_PATH="$cache")
    [[ $mode == cold-no-jit-cache ]] && env=(KQUANT_PTX_DIR="$ROOT/kernels" CUDA_CACHE_DISABLE=1)
    local t0 t1 rc=0
    t0=$(date +%s.%N)
    env "${env[@]}" "$bin/agent" preflight --offline --recipes="$recipes" --level="$level" \
      --termination-log="$out/termination-$mode.txt" --log-format=text >>"$out/preflight.log" 2>&1 || rc=$?
    t1=$(date +%s.%N)
    printf '%s: exit %d, wall %.3f s\n' "$mode" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" | tee -a "$out/preflight.log"
    [[ $rc == 0 ]] || status=$rc
  done
  grep -E 'Backend ready|GPU opened|Recipe checked|Exiting|: exit' "$out/preflight.log" || true
  rm -rf "$bin" "$cache"
  return "$status"
}
case ${1:-} in
bundle) shift; bundle "$@" ;;
run) shift; run "$@" ;;
*) echo "usage: $0 bundle [DIR] | run DIR OUT [RECIPES] [LEVEL]" >&2; exit 2 ;;
esac
