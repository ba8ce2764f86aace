#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# cluster-e2e.sh: `make cluster-e2e`. Brings up the local cluster from nothing,
# installs the chart, runs the real-cluster tests (test/cluster, build tag
# cluster) and takes the cluster down again, whatever happened. It prints the
# wall time of each phase at the end.
#
# KQUANT_CLUSTER_KEEP=1 leaves the cluster up after the tests, for a look.
# KQUANT_CLUSTER_RUN=<regexp> runs only the scenarios (subtests of
# TestCluster) whose names match, for example KQUANT_CLUSTER_RUN=MIG.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

phases=()
phase() { # name command...
  local name=$1 t0=$SECONDS
  shift
  printf '\033[1m=== cluster-e2e: %s\033[0m\n' "$name"
  "$@"
  phases+=("$(printf '%-28s %4ss' "$name" "$((SECONDS - t0))")")
}
report() {
  local rc=$?
  if [[ $rc != 0 && -d .cluster/logs ]]; then
    echo "cluster-e2e: failed (exit $rc); last lines of the component logs:"
    tail -n 15 .cluster/logs/*.log || true
  fi
  if [[ ${KQUANT_CLUSTER_KEEP:-} != 1 ]]; then
    hack/cluster.sh down >/dev/null || true
  fi
  echo "cluster-e2e phases:"
  printf '  %s\n' "${phases[@]}"
  exit "$rc"
}
trap report EXIT

hack/cluster.sh down >/dev/null 2>&1 || true
phase "binaries (cold or cached)" bash -c 'hack/envtest-assets.sh >/dev/null && hack/cluster-assets.sh >/dev/null && hack/kueue-assets.sh >/dev/null && hack/prometheus-assets.sh >/dev/null && make --no-print-directory helm >/dev/null'
phase "images" make --no-print-directory images IMG_REGISTRY=kquant.local IMG_TAG=dev
phase "cluster up" hack/cluster.sh up
phase "helm install to Ready" hack/cluster.sh install
run=()
[[ -n ${KQUANT_CLUSTER_RUN:-} ]] && run=(-run "TestCluster/${KQUANT_CLUSTER_RUN}")
phase "tests" go test -tags cluster -count=1 -v -timeout 30m "${run[@]}" ./test/cluster/...
