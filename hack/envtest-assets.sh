#!/usr/bin/env bash
# envtest-assets.sh builds, once, the control-plane binaries that envtest, the
# e2e tests and `make demo` run: kube-apiserver and kubectl from k8s.io/kubernetes
# and etcd from go.etcd.io/etcd/server/v3. Nothing is downloaded at run time except
# Go modules through the module proxy.
#
# It prints the directory that holds the binaries (the value for KUBEBUILDER_ASSETS)
# on stdout and everything else on stderr. A second call finds the cache and returns
# at once.
set -euo pipefail

KUBE_VERSION=1.36.3
ETCD_VERSION=3.7.0
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${KQUANT_ASSETS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kquant/assets/${KUBE_VERSION}}
# The stamp names everything that decides the binaries' content, so a change of
# version or of the tools modules rebuilds them.
STAMP_INPUT="kube=${KUBE_VERSION} etcd=${ETCD_VERSION} $(cat "$ROOT/hack/tools/kube/go.sum" "$ROOT/hack/tools/etcd/go.sum" | sha256sum | cut -c1-16)"

if [[ -f "$CACHE/.stamp" && "$(cat "$CACHE/.stamp")" == "$STAMP_INPUT" ]] \
  && [[ -x "$CACHE/kube-apiserver" && -x "$CACHE/kubectl" && -x "$CACHE/etcd" ]]; then
  echo "$CACHE"
  exit 0
fi

mkdir -p "$CACHE"
log() { echo "envtest-assets: $*" >&2; }

# Unstamped, the server reports v0.0.0-master+$Format:%H$, which kubectl and Helm
# refuse to parse; stamp the real release into the version packages.
VERSION_LDFLAGS=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  VERSION_LDFLAGS+=" -X ${pkg}.gitVersion=v${KUBE_VERSION}"
  VERSION_LDFLAGS+=" -X ${pkg}.gitMajor=${KUBE_VERSION%%.*}"
  minor=${KUBE_VERSION#*.}; minor=${minor%%.*}
  VERSION_LDFLAGS+=" -X ${pkg}.gitMinor=${minor}"
  VERSION_LDFLAGS+=" -X ${pkg}.gitTreeState=clean"
  VERSION_LDFLAGS+=" -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
done

build() { # module-dir package output [ldflags]
  local dir=$1 pkg=$2 out=$3 ldflags=${4:-}
  log "building $out from $pkg (one time, several minutes)"
  (cd "$ROOT/hack/tools/$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod \
    go build -trimpath -ldflags "-s -w $ldflags" -o "$CACHE/$out.tmp" "$pkg")
  mv "$CACHE/$out.tmp" "$CACHE/$out"
}

build etcd go.etcd.io/etcd/server/v3 etcd
build kube k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "$VERSION_LDFLAGS"
build kube k8s.io/kubernetes/cmd/kubectl kubectl "$VERSION_LDFLAGS"

echo "$STAMP_INPUT" > "$CACHE/.stamp"
log "assets ready in $CACHE"
echo "$CACHE"
