#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# verify-generated.sh fails when the committed generated files (deepcopy, apply
# configurations, CRDs, RBAC) differ from what controller-gen makes of the current sources. It
# regenerates into the work tree, compares with the files as they were, and puts
# the originals back, so it never leaves the tree modified.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GENERATED=(api/v1alpha1/zz_generated.deepcopy.go api/v1alpha1/applyconfiguration config/crd/bases config/rbac/manager_role.yaml config/rbac/agent_role.yaml)

backup=$(mktemp -d)
trap 'rm -rf "$backup"' EXIT
for p in "${GENERATED[@]}"; do
  [[ -e $p ]] && mkdir -p "$backup/$(dirname "$p")" && cp -a "$p" "$backup/$p"
done

# shellcheck disable=SC2317 # called by the EXIT trap below
restore() {
  for p in "${GENERATED[@]}"; do
    rm -rf "$p"
    [[ -e $backup/$p ]] && cp -a "$backup/$p" "$p"
  done
  return 0
}
trap 'restore; rm -rf "$backup"' EXIT

make --no-print-directory -s generate manifests >/dev/null
stale=0
for p in "${GENERATED[@]}"; do
  [[ ! -e $backup/$p && ! -e $p ]] && continue
  if ! diff -r "$backup/$p" "$p" >/dev/null 2>&1; then
    echo "stale generated file: $p (run 'make generate manifests' and commit the result)" >&2
    diff -ru "$backup/$p" "$p" | head -40 >&2 || true
    stale=1
  fi
done
exit $stale
