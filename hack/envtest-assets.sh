#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# envtest-assets.sh builds, once, the control-plane binaries that envtest, the
# e2e tests and `make demo` run: kube-apiserver and kubectl from k8s.io/kubernetes
# and etcd from go.etcd.io/etcd/server/v3. Nothing is downloaded at run time except
# Go modules through the module proxy.
#
# It prints the directory that holds the binaries (the value for KUBEBUILDER_ASSETS)
# on stdout and everything else on stderr. A second call finds the cache and returns
# at once.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/assets.sh"

CACHE=${KQUANT_ASSETS_DIR:-$ASSETS_CACHE_ROOT/assets/${KUBE_VERSION}}
STAMP=$(assets_stamp kube etcd)
BINARIES=(kube-apiserver kubectl etcd)

assets_reuse "$CACHE" "$STAMP" "" "${BINARIES[@]}"

mkdir -p "$CACHE"
progress_intro "building kube-apiserver and kubectl v${KUBE_VERSION} and etcd v${ETCD_VERSION} from their Go modules" \
  "the control plane that the tests and make demo run; only the first time, then cached in $CACHE" \
  "20 minutes on 2 busy cores (2,800 packages), a third of that on 8"
build_etcd() {
  assets_build etcd "$CACHE" "" "" go.etcd.io/etcd/server/v3
  mv "$CACHE/server" "$CACHE/etcd" # go names a /v3 main package after the element before it
}
build_kube() {
  assets_build kube "$CACHE" "$(kube_version_ldflags)" "" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl
}
# etcd and Kubernetes are separate modules, so separate builds: side by side
# where the cores allow (progress_parallel_ok), one after the other otherwise.
if progress_parallel_ok; then
  build_etcd &
  etcd_pid=$!
  build_kube
  wait "$etcd_pid"
else
  build_etcd
  build_kube
fi

assets_done "$CACHE" "$STAMP" assets
