# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# shellcheck shell=bash
# cluster-node.sh: the node of hack/cluster.sh, sourced by it (never run):
# containerd, the kubelet, kube-proxy, the test device plugin and the test DRA
# driver. It uses the settings and helpers cluster.sh defines before sourcing
# it (STATE, RUN, NODE, GPUS, start, wait_for, kubectl, ...).
# shellcheck disable=SC2154 # the settings are cluster.sh's

containerd_config() {
  local RESTRICT_OOM=false
  if ! (echo -1 >/proc/self/oom_score_adj) 2>/dev/null; then
    RESTRICT_OOM=true
    info "this machine cannot lower OOM scores (no CAP_SYS_RESOURCE): containerd clamps them"
  fi
  mkdir -p "$STATE/containerd/root" "$STATE/containerd/certs.d/_default" "$RUN" "$CDI_DIR"
  # Every registry resolves to a closed local port: nothing is pulled from
  # anywhere, and a missing image fails at once with "connection refused".
  cat >"$STATE/containerd/certs.d/_default/hosts.toml" <<EOF
server = "http://127.0.0.1:1"

[host."http://127.0.0.1:1"]
  capabilities = ["pull", "resolve"]
EOF
  cat >"$STATE/containerd/config.toml" <<EOF
version = 3
root = "$STATE/containerd/root"
state = "$RUN/containerd"

[grpc]
  address = "$CONTAINERD_SOCK"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$PAUSE_IMAGE"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "$STATE/containerd/certs.d"

[plugins.'io.containerd.cri.v1.runtime']
  # The kubelet gives pod sandboxes an OOM score of -998; lowering a score
  # needs CAP_SYS_RESOURCE, which root lacks on these machines (a VM sandbox).
  # Clamp every score to containerd's own (0) instead, as rootless setups do.
  restrict_oom_score_adj = $RESTRICT_OOM
  # Network namespaces under the state dir, so that cluster-down finds them.
  netns_mounts_under_state_dir = true
  # The test DRA driver's CDI specs (containerd's default is on; the
  # directory is the cluster's own, so that down removes it).
  enable_cdi = true
  cdi_spec_dirs = ["$CDI_DIR"]
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = "$(command -v runc)"
      SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$STATE/cni/net.d"
EOF
}

# start_containerd starts containerd (again) and waits for it to serve.
start_containerd() {
  containerd_config
  # The shim is found through PATH, next to containerd.
  start containerd env PATH="$NODE_ASSETS:$PATH" "$NODE_ASSETS/containerd" --config "$STATE/containerd/config.toml"
  wait_for containerd "$NODE_ASSETS/ctr" --address "$CONTAINERD_SOCK" version
}

node_runtime() {
  step "containerd"
  start_containerd
  import_image "$ROOT/bin/images/pause.tar"
}

# import_image archive: into the k8s.io namespace, where the CRI plugin looks.
import_image() {
  "$NODE_ASSETS/ctr" --address "$CONTAINERD_SOCK" -n k8s.io images import --no-unpack=false "$1" >/dev/null
  info "imported $(basename "$1")"
}

kubelet_config() {
  cat >"$STATE/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine's cgroups are v1 (hybrid); Kubernetes 1.35+ refuses v1 unless
# told otherwise. cgroupfs, since no systemd manages this machine's cgroups.
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
tlsCertFile: $STATE/pki/kubelet-serving.crt
tlsPrivateKeyFile: $STATE/pki/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $STATE/pki/ca.crt}
authorization:
  mode: Webhook
clusterDomain: cluster.local
resolvConf: $STATE/resolv.conf
# Containers' logs with the rest of the cluster's state, so that down removes them.
podLogsDir: $STATE/pod-logs
podCIDR: $POD_SUBNET
serializeImagePulls: false
# A shared development machine: evict only when it is really out of room.
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  imagefs.available: 1%
  nodefs.inodesFree: 1%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
}

# start_kubelet starts the kubelet (again).
start_kubelet() {
  kubelet_config
  start kubelet "$NODE_ASSETS/kubelet" --config "$STATE/kubelet.yaml" \
    --kubeconfig "$STATE/kubelet.kubeconfig" --hostname-override "$NODE" --node-ip "$NODE_IP" \
    --root-dir "$KUBELET_ROOT"
}

node_components() {
  step "kubelet, kube-proxy, the test device plugin and the test DRA driver"
  start_kubelet
  cat >"$STATE/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: $STATE/kube-proxy.kubeconfig
hostnameOverride: $NODE
bindAddress: $NODE_IP
clusterCIDR: $POD_SUBNET
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: ["$NODE_IP/32"]
# Leave the machine's conntrack sysctls alone.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
  start kube-proxy "$NODE_ASSETS/kube-proxy" --config "$STATE/kube-proxy.yaml"
  wait_for "node $NODE to register" kubectl get node "$NODE"
  # One go build: the two share their compilation.
  (cd "$ROOT" && progress_go_build "test device plugin and DRA driver" -o "$STATE/bin/" -- \
    ./test/deviceplugin/cmd/kquant-test-deviceplugin ./test/dradriver/cmd/kquant-test-dradriver)
  start deviceplugin "$STATE/bin/kquant-test-deviceplugin" --simulate "$GPUS" --node-name "$NODE" \
    --kubeconfig "$STATE/kubeconfig" --device-plugin-dir "$KUBELET_ROOT/device-plugins/"
  start dradriver "$STATE/bin/kquant-test-dradriver" --simulate "$GPUS" --node-name "$NODE" \
    --kubeconfig "$STATE/kubeconfig" --kubelet-dir "$KUBELET_ROOT" --cdi-dir "$CDI_DIR"
  wait_for "node $NODE Ready" kubectl wait --for=condition=Ready "node/$NODE" --timeout=5s
  # Whole GPUs: the counts of the groups that are not /mig.
  local want=0 group
  for group in ${GPUS//,/ }; do
    [[ $group == */mig* ]] || want=$((want + ${group##*:}))
  done
  wait_for "$want nvidia.com/gpu allocatable on $NODE" \
    bash -c "[[ \$('$ASSETS/kubectl' --kubeconfig '$STATE/kubeconfig' get node $NODE -o jsonpath='{.status.allocatable.nvidia\\.com/gpu}') == $want ]]"
  wait_for "$want devices in the DRA driver's ResourceSlice" \
    bash -c "[[ \$('$ASSETS/kubectl' --kubeconfig '$STATE/kubeconfig' get resourceslices --field-selector spec.nodeName=$NODE -o jsonpath='{.items[*].spec.devices[*].name}' | wc -w) == $want ]]"
}
