#!/usr/bin/env bash
# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# images.sh: `make images`. Builds the manager, agent and pause images as OCI
# image-layout archives in bin/images/, without Docker and without a registry:
#
#   bin/images/kquant-manager.tar  $IMG_REGISTRY/kquant-manager:$IMG_TAG  linux/amd64 + linux/arm64
#   bin/images/kquant-agent.tar    $IMG_REGISTRY/kquant-agent:$IMG_TAG    linux/amd64 + linux/arm64
#   bin/images/pause.tar           kquant.local/pause:3.10                 linux/amd64 + linux/arm64
#
# `ctr -n k8s.io images import FILE` and `docker load -i FILE` both read them.
# The image builder (hack/tools/images) takes user, entrypoint, env and the
# binary's path from the Dockerfiles, so these are the images `make
# docker-build` makes. The bases are local stand-ins for the Dockerfiles'
# distroless bases, made from Debian's packages and cached in
# ~/.cache/kquant/images: "static" (passwd and group with nonroot 65532,
# nsswitch.conf, /tmp, CA certificates) for the manager and pause, and "glibc"
# (static plus Debian's libc6: the agent dlopens libcuda and libnvidia-ml,
# which the NVIDIA container toolkit mounts and which need libc, libm, libdl,
# libpthread and librt) for the agent.
#
# The agent uses cgo, so its arm64 binary (GB200 and GH200 nodes are arm64)
# needs Debian's cross compiler, gcc-aarch64-linux-gnu with libc6-dev-arm64-cross;
# its base, "glibc_arm64", carries that same cross libc6, the one the binary
# was linked against. The arm64 agent is then started under qemu-aarch64
# (Debian's qemu-user-static) on that base's libraries, and must reach its "no
# CUDA driver" fallback: dlopen, cgo and the libc of the image all work. Where
# the cross compiler or qemu is missing the agent is amd64 only, or unchecked,
# with a note; under CI (CI set, as .ci/run does) that is an error.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/hack/lib/progress.sh"
cd "$ROOT"

IMG_REGISTRY=${IMG_REGISTRY:-ghcr.io/kquant}
IMG_TAG=${IMG_TAG:-$(git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)}
VERSION=${VERSION:-$IMG_TAG}
PAUSE_REF=kquant.local/pause:3.10
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/kquant/images
OUT=$ROOT/bin/images
BASE_RECIPE=r2
# What the distroless bases set in their image configuration; a docker build
# inherits it, so these images carry it too.
DISTROLESS_CONFIG=(-base-env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt -base-workdir /home/nonroot)
# What cmd/agent logs when libcuda.so.1 cannot be opened (runner.go).
ARM64_FALLBACK="No CUDA driver, running on the reference backend"
LDFLAGS="-s -w -X github.com/kquant/kquant/cmd/internal/version.Version=${VERSION}"

log() { echo "images: $*" >&2; }

# lacking what why: what cannot be built or checked on this machine; an error
# under CI, which must ship and check every platform.
lacking() {
  if [[ -n ${CI:-} ]]; then
    log "$1: $2"
    exit 1
  fi
  log "skipping $1 ($2)"
}

# check_arm64_agent: the arm64 agent, on its base's libc under qemu-aarch64,
# gets as far as opening the CUDA driver and falls back to the reference
# backend. Run mode opens the driver before it reads its kubeconfig, so the
# missing kubeconfig ends it right after; env -i keeps the host's
# LD_LIBRARY_PATH out.
check_arm64_agent() {
  local qemu out
  qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)
  if [[ -z $qemu ]]; then
    lacking "the arm64 agent check" "needs qemu-aarch64: Debian's qemu-user-static"
    return
  fi
  out=$(env -i "$qemu" -L "$(base glibc_arm64)" bin/linux_arm64/agent run --run kquant-check/arm64 \
    --kubeconfig /nonexistent --termination-log "" 2>&1 || true)
  if ! grep -q "$ARM64_FALLBACK" <<<"$out"; then
    log "the arm64 agent did not reach its no-driver fallback (\"$ARM64_FALLBACK\") under $qemu:"
    echo "$out" >&2
    exit 1
  fi
  log "arm64 agent under qemu: $ARM64_FALLBACK"
}

# gobuild goos goarch cgo package output
gobuild() {
  GOOS=$1 GOARCH=$2 CGO_ENABLED=$3 progress_go_build "${4##*/} for $1/$2" -trimpath -ldflags "$LDFLAGS" -o "$5" -- "$4"
}

# debian_package name: prints the path of the package's .deb, downloaded once
# into the cache from Debian's archive (apt's configured mirror).
debian_package() {
  local deb
  # shellcheck disable=SC2012 # Debian's package file names are plain words
  deb=$(ls "$CACHE"/debs/"$1"_*.deb 2>/dev/null | tail -n 1 || true)
  if [[ -z $deb ]]; then
    mkdir -p "$CACHE/debs"
    (cd "$CACHE/debs" && { apt-get download "$1" >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get download "$1" >/dev/null; }; })
    # shellcheck disable=SC2012 # as above
    deb=$(ls "$CACHE"/debs/"$1"_*.deb | tail -n 1)
  fi
  echo "$deb"
}

# static_base dir: the files distroless/static has that kquant's binaries use.
static_base() {
  local d=$1
  mkdir -p "$d/etc/ssl/certs" "$d/tmp" "$d/home/nonroot"
  chmod 1777 "$d/tmp"
  chown 65532:65532 "$d/home/nonroot"
  chmod 0700 "$d/home/nonroot"
  cat >"$d/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
PASSWD
  cat >"$d/etc/group" <<'GROUP'
root:x:0:
nobody:x:65534:
nonroot:x:65532:
GROUP
  echo "hosts: files dns" >"$d/etc/nsswitch.conf"
  local ca
  ca=$(debian_package ca-certificates)
  # The bundle is what the package's update-ca-certificates writes: every
  # certificate it ships, concatenated.
  local x
  x=$(mktemp -d)
  dpkg-deb -x "$ca" "$x"
  find "$x/usr/share/ca-certificates" -name '*.crt' | sort | xargs cat >"$d/etc/ssl/certs/ca-certificates.crt"
  rm -rf "$x"
}

# glibc_base dir: static_base plus Debian's libc6 libraries (no docs, no gconv).
glibc_base() {
  local d=$1 libc
  static_base "$d"
  libc=$(debian_package libc6)
  dpkg-deb -x "$libc" "$d"
  rm -rf "${d:?}/usr/share" "${d:?}/usr/lib/x86_64-linux-gnu/gconv" "${d:?}/etc/ld.so.conf.d"
}

# glibc_arm64_base dir: static_base plus the arm64 libc6 of Debian's cross
# toolchain, laid out as Debian's arm64 libc6 is (its ld.so looks there).
glibc_arm64_base() {
  local d=$1 libc x
  static_base "$d"
  libc=$(debian_package libc6-arm64-cross)
  x=$(mktemp -d)
  dpkg-deb -x "$libc" "$x"
  mkdir -p "$d/lib"
  mv "$x/usr/aarch64-linux-gnu/lib" "$d/lib/aarch64-linux-gnu"
  ln -s aarch64-linux-gnu/ld-linux-aarch64.so.1 "$d/lib/ld-linux-aarch64.so.1"
  rm -rf "$x"
}

# base kind: the cached base directory, made once per Debian package version.
base() {
  local kind=$1 key dir
  # BASE_RECIPE changes whenever what a *_base function makes changes.
  key=$BASE_RECIPE+$(basename "$(debian_package ca-certificates)" .deb)
  [[ $kind == glibc ]] && key+="+$(basename "$(debian_package libc6)" .deb)"
  [[ $kind == glibc_arm64 ]] && key+="+$(basename "$(debian_package libc6-arm64-cross)" .deb)"
  dir=$CACHE/base-$kind-$key
  if [[ ! -d $dir ]]; then
    log "making the $kind base from Debian's packages"
    rm -rf "$dir.tmp"
    "${kind}_base" "$dir.tmp"
    mv "$dir.tmp" "$dir"
  fi
  echo "$dir"
}

mkdir -p "$OUT" "$ROOT/bin/linux_amd64" "$ROOT/bin/linux_arm64"
log "binaries"
gobuild linux amd64 0 ./cmd/manager bin/linux_amd64/manager
gobuild linux arm64 0 ./cmd/manager bin/linux_arm64/manager
gobuild linux amd64 0 ./hack/pause bin/linux_amd64/pause
gobuild linux arm64 0 ./hack/pause bin/linux_arm64/pause
gobuild linux amd64 1 ./cmd/agent bin/linux_amd64/agent
agent_platforms=(-binary linux/amd64=bin/linux_amd64/agent)
if command -v aarch64-linux-gnu-gcc >/dev/null; then
  CC=aarch64-linux-gnu-gcc gobuild linux arm64 1 ./cmd/agent bin/linux_arm64/agent
  agent_platforms+=(-binary linux/arm64=bin/linux_arm64/agent -base-for "linux/arm64=$(base glibc_arm64)")
  check_arm64_agent
else
  lacking "the arm64 agent" "cgo needs a cross gcc: Debian's gcc-aarch64-linux-gnu and libc6-dev-arm64-cross"
fi
(cd hack/tools/images && go build -o "$ROOT/bin/kquant-images" .)

log "images"
STATIC=$(base static)
GLIBC=$(base glibc)
bin/kquant-images "${DISTROLESS_CONFIG[@]}" -dockerfile Dockerfile.manager -base "$STATIC" -ref "$IMG_REGISTRY/kquant-manager:$IMG_TAG" \
  -binary linux/amd64=bin/linux_amd64/manager -binary linux/arm64=bin/linux_arm64/manager -out "$OUT/kquant-manager.tar"
bin/kquant-images "${DISTROLESS_CONFIG[@]}" -dockerfile Dockerfile.agent -base "$GLIBC" -ref "$IMG_REGISTRY/kquant-agent:$IMG_TAG" \
  "${agent_platforms[@]}" -out "$OUT/kquant-agent.tar"
bin/kquant-images "${DISTROLESS_CONFIG[@]}" -dockerfile hack/pause/Dockerfile -base "$STATIC" -ref "$PAUSE_REF" \
  -binary linux/amd64=bin/linux_amd64/pause -binary linux/arm64=bin/linux_arm64/pause -out "$OUT/pause.tar"

log "checking the archives"
(cd hack/tools/images && go test -count=1 -run '^TestBuiltArchives$' .) >&2
