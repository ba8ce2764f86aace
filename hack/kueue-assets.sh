#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# kueue-assets.sh builds, once, Kueue's controller manager for the local
# cluster (`make cluster`) from Kueue's Go module (hack/tools/kueue pins the
# release), and copies that release's CRDs and webhook configurations out of
# the module beside the binary, so that the cluster installs the manifests of
# the very release it runs.
#
# It prints the directory on stdout (kueue, crds/, webhooks.yaml) and
# everything else on stderr. A second call finds the cache and returns at
# once. With --cached it never builds: it prints the directory when it is
# complete, and fails otherwise.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/assets.sh"

KUEUE_MODULE=sigs.k8s.io/kueue
KUEUE_VERSION=$(assets_module_version kueue "$KUEUE_MODULE")
CACHE=${KQUANT_KUEUE_ASSETS_DIR:-$ASSETS_CACHE_ROOT/kueue/${KUEUE_VERSION}}
STAMP=$(assets_stamp kueue)

# A cache made before webhooks.yaml was kept has the same stamp: not reused.
[[ -f $CACHE/webhooks.yaml ]] || rm -f "$CACHE/.stamp"
assets_reuse "$CACHE" "$STAMP" "${1:-}" kueue

mkdir -p "$CACHE"
progress_intro "building Kueue ${KUEUE_VERSION} from its Go module" \
  "the local cluster's job queueing (make cluster); only the first time, then cached in $CACHE" \
  "5 minutes on 2 busy cores after hack/envtest-assets.sh"
assets_build kueue "$CACHE" "-X ${KUEUE_MODULE}/pkg/version.GitVersion=${KUEUE_VERSION}" "" "${KUEUE_MODULE}/cmd/kueue"
src=$(cd "$ASSETS_ROOT/hack/tools/kueue" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' "$KUEUE_MODULE")
rm -rf "$CACHE/crds"
mkdir -p "$CACHE/crds"
cp "$src"/config/components/crd/bases/*.yaml "$CACHE/crds/"
cp "$src/config/components/webhook/manifests.yaml" "$CACHE/webhooks.yaml"
chmod -R u+w "$CACHE/crds" "$CACHE/webhooks.yaml"

assets_done "$CACHE" "$STAMP" "kueue ${KUEUE_VERSION}"
