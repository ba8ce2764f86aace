#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# demo.sh: `make demo` and `make demo-down`.
#
#   hack/demo.sh up     builds the binaries, starts etcd and kube-apiserver (the
#                       envtest binaries from hack/envtest-assets.sh), installs the
#                       CRDs from charts/kquant/crds, starts the manager and the
#                       agents (the real GPU when a CUDA driver is present, else two
#                       simulated nodes), applies recipes/ and a sample job, waits
#                       for it and prints the results.
#   hack/demo.sh down   stops everything `up` started and removes .demo/.
#
# Everything lives in .demo/: certificates, kubeconfig, logs, pids, etcd data.
# `up` is idempotent: processes that still run are reused.
#
# Environment: KQUANT_DEMO_SIMULATE=1 simulates nodes even on a GPU machine;
# KQUANT_DEMO_JOB=<file> runs another job manifest; KQUANT_DEMO_TIMEOUT (seconds,
# default 150) bounds the wait for the job. KQUANT_DEMO_RBAC=1 runs the manager and
# the agents as their service accounts (node-bound tokens for agents) with the
# generated RBAC and the agents' admission policy instead of as administrator.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEMO=$ROOT/.demo
NS=kquant-system
JOB_FILE=${KQUANT_DEMO_JOB:-$ROOT/config/samples/validation-quantize.yaml}
TIMEOUT=${KQUANT_DEMO_TIMEOUT:-150}
PROCS_DIR=$DEMO
PROCS_NAME=demo
source "$ROOT/hack/lib/procs.sh"
source "$ROOT/hack/lib/progress.sh"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pick_ports writes .demo/ports once: free local ports for every listener.
pick_ports() {
  [[ -f $DEMO/ports ]] && return
  local names=(ETCD_PORT ETCD_PEER_PORT API_PORT MANAGER_METRICS_PORT MANAGER_HEALTH_PORT AGENT1_METRICS_PORT AGENT1_HEALTH_PORT AGENT2_METRICS_PORT AGENT2_HEALTH_PORT)
  local used=" " n p
  for n in "${names[@]}"; do
    while :; do
      p=$((20000 + RANDOM % 40000))
      [[ $used == *" $p "* ]] && continue
      port_free "$p" && break
    done
    used+="$p "
    echo "$n=$p" >>"$DEMO/ports.tmp"
  done
  mv "$DEMO/ports.tmp" "$DEMO/ports"
}

# certs: a CA, the API server's serving certificate, the service-account signing
# key pair and an administrator's client certificate (group system:masters).
certs() {
  local d=$DEMO/pki
  [[ -f $d/admin.crt ]] && return
  mkdir -p "$d"
  if command -v openssl >/dev/null; then
    (
      cd "$d"
      key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
      key ca.key
      openssl req -x509 -new -key ca.key -subj "/CN=kquant-demo-ca" -days 365 -out ca.crt
      sign() { # name subject extensions
        key "$1.key"
        openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
        printf '%s\n' "$3" >"$1.ext"
        openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
        rm -f "$1.csr" "$1.ext"
      }
      sign apiserver "/CN=kube-apiserver" "$(printf '%s\n' \
        "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc" \
        "extendedKeyUsage=serverAuth" "keyUsage=critical,digitalSignature,keyEncipherment")"
      sign admin "/O=system:masters/CN=kquant-demo-admin" "$(printf '%s\n' \
        "extendedKeyUsage=clientAuth" "keyUsage=critical,digitalSignature,keyEncipherment")"
      key sa.key
      openssl pkey -in sa.key -pubout -out sa.pub 2>/dev/null
    )
  else
    (cd "$ROOT" && go run ./hack/democerts -dir "$d")
  fi
}

# write_kubeconfig file user-name user-fields...: a kubeconfig for the demo's
# API server; each user field is one "key: value" line of the user's credentials.
write_kubeconfig() {
  local out=$1 user=$2 field
  shift 2
  {
    cat <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: kquant-demo
  cluster:
    server: https://127.0.0.1:${API_PORT}
    certificate-authority-data: $(base64 -w0 <"$DEMO/pki/ca.crt")
users:
- name: $user
  user:
KUBECONFIG
    for field in "$@"; do echo "    $field"; done
    cat <<KUBECONFIG
contexts:
- name: kquant-demo
  context: {cluster: kquant-demo, user: $user}
current-context: kquant-demo
KUBECONFIG
  } >"$out"
  chmod 600 "$out"
}

kubeconfig() {
  write_kubeconfig "$DEMO/kubeconfig" kquant-demo-admin \
    "client-certificate-data: $(base64 -w0 <"$DEMO/pki/admin.crt")" \
    "client-key-data: $(base64 -w0 <"$DEMO/pki/admin.key")"
}

# least_privilege installs the service accounts, the RBAC generated from the
# kubebuilder markers and the agents' admission policy, as the chart does.
least_privilege() {
  local role files=()
  for role in manager agent; do
    files+=(-f "$ROOT/config/rbac/${role}_role.yaml" -f "$ROOT/config/rbac/${role}_service_account.yaml" -f "$ROOT/config/rbac/${role}_role_binding.yaml")
  done
  k apply --server-side --field-manager=kquant-demo "${files[@]}" -f "$ROOT/config/policy/agent-node-restriction.yaml" | sed 's/^/    /'
}

# sa_kubeconfig name service-account [node]: a kubeconfig with a token of the
# service account, bound to the Node when one is named (the API server then puts
# the node name in the token, which the admission policy checks).
sa_kubeconfig() {
  local out=$DEMO/kubeconfig-$1 sa=$2 node=${3:-} token
  [[ -f $out ]] && return
  local bound=()
  [[ -n $node ]] && bound=(--bound-object-kind=Node --bound-object-name="$node")
  token=$(k -n "$NS" create token "$sa" --duration=48h "${bound[@]}")
  write_kubeconfig "$out" "$sa" "token: $token"
}

k() { "$KUBECTL" --kubeconfig "$DEMO/kubeconfig" --cache-dir "$DEMO/kube-cache" "$@"; }

# wait_for description timeout-seconds command...
wait_for() {
  local what=$1 limit=$2; shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "timed out after ${limit}s waiting for $what"
    sleep 0.5
  done
}

# has_cuda_driver: a driver library, its device node and at least one GPU
# that the loaded kernel driver lists (nvidia-smi -L, or the kernel module's
# /proc entries). A driver library and device node without a GPU, as a
# CUDA toolkit package can leave behind, keeps the simulated nodes.
has_cuda_driver() {
  [[ ${KQUANT_DEMO_SIMULATE:-0} == 1 ]] && return 1
  [[ -e /dev/nvidiactl ]] || return 1
  nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || compgen -G '/proc/driver/nvidia/gpus/*' >/dev/null || return 1
  ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' && return 0
  compgen -G '/usr/lib*/libcuda.so.1' >/dev/null || compgen -G '/usr/lib/*-linux-gnu/libcuda.so.1' >/dev/null
}

node_manifest() { # name
  cat <<NODE
apiVersion: v1
kind: Node
metadata:
  name: $1
  labels:
    kubernetes.io/hostname: $1
    kubernetes.io/os: linux
    nvidia.com/gpu.present: "true"
    kquant.dev/demo: "true"
NODE
}

up() {
  mkdir -p "$DEMO"/{logs,pids}

  step "building bin/manager, bin/agent, bin/kquantctl and the control plane (hack/envtest-assets.sh)"
  # The two builds are independent: side by side where the cores allow, so that
  # one's serial phases (module loading, linking) overlap the other's compiling.
  local assets_out=$DEMO/assets-dir assets_pid=""
  if progress_parallel_ok; then
    "$ROOT/hack/envtest-assets.sh" >"$assets_out" &
    assets_pid=$!
  fi
  if ! make -C "$ROOT" --no-print-directory -s build; then
    compgen -G "$ROOT/cmd/manager/*.go" >/dev/null && compgen -G "$ROOT/cmd/agent/*.go" >/dev/null \
      && die "make build failed"
    info "make build failed: cmd/manager or cmd/agent has no sources yet"
  fi
  for b in manager agent; do
    [[ -x $ROOT/bin/$b ]] || info "bin/$b does not exist yet (cmd/$b not written): the demo stops after the control plane"
  done
  if [[ -n $assets_pid ]]; then
    wait "$assets_pid" || die "hack/envtest-assets.sh failed"
  else
    "$ROOT/hack/envtest-assets.sh" >"$assets_out"
  fi
  ASSETS=$(cat "$assets_out")
  KUBECTL=$ASSETS/kubectl
  info "$ASSETS"

  step "starting etcd and kube-apiserver"
  pick_ports
  # shellcheck disable=SC1091
  source "$DEMO/ports"
  certs
  kubeconfig
  start etcd "$ASSETS/etcd" \
    --name=kquant-demo --data-dir="$DEMO/etcd" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="kquant-demo=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync=true --quota-backend-bytes=$((2 * 1024 * 1024 * 1024))
  start kube-apiserver "$ASSETS/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
    --tls-cert-file="$DEMO/pki/apiserver.crt" --tls-private-key-file="$DEMO/pki/apiserver.key" \
    --client-ca-file="$DEMO/pki/ca.crt" \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$DEMO/pki/sa.pub" --service-account-signing-key-file="$DEMO/pki/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 \
    --authorization-mode=RBAC --allow-privileged=true
  info "waiting for the API server on https://127.0.0.1:$API_PORT"
  wait_for "kube-apiserver (see .demo/logs/kube-apiserver.log)" 90 k get --raw /readyz

  step "installing the CRDs from charts/kquant/crds"
  k apply --server-side --field-manager=kquant-demo -f "$ROOT/charts/kquant/crds" | sed 's/^/    /'
  k wait --for=condition=Established --timeout=60s -f "$ROOT/charts/kquant/crds" >/dev/null
  k get namespace "$NS" >/dev/null 2>&1 || k create namespace "$NS" | sed 's/^/    /'

  local agents=()
  if has_cuda_driver; then
    agents=("demo-gpu::auto")
    info "CUDA driver found: one agent on the real GPUs"
  else
    agents=("demo-h100:H100:8" "demo-b200:B200:8")
    info "no CUDA driver: two simulated nodes, 8x H100 and 8x B200 (reference backend)"
  fi

  if [[ ! -x $ROOT/bin/manager || ! -x $ROOT/bin/agent ]]; then
    step "control plane ready; manager or agent binary missing, stopping here"
    info "export KUBECONFIG=$DEMO/kubeconfig"
    return 0
  fi

  local manager_kc=$DEMO/kubeconfig
  if [[ ${KQUANT_DEMO_RBAC:-0} == 1 ]]; then
    step "least privilege: service accounts, generated RBAC, agents' admission policy"
    least_privilege
    sa_kubeconfig manager kquant-manager
    manager_kc=$DEMO/kubeconfig-manager
  fi

  step "starting the manager and the agents"
  start manager "$ROOT/bin/manager" \
    --kubeconfig="$manager_kc" --leader-elect=false --lease-namespace="$NS" --gpu-allocation=None \
    --metrics-bind-address="127.0.0.1:$MANAGER_METRICS_PORT" --metrics-secure=false --health-probe-bind-address="127.0.0.1:$MANAGER_HEALTH_PORT"
  local i=0 spec node product count ports
  for spec in "${agents[@]}"; do
    i=$((i + 1))
    IFS=: read -r node product count <<<"$spec"
    node_manifest "$node" | k apply --server-side --field-manager=kquant-demo -f - >/dev/null
    local agent_kc=$DEMO/kubeconfig
    if [[ ${KQUANT_DEMO_RBAC:-0} == 1 ]]; then
      sa_kubeconfig "agent-$node" kquant-agent "$node"
      agent_kc=$DEMO/kubeconfig-agent-$node
    fi
    ports=("AGENT${i}_METRICS_PORT" "AGENT${i}_HEALTH_PORT")
    # The demo has no kubelet to give run pods their GPUs: its agents execute
    # runs themselves (gpuAllocation None, as on nodes drained of other GPU work).
    local args=(--kubeconfig="$agent_kc" --node-name="$node" --namespace="$NS" --execution=None
      --metrics-bind-address="127.0.0.1:${!ports[0]}" --health-probe-bind-address="127.0.0.1:${!ports[1]}")
    if [[ -n $product ]]; then
      args+=(--backend=reference --simulate="$product:$count")
    else
      args+=(--backend="$count")
    fi
    start "agent-$node" "$ROOT/bin/agent" "${args[@]}"
  done

  step "waiting for the agents' GPUNodeProfiles"
  for spec in "${agents[@]}"; do
    node=${spec%%:*}
    wait_for "GPUNodeProfile $node (see .demo/logs/agent-$node.log)" 60 \
      k wait --for=condition=Ready --timeout=1s "gpunodeprofile/$node"
    info "$node: $(k get gpunodeprofile "$node" -o jsonpath='{.status.gpuCount}x {.status.gpus[0].product} (compute capability {.status.gpus[0].computeCapability}, {.status.backend} backend)')"
  done

  step "applying recipes/ and $(basename "$JOB_FILE")"
  k apply --server-side --field-manager=kquant-demo -n default -f "$ROOT/recipes/" -f "$JOB_FILE" | sed 's/^/    /'
  local job
  job=$(k create --dry-run=client -o jsonpath='{.metadata.name}' -f "$JOB_FILE")

  step "waiting for QuantJob $job (up to ${TIMEOUT}s)"
  local deadline=$((SECONDS + TIMEOUT)) last="" last_reported="" now phase next_tick=0
  while :; do
    now=$(k get quantjob "$job" -n default -o jsonpath='{.status.phase}:{.status.succeeded}:{.status.total}:{.status.running}:{.status.failed}' 2>/dev/null || true)
    local s t r f
    IFS=: read -r phase s t r f <<<"$now"
    now="phase=${phase:-<none>}, ${s:-0}/${t:-?} succeeded, ${r:-0} running, ${f:-0} failed"
    # A line when the job moves, and one every PROGRESS_TICK seconds while it does not.
    if [[ $now != "$last" ]] || ((SECONDS >= next_tick)); then
      info "$(printf '[%3ss] ' "$((SECONDS - PROCS_START))")$now"
      last=$now
      next_tick=$((SECONDS + PROGRESS_TICK))
    fi
    case $phase in
      Succeeded) break ;;
      Failed | Unschedulable)
        if [[ $now != "$last_reported" ]]; then
          k get quantjob "$job" -n default -o jsonpath='{range .status.conditions[*]}    {.type}={.status} {.reason}: {.message}{"\n"}{end}'
          last_reported=$now
        fi
        [[ $phase == Failed ]] && break
        ;;
    esac
    if ((SECONDS >= deadline)); then
      info "the job is not done after ${TIMEOUT}s; see .demo/logs/ and the tables below"
      break
    fi
    sleep 1
  done

  step "results"
  k get gpn,qr,qj,qrun -A -o wide
  echo
  echo "The demo keeps running. Explore it with:"
  echo "  export KUBECONFIG=$DEMO/kubeconfig"
  echo "  $KUBECTL get kquant -A"
  echo "Logs are in .demo/logs/; stop everything with 'make demo-down'."
  [[ ${phase:-} == Succeeded ]] || exit 1
}

down() {
  [[ -d $DEMO ]] || { echo "demo: nothing to stop"; return 0; }
  local name
  # Agents and manager first, then the API server, then etcd.
  # shellcheck disable=SC2012 # the pid files are named by this script
  for name in $(ls "$DEMO/pids" 2>/dev/null | sed 's/\.pid$//' | sort -r | awk '/^(agent|manager)/{print} !/^(agent|manager)/{rest=rest" "$0} END{print rest}'); do
    stop "$name"
  done
  rm -rf "$DEMO"
  echo "removed .demo/"
}

case ${1:-up} in
  up) up ;;
  down) down ;;
  *) die "usage: $0 up|down" ;;
esac
