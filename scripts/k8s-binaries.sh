#!/usr/bin/env bash
# Puts the Kubernetes binaries kubenode's tests run for real (kubeadm,
# kubelet, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl)
# and etcd into $KUBENODE_CACHE/kubernetes/<version>/: the release
# downloads from dl.k8s.io, each checked against its .sha256, and etcd's
# release tarball (the etcd kubeadm of that release names) checked against
# its SHA256SUMS (scripts/release-downloads.sh: the base URLs, a mirror).
# What cannot be downloaded is built from the Go module proxy instead, as
# the log says: k8s.io/kubernetes v1.33 and later build from it (older
# staging modules are refused), and etcd is the server that module
# requires. Downloads take about a minute; building, 11 to 25 minutes on 2
# cores; warm, it prints the cache path.
#
#   scripts/k8s-binaries.sh [vX.Y.Z]   downloads or builds if needed
#                                      (default v1.37.2), prints the directory
set -euo pipefail

K8S_VERSION=${1:-v1.37.2}
[[ $K8S_VERSION =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "[k8s-binaries] not a release vX.Y.Z: $K8S_VERSION" >&2; exit 2; }
STAGING_VERSION=v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}
CACHE=${KUBENODE_CACHE:-$HOME/.cache/kubenode}
OUT=$CACHE/kubernetes/$K8S_VERSION
BINARIES=(kubeadm kubelet kube-apiserver kube-controller-manager kube-scheduler kubectl)
log() { printf '[k8s-binaries] %s\n' "$*" >&2; }
# shellcheck source=scripts/release-downloads.sh
. "$(dirname "${BASH_SOURCE[0]}")/release-downloads.sh"

complete() {
  for b in "${BINARIES[@]}" etcd; do [ -x "$OUT/$b" ] || return 1; done
}
if complete; then
  log "cached: $OUT"
  echo "$OUT"
  exit 0
fi
mkdir -p "$OUT"
arch=$(release_arch) || arch=""
# Downloads land in work (beside OUT: the same file system) until checked;
# src is a writable copy of the k8s.io/kubernetes module, made once, for
# the builds.
work=$(mktemp -d "$OUT/.download.XXXXXX")
src=""
trap 'rm -rf "$work"; [ -z "$src" ] || rm -rf "$src"' EXIT

# The release downloads, one binary at a time; the first that cannot be
# fetched sends the rest to the build below.
missing=()
for b in "${BINARIES[@]}"; do
  [ -x "$OUT/$b" ] || missing+=("$b")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ -z "$arch" ]; then
    download_error="no release for $(uname -m)"
  else
    for b in "${missing[@]}"; do
      url=$(release_url dl.k8s.io "release/$K8S_VERSION/bin/linux/$arch/$b")
      download_verified "$url" "$url.sha256" "$work/$b" || break
      chmod 0755 "$work/$b"
      mv "$work/$b" "$OUT/$b"
    done
  fi
fi

module_copy() {
  [ -z "$src" ] || return 0
  command -v go >/dev/null || { log "Go is not on PATH: it builds what cannot be downloaded"; exit 1; }
  local dir
  dir=$(cd /tmp && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -n "$dir" ] || { log "go mod download k8s.io/kubernetes@$K8S_VERSION failed"; exit 1; }
  src=$(mktemp -d /var/tmp/kubenode-k8s.XXXXXX)
  cp -r "$dir/." "$src"
  chmod -R u+w "$src"
  cd "$src"
  rm -rf vendor go.work go.work.sum
  # The module's staging replaces point into ./staging; use the published
  # staging modules of the same release instead.
  # (The module zip has no staging/ directory: every such replace dangles.)
  # The sample-* modules are not published for this release (the proxy answers
  # 403) and no binary needs them: drop them.
  local m
  for m in $(sed -n 's|^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) => \./staging/src/.*|\1|p' go.mod | sort -u); do
    case "$m" in
      k8s.io/sample-*) go mod edit -dropreplace="$m" -droprequire="$m" ;;
      *) go mod edit -dropreplace="$m" -require="$m@$STAGING_VERSION" ;;
    esac
  done
}

# One go build for every binary still missing: it compiles their shared
# packages once and links one binary while it compiles for the next,
# instead of a link at a time on one core.
missing=()
for b in "${BINARIES[@]}"; do
  [ -x "$OUT/$b" ] || missing+=("./cmd/$b")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "${missing[*]#./cmd/} $K8S_VERSION: not downloaded ($download_error): building from the Go module proxy instead"
  module_copy
  commit=$(printf '%s' "$K8S_VERSION" | sha1sum | cut -c1-40) # no git here: a stable stand-in
  date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitCommit=$commit -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
  done
  GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$work/" "${missing[@]}"
  for p in "${missing[@]}"; do mv "$work/${p#./cmd/}" "$OUT/${p#./cmd/}"; done
  log "built ${missing[*]#./cmd/} $K8S_VERSION"
fi

# etcd: the release kubeadm runs for this Kubernetes release.
if [ ! -x "$OUT/etcd" ]; then
  etcd=$("$OUT/kubeadm" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null | sed -n 's|.*/etcd:\([0-9][0-9.]*\)-.*|\1|p') || true
  if [ -z "$arch" ]; then
    download_error="no release for $(uname -m)"
  elif [ -z "$etcd" ]; then
    download_error="kubeadm config images list names no etcd"
  else
    name=etcd-v$etcd-linux-$arch
    url=$(release_url github.com "etcd-io/etcd/releases/download/v$etcd/$name.tar.gz")
    if download_verified "$url" "${url%/*}/SHA256SUMS" "$work/$name.tar.gz"; then
      tar -xzf "$work/$name.tar.gz" -C "$work" "$name/etcd"
      mv "$work/$name/etcd" "$OUT/etcd"
      log "etcd $etcd: downloaded"
    fi
  fi
fi
if [ ! -x "$OUT/etcd" ]; then
  # The etcd server the module already depends on, behind a three-line main.
  log "etcd: not downloaded ($download_error): building the one k8s.io/kubernetes $K8S_VERSION requires from the Go module proxy instead"
  module_copy
  cd "$src"
  mkdir -p cmd/kubenode-etcd
  cat > cmd/kubenode-etcd/main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$OUT/etcd.tmp" ./cmd/kubenode-etcd
  mv "$OUT/etcd.tmp" "$OUT/etcd"
  log "built etcd"
fi
log "ready: $OUT"
echo "$OUT"
