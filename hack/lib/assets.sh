# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# shellcheck shell=bash
# assets.sh: the one way kquant's scripts build a pinned binary from a tools
# module under hack/tools/ into a cache directory outside the repository.
# Sourced by the *-assets.sh scripts and by the device scripts, which also
# pack and stamp their bundles here; nothing here runs on its own.

KUBE_VERSION=1.36.3
ETCD_VERSION=3.7.0
CONTAINERD_VERSION=2.2.1
CRICTL_VERSION=1.37.0
ASSETS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck disable=SC2034 # read by the scripts that source this file
ASSETS_CACHE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/kquant
# shellcheck source=hack/lib/progress.sh
source "$ASSETS_ROOT/hack/lib/progress.sh"

assets_log() { echo "$(basename "$0"): $*" >&2; }

# assets_stamp prints a stamp naming everything that decides the binaries'
# content: the versions and the go.sum of every tools module given.
assets_stamp() { # module-dir...
  local sums=()
  local dir
  for dir in "$@"; do sums+=("$ASSETS_ROOT/hack/tools/$dir/go.sum"); done
  echo "kube=${KUBE_VERSION} etcd=${ETCD_VERSION} containerd=${CONTAINERD_VERSION} crictl=${CRICTL_VERSION} $(cat "${sums[@]}" | sha256sum | cut -c1-16)"
}

# assets_module_version prints the version of module that the tools module
# hack/tools/<module-dir> pins: the one place a tool's release is chosen.
assets_module_version() { # module-dir module
  (cd "$ASSETS_ROOT/hack/tools/$1" && go list -m -f '{{.Version}}' "$2")
}

# assets_fresh succeeds when dir holds every named binary under the given stamp.
assets_fresh() { # dir stamp binary...
  local dir=$1 stamp=$2 bin
  shift 2
  [[ -f "$dir/.stamp" && "$(cat "$dir/.stamp")" == "$stamp" ]] || return 1
  for bin in "$@"; do [[ -x "$dir/$bin" ]] || return 1; done
}

# assets_reuse is how every asset script starts: when dir holds every
# binary under stamp it prints dir and ends the script, so that a second
# call returns at once; otherwise, when flag is --cached (never build), it
# ends the script with status 1, and else it returns for the caller to build.
assets_reuse() { # dir stamp flag binary...
  local dir=$1 stamp=$2 flag=$3
  shift 3
  if assets_fresh "$dir" "$stamp" "$@"; then
    echo "$dir"
    exit 0
  fi
  [[ $flag != --cached ]] || exit 1
}

# assets_done is how every asset script ends: it marks dir complete under
# stamp (written last, so that an interrupted build is never reused) and
# prints dir.
assets_done() { # dir stamp what
  echo "$2" >"$1/.stamp"
  assets_log "$3 ready in $1"
  echo "$1"
}

# kube_version_ldflags stamps the real release into Kubernetes' version
# packages: unstamped, binaries report v0.0.0-master+$Format:%H$, which kubectl,
# Helm and the kubelet's version checks refuse to parse.
kube_version_ldflags() {
  local version_flags="" pkg minor=${KUBE_VERSION#*.}
  minor=${minor%%.*}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    version_flags+=" -X ${pkg}.gitVersion=v${KUBE_VERSION}"
    version_flags+=" -X ${pkg}.gitMajor=${KUBE_VERSION%%.*}"
    version_flags+=" -X ${pkg}.gitMinor=${minor}"
    version_flags+=" -X ${pkg}.gitTreeState=clean"
    version_flags+=" -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$version_flags"
}

# assets_build builds main packages of one tools module into dir, static and
# stripped, with a progress line every PROGRESS_TICK seconds. Several packages
# build in one `go build`, so they share one compilation of their common
# dependencies and use every core.
assets_build() { # module-dir dir "ldflags" "tags" package...
  local module=$1 dir=$2 ldflags=$3 tags=$4
  shift 4
  local tmp names
  tmp=$(mktemp -d "$dir/.build.XXXXXX")
  names=$(printf '%s ' "${@##*/}")
  assets_log "building ${names}from hack/tools/$module"
  (cd "$ASSETS_ROOT/hack/tools/$module" && CGO_ENABLED=0 GOFLAGS=-mod=mod \
    progress_go_build "${names% }" -trimpath -tags "$tags" -ldflags "-s -w $ldflags" -o "$tmp/" -- "$@")
  mv "$tmp"/* "$dir/"
  rmdir "$tmp"
}

# assets_pack_control_plane strips and xz-compresses kube-apiserver and etcd
# from the envtest assets into dir, for a machine without Go (the device
# tool's 64 MiB per call). It does so (minutes) only when the assets' stamp
# changed since the last time.
assets_pack_control_plane() { # dir
  local dir=$1 assets tmp b
  assets=$("$ASSETS_ROOT/hack/envtest-assets.sh")
  if [[ -f $dir/assets.stamp ]] && cmp -s "$assets/.stamp" "$dir/assets.stamp"; then
    return 0
  fi
  tmp=$(mktemp -d)
  for b in kube-apiserver etcd; do strip -o "$tmp/$b" "$assets/$b"; done
  assets_xz "$tmp" "$dir" kube-apiserver etcd
  rm -rf "$tmp"
  cp "$assets/.stamp" "$dir/assets.stamp"
}

# assets_xz compresses each named file of src into dst/<name>.xz, the form
# in which binaries travel to the device machine (assets_unxz undoes it).
assets_xz() { # src dst name...
  local src=$1 dst=$2 b
  shift 2
  for b in "$@"; do xz -6 -T0 -c "$src/$b" >"$dst/$b.xz"; done
}

# bundle_stamp records in dir the commit a device bundle is built from, with
# +dirty when the working tree differs from it.
bundle_stamp() { # dir
  echo "$(git -C "$ASSETS_ROOT" rev-parse --short HEAD)$(git -C "$ASSETS_ROOT" diff --quiet HEAD || echo +dirty)" >"$1/commit"
}

# bundle_log_start begins a device run's log with the bundle's commit and
# the GPUs the machine has, and echoes both.
bundle_log_start() { # bundle-dir log
  {
    echo "bundle of commit $(cat "$1/commit" 2>/dev/null || echo unknown)"
    nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader || true
  } | tee "$2"
}

# assets_unxz decompresses src into an executable dst, with xz or, where it
# is missing (the device machine), Python's lzma.
assets_unxz() { # src dst
  if command -v xz >/dev/null; then
    xz -dc "$1" >"$2"
  else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"
  fi
  chmod +x "$2"
}

# assets_untar_xz unpacks the xz-compressed tar archive src into the
# directory dst, with tar and xz or, where xz is missing (the device
# machine), Python's tarfile.
assets_untar_xz() { # src dst
  if command -v xz >/dev/null; then
    xz -dc "$1" | tar -C "$2" -xf -
  else
    python3 - "$1" "$2" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[1], "r:xz") as t:
    try:
        t.extractall(sys.argv[2], filter="fully_trusted")
    except TypeError:  # Python before extraction filters
        t.extractall(sys.argv[2])
PY
  fi
}
