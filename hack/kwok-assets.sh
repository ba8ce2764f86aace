#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# kwok-assets.sh builds, once, KWOK (sigs.k8s.io/kwok), the simulated kubelets
# of the scale harness's run-pod mode (test/scale, -gpu-allocation DevicePlugin),
# from KWOK's Go module (hack/tools/kwok pins the release), into a cache outside
# the repository.
#
# It prints the directory holding the kwok binary on stdout and everything else
# on stderr. A second call finds the cache and returns at once. With --cached
# it never builds: it prints the directory when it is complete, and fails
# otherwise.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/assets.sh"

KWOK_MODULE=sigs.k8s.io/kwok
KWOK_VERSION=$(assets_module_version kwok "$KWOK_MODULE")
CACHE=${KQUANT_KWOK_ASSETS_DIR:-$ASSETS_CACHE_ROOT/kwok/${KWOK_VERSION}}
STAMP=$(assets_stamp kwok)

assets_reuse "$CACHE" "$STAMP" "${1:-}" kwok

mkdir -p "$CACHE"
assets_build kwok "$CACHE" "" "" "${KWOK_MODULE}/cmd/kwok"
assets_done "$CACHE" "$STAMP" "kwok ${KWOK_VERSION}"
