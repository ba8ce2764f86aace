#!/usr/bin/env bash
# chart-sync.sh copies what `make manifests` generates into the Helm chart, which
# cannot read files outside its own directory: the CRDs (config/crd/bases ->
# charts/kquant/crds) and the RBAC roles from the kubebuilder markers
# (config/rbac/{manager,agent}_role.yaml -> charts/kquant/files/rbac) and the
# agents' and run pods' admission policies (config/policy -> charts/kquant/files/policy). test/chart
# fails while the copies differ.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHART=$ROOT/charts/kquant

rm -f "$CHART"/crds/*.yaml
cp "$ROOT"/config/crd/bases/*.yaml "$CHART/crds/"
for role in manager agent; do
  src=$ROOT/config/rbac/${role}_role.yaml
  if [[ -f $src ]]; then
    cp "$src" "$CHART/files/rbac/${role}_role.yaml"
  else
    echo "chart-sync: $src not generated yet (no kubebuilder rbac markers); keeping the chart's copy" >&2
  fi
done
mkdir -p "$CHART/files/policy"
cp "$ROOT/config/policy/agent-node-restriction.yaml" "$ROOT/config/policy/run-pod-restriction.yaml" "$CHART/files/policy/"
