#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# cluster-assets.sh builds, once, the node and control-plane binaries of the
# local cluster (`make cluster`) that envtest does not need: kubelet,
# kube-controller-manager, kube-scheduler and kube-proxy from k8s.io/kubernetes
# (the module that builds kube-apiserver, so they share one compilation),
# containerd, its runc shim and ctr from containerd's Go module, and crictl
# from cri-tools. runc and the CNI plugins come from Debian's packages
# (hack/cluster.sh installs them).
#
# It prints the directory that holds the binaries on stdout and everything else
# on stderr. A second call finds the cache and returns at once. With --cached it
# never builds: it prints the directory when the binaries are there, and fails
# otherwise (for cluster-down, which has nothing to stop then).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/assets.sh"

CACHE=${KQUANT_CLUSTER_ASSETS_DIR:-$ASSETS_CACHE_ROOT/cluster/${KUBE_VERSION}}
STAMP=$(assets_stamp kube containerd crictl)
BINARIES=(kubelet kube-controller-manager kube-scheduler kube-proxy containerd containerd-shim-runc-v2 ctr crictl)

assets_reuse "$CACHE" "$STAMP" "${1:-}" "${BINARIES[@]}"

mkdir -p "$CACHE"
progress_intro "building kubelet, kube-controller-manager, kube-scheduler, kube-proxy v${KUBE_VERSION}, containerd v${CONTAINERD_VERSION} and crictl v${CRICTL_VERSION} from their Go modules" \
  "the local cluster's node and control plane; only the first time, then cached in $CACHE" \
  "15 minutes on 2 busy cores after hack/envtest-assets.sh (it compiled most of Kubernetes already)"
build_kube() {
  assets_build kube "$CACHE" "$(kube_version_ldflags)" "" \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy
}
build_runtime() {
  # The storage drivers left out need C headers and kernel features the cluster
  # never uses; overlayfs is the snapshotter.
  local ctrd_ldflags="-X github.com/containerd/containerd/v2/version.Version=v${CONTAINERD_VERSION}"
  assets_build containerd "$CACHE" "$ctrd_ldflags" "no_btrfs no_devmapper no_zfs" \
    github.com/containerd/containerd/v2/cmd/containerd \
    github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
    github.com/containerd/containerd/v2/cmd/ctr
  assets_build crictl "$CACHE" "-X sigs.k8s.io/cri-tools/pkg/version.Version=v${CRICTL_VERSION}" "" \
    sigs.k8s.io/cri-tools/cmd/crictl
}
# Three modules, so three builds: the container runtime's beside Kubernetes'
# where the cores allow (progress_parallel_ok), one after the other otherwise.
if progress_parallel_ok; then
  build_runtime &
  runtime_pid=$!
  build_kube
  wait "$runtime_pid"
else
  build_kube
  build_runtime
fi

assets_done "$CACHE" "$STAMP" "cluster assets"
