#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# prometheus-assets.sh fetches, once, the Prometheus server of Debian's
# `prometheus` package for the real-cluster tests (test/cluster scrapes the
# manager and the agent with it and evaluates the chart's alerts), and caches
# its binaries outside the repository, in ~/.cache/kquant/prometheus/<version>.
#
# Debian's package rather than a build from Prometheus' Go module: it is one
# 19 MB download against a build of cmd/prometheus, whose service-discovery
# dependencies (AWS, Azure, GCP, Kubernetes...) take many minutes on a small
# machine. The package is unpacked (dpkg-deb -x), not installed: an
# installation would add a prometheus user and start a system service on port
# 9090, and pull in the web UI's JavaScript packages; the tests need only the
# two binaries, which Debian links against glibc alone.
#
# It prints the directory (prometheus, promtool) on stdout and everything else
# on stderr. A second call finds the cache and returns at once. With --cached
# it never downloads: it prints the directory when it is complete, and fails
# otherwise.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/assets.sh"

CACHE_ROOT=${KQUANT_PROMETHEUS_ASSETS_DIR:-$ASSETS_CACHE_ROOT/prometheus}

# A cached version, if any (the last in glob order): --cached and the
# offline case.
cached() {
  local dir found=""
  for dir in "$CACHE_ROOT"/*; do
    [[ -x $dir/prometheus && -x $dir/promtool ]] && found=$dir
  done
  [[ -n $found ]] && echo "$found"
}

candidate() { apt-cache policy prometheus 2>/dev/null | awk '$1 == "Candidate:" && $2 != "(none)" {print $2}'; }

if [[ ${1:-} == --cached ]]; then
  cached
  exit
fi

command -v apt-get >/dev/null || { cached || { assets_log "no apt-get and nothing cached in $CACHE_ROOT"; exit 1; }; exit 0; }
version=$(candidate)
if [[ -z $version ]]; then
  apt-get update -qq >/dev/null
  version=$(candidate)
fi
[[ -n $version ]] || { assets_log "Debian has no prometheus package here"; exit 1; }
CACHE=$CACHE_ROOT/$version
if [[ -x $CACHE/prometheus && -x $CACHE/promtool ]]; then
  echo "$CACHE"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
assets_log "fetching Debian's prometheus $version (one time)"
# apt-get download writes to the current directory, as the _apt user where it
# can: a directory it may write to.
chmod 0777 "$tmp"
if ! (cd "$tmp" && apt-get download -qq "prometheus=$version" >/dev/null 2>&1); then
  apt-get update -qq >/dev/null
  (cd "$tmp" && apt-get download -qq "prometheus=$version" >/dev/null)
fi
dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/root"
mkdir -p "$CACHE"
cp "$tmp/root/usr/bin/prometheus" "$tmp/root/usr/bin/promtool" "$CACHE/"
"$CACHE/prometheus" --version 2>&1 | head -1 >&2
assets_log "prometheus $version ready in $CACHE"
echo "$CACHE"
