#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# device-runpod.sh runs the agent binary in run mode (what a run pod starts:
# `agent run --run=<ns>/<name>`) on a real GPU, against a kube-apiserver and
# etcd started there by envtest, with no kubelet and no Go on that machine:
# test/runpod's gpu-tagged tests create QuantRuns bound to GPU 0 and start the
# agent for each, as a run pod would (bit-exact on the CUDA backend with
# status.allocatedGPU, GPUInUse beside another process, SIGTERM as RunPodLost).
#
# Here (with Go):   hack/device-runpod.sh bundle [DIR]      (default .gpubin-runpod)
#   builds the agent, the test binary, kube-apiserver and etcd, stripped and
#   xz-compressed to fit the device tool's 64 MiB; the tree (config/crd/bases,
#   this script) travels as usual.
# There (GPU, CUDA driver, one GPU visible or NVIDIA_VISIBLE_DEVICES/CUDA_VISIBLE_DEVICES
# set to one, as a kubelet would):
#                   hack/device-runpod.sh run DIR OUT
#   OUT receives runpod.log (the tests' output, each run's status as JSON and
#   the agent's log tail).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=lib/assets.sh
source hack/lib/assets.sh

bundle() {
  local dir=${1:-$ROOT/.gpubin-runpod}
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  CGO_ENABLED=1 go build -trimpath -ldflags='-s -w' -o "$tmp/agent" ./cmd/agent
  CGO_ENABLED=1 go test -c -tags gpu -trimpath -ldflags='-s -w' -o "$tmp/runpod.test" ./test/runpod
  assets_xz "$tmp" "$dir" agent runpod.test
  assets_pack_control_plane "$dir"
  bundle_stamp "$dir"
  ls -l "$dir" >&2
  du -sh "$dir" >&2
}

run() {
  local dir out bin
  dir=$(cd "$1" && pwd)
  mkdir -p "$2"
  out=$(cd "$2" && pwd)
  bin=$(mktemp -d /tmp/kquant-runpod.XXXXXX)
  for b in agent runpod.test kube-apiserver etcd; do assets_unxz "$dir/$b.xz" "$bin/$b"; done
  bundle_log_start "$dir" "$out/runpod.log"
  local status=0
  (cd "$ROOT/test/runpod" && KQUANT_REPO_ROOT=$ROOT KUBEBUILDER_ASSETS=$bin KQUANT_AGENT_BIN=$bin/agent \
    "$bin/runpod.test" -test.v -test.count=1 -test.timeout=9m) 2>&1 | tee -a "$out/runpod.log" || status=$?
  rm -rf "$bin"
  return "$status"
}

case ${1:-} in
bundle) shift; bundle "$@" ;;
run) shift; run "$@" ;;
*) echo "usage: $0 bundle [DIR] | run DIR OUT" >&2; exit 2 ;;
esac
