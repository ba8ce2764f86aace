# shellcheck shell=bash
# assets.sh: the one way kquant's scripts build a pinned binary from a tools
# module under hack/tools/ into a cache directory outside the repository.
# Sourced by envtest-assets.sh and cluster-assets.sh; nothing here runs on its own.

KUBE_VERSION=1.36.3
ETCD_VERSION=3.7.0
CONTAINERD_VERSION=2.2.1
CRICTL_VERSION=1.37.0
ASSETS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ASSETS_CACHE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/kquant

assets_log() { echo "$(basename "$0"): $*" >&2; }

# assets_stamp prints a stamp naming everything that decides the binaries'
# content: the versions and the go.sum of every tools module given.
assets_stamp() { # module-dir...
  local sums=()
  local dir
  for dir in "$@"; do sums+=("$ASSETS_ROOT/hack/tools/$dir/go.sum"); done
  echo "kube=${KUBE_VERSION} etcd=${ETCD_VERSION} containerd=${CONTAINERD_VERSION} crictl=${CRICTL_VERSION} $(cat "${sums[@]}" | sha256sum | cut -c1-16)"
}

# assets_fresh succeeds when dir holds every named binary under the given stamp.
assets_fresh() { # dir stamp binary...
  local dir=$1 stamp=$2 bin
  shift 2
  [[ -f "$dir/.stamp" && "$(cat "$dir/.stamp")" == "$stamp" ]] || return 1
  for bin in "$@"; do [[ -x "$dir/$bin" ]] || return 1; done
}

# kube_version_ldflags stamps the real release into Kubernetes' version
# packages: unstamped, binaries report v0.0.0-master+$Format:%H$, which kubectl,
# Helm and the kubelet's version checks refuse to parse.
kube_version_ldflags() {
  local flags="" pkg minor=${KUBE_VERSION#*.}
  minor=${minor%%.*}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X ${pkg}.gitVersion=v${KUBE_VERSION}"
    flags+=" -X ${pkg}.gitMajor=${KUBE_VERSION%%.*}"
    flags+=" -X ${pkg}.gitMinor=${minor}"
    flags+=" -X ${pkg}.gitTreeState=clean"
    flags+=" -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$flags"
}

# assets_build builds main packages of one tools module into dir, static and
# stripped. Several packages build in one `go build`, so they share one
# compilation of their common dependencies and use every core.
assets_build() { # module-dir dir "ldflags" "tags" package...
  local module=$1 dir=$2 ldflags=$3 tags=$4
  shift 4
  local tmp
  tmp=$(mktemp -d "$dir/.build.XXXXXX")
  assets_log "building $(printf '%s ' "${@##*/}")from hack/tools/$module (one time, several minutes)"
  (cd "$ASSETS_ROOT/hack/tools/$module" && CGO_ENABLED=0 GOFLAGS=-mod=mod \
    go build -trimpath -tags "$tags" -ldflags "-s -w $ldflags" -o "$tmp/" "$@")
  mv "$tmp"/* "$dir/"
  rmdir "$tmp"
}
