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

if assets_fresh "$CACHE" "$STAMP" "${BINARIES[@]}"; then
  echo "$CACHE"
  exit 0
fi

mkdir -p "$CACHE"
assets_build etcd "$CACHE" "" "" go.etcd.io/etcd/server/v3
mv "$CACHE/server" "$CACHE/etcd" # go names a /v3 main package after the element before it
assets_build kube "$CACHE" "$(kube_version_ldflags)" "" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl

echo "$STAMP" > "$CACHE/.stamp"
assets_log "assets ready in $CACHE"
echo "$CACHE"
