# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# shellcheck shell=bash
# cluster-kueue.sh: Kueue beside the cluster of hack/cluster.sh, sourced by it
# (never run). It uses the settings and helpers cluster.sh defines before
# sourcing it (STATE, NODE_IP, KUEUE_PORT, KUEUE_ETC, start, wait_for, ...).
# shellcheck disable=SC2154 # the settings are cluster.sh's

# kueue_webhooks prints the Kueue release's webhook configurations, changed
# for a webhook server that runs on the node: the API server calls it by URL
# at the node's address (not through a Service) and trusts the cluster CA
# that signed its certificate (hack/democerts, kueue-webhook). Like Kueue's
# own install, they skip kube-system and kueue-system.
kueue_webhooks() {
  awk -v url="https://$NODE_IP:$KUEUE_PORT" -v ca="$(base64 -w0 <"$STATE/pki/ca.crt")" '
    /^  name: (mutating|validating)-webhook-configuration$/ { sub(/name: /, "name: kueue-"); print; next }
    /^    service:$/ { svc = 1; next }
    svc && /^      (name|namespace):/ { next }
    svc && /^      path:/ { print "    url: " url $2; print "    caBundle: " ca; svc = 0; next }
    /^  failurePolicy:/ {
      print
      print "  namespaceSelector:"
      print "    matchExpressions:"
      print "    - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, kueue-system]}"
      next
    }
    { print }
  ' "$KUEUE_ASSETS/webhooks.yaml"
}

# kueue runs Kueue's controller manager on the node, as the device plugin
# runs, with the CRDs and webhooks of its release, the pod integration (and batch/job, below),
# and the ClusterQueue and ResourceFlavor of config/samples/kueue.
kueue() {
  step "Kueue $(basename "$KUEUE_ASSETS") (pod integration)"
  local dir=$STATE/kueue
  mkdir -p "$dir/certs"
  cp "$STATE/pki/kueue-webhook.crt" "$dir/certs/tls.crt"
  cp "$STATE/pki/kueue-webhook.key" "$dir/certs/tls.key"
  # Without its own certificate management Kueue reads the metrics server's
  # certificate from a fixed path, /etc/kueue/metrics/certs: a link into the
  # state directory (the same certificate: metrics serve the node's address
  # too), which down removes.
  if [[ -e $KUEUE_ETC && ! -L $KUEUE_ETC ]]; then
    die "$KUEUE_ETC exists and is not this cluster's; refusing to replace it"
  fi
  mkdir -p "$dir/etc/metrics"
  ln -sfn "$dir/certs" "$dir/etc/metrics/certs"
  ln -sfn "$dir/etc" "$KUEUE_ETC"
  kubectl apply --server-side --field-manager=kquant-cluster -f "$KUEUE_ASSETS/crds" >/dev/null
  kubectl wait --for condition=established --timeout="${TIMEOUT}s" -f "$KUEUE_ASSETS/crds" >/dev/null
  kubectl create namespace kueue-system --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kueue_webhooks | kubectl apply --server-side --field-manager=kquant-cluster -f - >/dev/null
  # Leader election off (one replica), Kueue's own certificate management off
  # (the certificates above), on-demand visibility off (it needs an
  # APIService), every port on the node's address.
  cat >"$dir/config.yaml" <<EOF
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: $NODE_IP:8081
metrics:
  bindAddress: $NODE_IP:8443
webhook:
  host: $NODE_IP
  port: $KUEUE_PORT
  certDir: $dir/certs
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
# batch/job too, though no test queues a Job: the release's webhook
# configurations send every Job (the chart's Helm hook Jobs among them) to
# Kueue's Job webhook, which panics when its integration is off (a nil queue
# manager) and so refused the uninstall hook. Jobs without a queue-name label
# are left alone.
integrations:
  frameworks: [pod, batch/job]
EOF
  start kueue env KUBECONFIG="$STATE/kubeconfig" "$KUEUE_ASSETS/kueue" \
    --config "$dir/config.yaml" --feature-gates VisibilityOnDemand=false
  # The ClusterQueue passes through Kueue's webhooks: applied, Kueue serves.
  wait_for "Kueue's webhooks" kubectl apply -f "$ROOT/config/samples/kueue/clusterqueue.yaml"
}
