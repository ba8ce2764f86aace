#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# cluster.sh: a real single-node Kubernetes cluster on this machine, for trying
# and testing kquant the way users run it (`make cluster`, `make cluster-install`,
# `make cluster-down`, `make cluster-e2e`).
#
#   hack/cluster.sh up        etcd, kube-apiserver, kube-controller-manager,
#                             kube-scheduler, containerd (runc, bridge CNI),
#                             kubelet, kube-proxy, the test device plugin
#                             advertising simulated GPUs and the test DRA
#                             driver publishing the same GPUs; writes
#                             .cluster/kubeconfig and waits for the node Ready.
#                             Kueue (built from its Go module, pod
#                             integration) runs beside them, with the
#                             ClusterQueue of config/samples/kueue.
#   hack/cluster.sh install   imports the images (make images) into containerd
#                             and `helm install`s charts/kquant with
#                             hack/cluster/values.yaml; waits for pods Ready.
#   hack/cluster.sh down      stops everything `up` started, unmounts what it
#                             mounted, removes its network and .cluster/.
#   hack/cluster.sh stop C    stops one component C of the running cluster:
#   hack/cluster.sh start C   kube-apiserver, kubelet or containerd; start
#                             starts it again as `up` did (the fault tests of
#                             test/cluster). The kubelet's and containerd's
#                             containers keep running meanwhile.
#
# Every binary is built from Go modules (hack/envtest-assets.sh,
# hack/cluster-assets.sh); runc and the CNI plugins are Debian's. Nothing is
# pulled: the images are imported into containerd's k8s.io namespace, and the
# runtime's registry configuration sends every pull to a closed local port, so a
# wrong image tag fails here instead of reaching out.
#
# The network stays on this machine: the node's address is the gateway of the
# cluster's own bridge (kquant0, 10.244.0.1/24); pods get addresses on it and a
# route to the Service range only, no default route, and the kernel does not
# forward (net.ipv4.ip_forward stays as it is, 0 here).
#
# Simulated GPUs reach pods two ways, as on a real node with NVIDIA's stack:
# the test device plugin (test/deviceplugin, resource nvidia.com/gpu) and the
# test DRA driver (test/dradriver, driver gpu.kquant.dev, DeviceClass
# gpu.nvidia.com, attribute gpu.nvidia.com/uuid). Both offer the same GPUs, so
# a test uses one way at a time: the kubelet does not know that a GPU given
# through one is taken for the other. DRA is GA (on by default) in 1.36: no
# feature gates; containerd applies the driver's CDI specs from $RUN/cdi.
#
# Environment: KQUANT_CLUSTER_GPUS (default H100:4,A100/mig:1: four whole
# GPUs and one MIG-partitioned A100) is what the device plugin, the DRA driver
# and the agents simulate; KQUANT_CLUSTER_TIMEOUT bounds each wait (seconds).
# The device plugin follows NVIDIA's mixed MIG strategy: whole GPUs as
# nvidia.com/gpu, the MIG devices (3g.40gb, 2g.20gb x2) as
# nvidia.com/mig-<profile>; the DRA driver publishes the whole GPUs only.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=$ROOT/.cluster
RUN=/run/kquant-cluster
KUBELET_ROOT=/var/lib/kubelet
NODE=kquant-node
BRIDGE=kquant0
NODE_IP=10.244.0.1
POD_SUBNET=10.244.0.0/24
SERVICE_RANGE=10.96.0.0/16
GPUS=${KQUANT_CLUSTER_GPUS:-H100:4,A100/mig:1}
TIMEOUT=${KQUANT_CLUSTER_TIMEOUT:-180}
LOST_NODE_TOLERATION=30
CONTAINERD_SOCK=$RUN/containerd.sock
CDI_DIR=$RUN/cdi
KUEUE_PORT=9443
KUEUE_ETC=/etc/kueue
PAUSE_IMAGE=kquant.local/pause:3.10
IMG_REGISTRY=kquant.local
IMG_TAG=${KQUANT_CLUSTER_IMG_TAG:-dev}
RELEASE=kquant
NAMESPACE=kquant-system
PROCS_DIR=$STATE
PROCS_NAME=cluster
source "$ROOT/hack/lib/procs.sh"
source "$ROOT/hack/lib/progress.sh"
source "$ROOT/hack/lib/cluster-node.sh"
source "$ROOT/hack/lib/cluster-kueue.sh"

# wait_for what command... : retries the command every second until it
# succeeds or TIMEOUT passes.
wait_for() {
  local what=$1 deadline=$((SECONDS + TIMEOUT))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "timed out after ${TIMEOUT}s waiting for $what (logs in .cluster/logs/)"
    sleep 1
  done
}

kubectl() { "$ASSETS/kubectl" --kubeconfig "$STATE/kubeconfig" "$@"; }

# kubeconfig file user cert key: a kubeconfig for one component's identity.
kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kquant
  cluster:
    server: https://$NODE_IP:6443
    certificate-authority: $STATE/pki/ca.crt
users:
- name: $2
  user:
    client-certificate: $STATE/pki/$2.crt
    client-key: $STATE/pki/$2.key
contexts:
- name: kquant
  context: {cluster: kquant, user: $2}
current-context: kquant
EOF
}

assets() {
  ASSETS=$("$ROOT/hack/envtest-assets.sh")
  NODE_ASSETS=$("$ROOT/hack/cluster-assets.sh")
  KUEUE_ASSETS=$("$ROOT/hack/kueue-assets.sh")
}

# host_packages installs what comes from Debian: runc, the CNI plugins,
# iptables (kube-proxy) and conntrack.
host_packages() {
  local missing=()
  command -v runc >/dev/null || missing+=(runc)
  [[ -x /usr/lib/cni/bridge ]] || missing+=(containernetworking-plugins)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v conntrack >/dev/null || missing+=(conntrack)
  ((${#missing[@]} == 0)) && return
  step "installing ${missing[*]} from Debian's packages"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

preflight() {
  [[ $(id -u) == 0 ]] || die "the kubelet and containerd need root"
  if pgrep -x kubelet >/dev/null && ! running kubelet; then
    die "a kubelet that is not this cluster's runs here; refusing to share $KUBELET_ROOT with it"
  fi
  if pgrep -x containerd >/dev/null && ! running containerd; then
    die "a containerd that is not this cluster's runs here; refusing to share /run/containerd with it"
  fi
}

network() {
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
    ip addr add "$NODE_IP/24" dev "$BRIDGE"
  fi
  ip link set "$BRIDGE" up
  mkdir -p "$STATE/cni/net.d" "$STATE/cni/ipam"
  # Routes: the Service range only (kube-proxy's rules on the node translate
  # it); no default route, so a pod cannot even try to reach another host.
  cat >"$STATE/cni/net.d/10-kquant.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "kquant",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$STATE/cni/ipam",
        "ranges": [[{"subnet": "$POD_SUBNET", "gateway": "$NODE_IP"}]],
        "routes": [{"dst": "$SERVICE_RANGE"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
  # Pods resolve nothing: this machine's resolver is off limits to them.
  echo "nameserver 127.0.0.1" >"$STATE/resolv.conf"
}

pki() {
  [[ -f $STATE/pki/kubelet.crt ]] && return
  step "certificates"
  (cd "$ROOT" && go run ./hack/democerts -dir "$STATE/pki" -node "$NODE" -node-ip "$NODE_IP")
  local c
  for c in admin kubelet controller-manager scheduler kube-proxy; do
    kubeconfig "$STATE/$c.kubeconfig" "$c"
  done
  cp "$STATE/admin.kubeconfig" "$STATE/kubeconfig"
}

# start_apiserver starts kube-apiserver (again) and waits for it to be ready.
start_apiserver() {
  local pki=$STATE/pki
  # The API server reaches the kubelet (logs, exec) at the node's InternalIP:
  # by hostname it would ask this machine's resolver, off the machine. Pods
  # tolerate a lost node for LOST_NODE_TOLERATION instead of the default 300 s,
  # so that a test of a node lost past its grace period ends in minutes.

  start kube-apiserver "$ASSETS/kube-apiserver" \
    --etcd-servers http://127.0.0.1:2479 \
    --bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port 6443 \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$pki/ca.crt" \
    --kubelet-preferred-address-types InternalIP \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range "$SERVICE_RANGE" \
    --authorization-mode Node,RBAC \
    --enable-admission-plugins NodeRestriction,OwnerReferencesPermissionEnforcement \
    --allow-privileged=true \
    --profiling=false \
    --default-not-ready-toleration-seconds "$LOST_NODE_TOLERATION" \
    --default-unreachable-toleration-seconds "$LOST_NODE_TOLERATION"
  wait_for "kube-apiserver" kubectl get --raw /readyz
}

control_plane() {
  step "etcd and kube-apiserver"
  mkdir -p "$STATE/etcd"
  start etcd "$ASSETS/etcd" --data-dir "$STATE/etcd" \
    --listen-client-urls http://127.0.0.1:2479 --advertise-client-urls http://127.0.0.1:2479 \
    --listen-peer-urls http://127.0.0.1:2480 --initial-advertise-peer-urls http://127.0.0.1:2480 \
    --initial-cluster default=http://127.0.0.1:2480 --unsafe-no-fsync --quota-backend-bytes 4294967296
  start_apiserver

  step "kube-controller-manager and kube-scheduler"
  local pki=$STATE/pki
  start kube-controller-manager "$NODE_ASSETS/kube-controller-manager" \
    --kubeconfig "$STATE/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$STATE/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$STATE/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 10257 \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --use-service-account-credentials \
    --service-cluster-ip-range "$SERVICE_RANGE" \
    --leader-elect=false
  start kube-scheduler "$NODE_ASSETS/kube-scheduler" \
    --kubeconfig "$STATE/scheduler.kubeconfig" \
    --authentication-kubeconfig "$STATE/scheduler.kubeconfig" \
    --authorization-kubeconfig "$STATE/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 10259 --leader-elect=false
}

cluster_up() {
  preflight
  mkdir -p "$STATE/logs" "$STATE/pids" "$STATE/bin"
  step "binaries (built once, cached in ~/.cache/kquant)"
  host_packages
  assets
  [[ -f $ROOT/bin/images/pause.tar ]] || make -C "$ROOT" --no-print-directory images IMG_REGISTRY="$IMG_REGISTRY" IMG_TAG="$IMG_TAG" >/dev/null
  local t0=$SECONDS
  network
  pki
  control_plane
  node_runtime
  node_components
  kueue
  step "cluster up in $((SECONDS - t0))s: export KUBECONFIG=$STATE/kubeconfig"
  kubectl get nodes -o wide
}

cluster_install() {
  assets
  [[ -f $STATE/kubeconfig ]] || die "no cluster: run make cluster first"
  step "images"
  make -C "$ROOT" --no-print-directory images IMG_REGISTRY="$IMG_REGISTRY" IMG_TAG="$IMG_TAG"
  local img
  for img in pause kquant-manager kquant-agent; do import_image "$ROOT/bin/images/$img.tar"; done
  step "helm install $RELEASE charts/kquant"
  make -C "$ROOT" --no-print-directory helm >/dev/null
  local t0=$SECONDS
  "$ROOT/bin/helm" --kubeconfig "$STATE/kubeconfig" upgrade --install "$RELEASE" "$ROOT/charts/kquant" \
    --namespace "$NAMESPACE" --create-namespace \
    -f "$ROOT/hack/cluster/values.yaml" \
    --set "manager.image.repository=$IMG_REGISTRY/kquant-manager,manager.image.tag=$IMG_TAG" \
    --set "agent.image.repository=$IMG_REGISTRY/kquant-agent,agent.image.tag=$IMG_TAG" \
    --set-string agent.simulate="${GPUS//,/\\,}" \
    --set-json "runPods.extraArgs=[\"--simulate=$GPUS\",\"--backend=reference\"]" \
    --wait --timeout "${TIMEOUT}s"
  step "installed, pods Ready in $((SECONDS - t0))s"
  kubectl -n "$NAMESPACE" get pods -o wide
}

# unmount_under dir: every mount at or below dir, deepest first.
unmount_under() {
  local m
  while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done < <(awk -v d="$1" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo | sort -r)
}

cluster_down() {
  step "stopping the cluster"
  # The binaries as built, never a build: without them no cluster ran.
  local node_assets
  node_assets=$("$ROOT/hack/cluster-assets.sh" --cached 2>/dev/null) || node_assets=""
  stop kueue
  stop deviceplugin
  stop dradriver
  stop kubelet
  if [[ -S $CONTAINERD_SOCK && -n $node_assets ]]; then
    # Stopping the pod sandboxes tears their networks down through CNI.
    timeout 60 "$node_assets/crictl" --runtime-endpoint "unix://$CONTAINERD_SOCK" rmp -fa >/dev/null 2>&1 || true
  fi
  stop containerd
  # Shims outlive containerd by design; end this cluster's (they name its socket).
  pkill -KILL -f "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK" 2>/dev/null || true
  pkill -KILL -f "$RUN/containerd" 2>/dev/null || true
  stop kube-proxy
  if [[ -n $node_assets ]]; then
    "$node_assets/kube-proxy" --cleanup >/dev/null 2>&1 || true
  fi
  stop kube-scheduler
  stop kube-controller-manager
  stop kube-apiserver
  stop etcd
  unmount_under "$KUBELET_ROOT"
  unmount_under "$RUN"
  unmount_under "$STATE"
  local ns
  for ns in /run/netns/cni-*; do
    [[ -e $ns ]] || continue
    umount "$ns" 2>/dev/null || true
    rm -f "$ns"
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  # kube-proxy --cleanup leaves the kubelet's own chains (KUBE-FIREWALL and
  # its canaries): drop every rule and chain of Kubernetes' KUBE- prefix.
  local save
  for save in iptables-save ip6tables-save; do
    command -v "$save" >/dev/null || continue
    if "$save" 2>/dev/null | grep -q 'KUBE-'; then
      "$save" | grep -v 'KUBE-' | "${save%-save}-restore" || true
    fi
  done
  # The shims' sockets and runc's state live at fixed paths under
  # /run/containerd; no other containerd runs here (preflight), so they go.
  pgrep -x containerd >/dev/null || rm -rf /run/containerd
  # The kubelet's pod cgroups (cgroupfs driver), deepest first.
  local d
  for d in /sys/fs/cgroup/*/kubepods; do
    if [[ -d $d ]]; then find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
  done
  # The kubelet's links to container logs live at a fixed path; ours point into
  # .cluster/pod-logs, which goes below.
  local link
  for link in /var/log/containers/*.log; do
    [[ -L $link && $(readlink "$link") == "$STATE/pod-logs/"* ]] && rm -f "$link"
  done
  rmdir /var/log/containers 2>/dev/null || true
  # /var/lib/cni: the CNI library's cache of the pods' network results.
  [[ -L $KUEUE_ETC ]] && rm -f "$KUEUE_ETC"
  rm -rf "$KUBELET_ROOT" "$RUN" "$STATE" /var/lib/cni
  info "nothing of the cluster runs or stays mounted"
}

# component_stop name, component_start name: one component of a running
# cluster, for the fault tests. Stopping the kubelet or containerd leaves the
# containers running (their shims are processes of their own), as on a node
# whose kubelet or runtime restarts.
component_stop() {
  [[ -f $STATE/kubeconfig ]] || die "no cluster: run make cluster first"
  case $1 in
    kube-apiserver | kubelet | containerd) stop "$1" ;;
    *) die "stop: one of kube-apiserver, kubelet, containerd" ;;
  esac
}

component_start() {
  [[ -f $STATE/kubeconfig ]] || die "no cluster: run make cluster first"
  ASSETS=$("$ROOT/hack/envtest-assets.sh")
  NODE_ASSETS=$("$ROOT/hack/cluster-assets.sh" --cached)
  case $1 in
    kube-apiserver) start_apiserver ;;
    kubelet) start_kubelet ;;
    containerd) start_containerd ;;
    *) die "start: one of kube-apiserver, kubelet, containerd" ;;
  esac
}

case ${1:-} in
  up) cluster_up ;;
  install) cluster_install ;;
  down) cluster_down ;;
  stop) component_stop "${2:-}" ;;
  start) component_start "${2:-}" ;;
  *) die "usage: hack/cluster.sh up|install|down|stop COMPONENT|start COMPONENT" ;;
esac
