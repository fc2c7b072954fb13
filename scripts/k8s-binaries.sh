#!/usr/bin/env bash
# Builds the Kubernetes binaries kubenode's tests run for real (kubeadm,
# kubelet, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl)
# and etcd, from the Go module proxy, into $KUBENODE_CACHE/kubernetes/<version>/.
# k8s.io/kubernetes v1.33 and later build from the proxy (older staging
# modules are refused). Cold: several minutes on 2 cores; warm: prints the cache
# path.
#
#   scripts/k8s-binaries.sh [vX.Y.Z]   builds if needed (default v1.37.2),
#                                      prints the directory
set -euo pipefail

K8S_VERSION=${1:-v1.37.2}
[[ $K8S_VERSION =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "[k8s-binaries] not a release vX.Y.Z: $K8S_VERSION" >&2; exit 2; }
STAGING_VERSION=v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}
CACHE=${KUBENODE_CACHE:-$HOME/.cache/kubenode}
OUT=$CACHE/kubernetes/$K8S_VERSION
BINARIES=(kubeadm kubelet kube-apiserver kube-controller-manager kube-scheduler kubectl)
log() { printf '[k8s-binaries] %s\n' "$*" >&2; }

complete() {
  for b in "${BINARIES[@]}" etcd; do [ -x "$OUT/$b" ] || return 1; done
}
if complete; then
  log "cached: $OUT"
  echo "$OUT"
  exit 0
fi
command -v go >/dev/null || { log "Go is not on PATH"; exit 1; }

dir=$(cd /tmp && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[ -n "$dir" ] || { log "go mod download k8s.io/kubernetes@$K8S_VERSION failed"; exit 1; }
src=$(mktemp -d /var/tmp/kubenode-k8s.XXXXXX)
trap 'rm -rf "$src"' EXIT
cp -r "$dir/." "$src"
chmod -R u+w "$src"
cd "$src"
rm -rf vendor go.work go.work.sum
# The module's staging replaces point into ./staging; use the published
# staging modules of the same release instead.
# (The module zip has no staging/ directory: every such replace dangles.)
# The sample-* modules are not published for this release (the proxy answers
# 403) and no binary needs them: drop them.
for m in $(sed -n 's|^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) => \./staging/src/.*|\1|p' go.mod | sort -u); do
  case "$m" in
    k8s.io/sample-*) go mod edit -dropreplace="$m" -droprequire="$m" ;;
    *) go mod edit -dropreplace="$m" -require="$m@$STAGING_VERSION" ;;
  esac
done

commit=$(printf '%s' "$K8S_VERSION" | sha1sum | cut -c1-40) # no git here: a stable stand-in
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
minor=$(echo "$K8S_VERSION" | cut -d. -f2)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitCommit=$commit -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
done

mkdir -p "$OUT"
# One go build for every missing binary: it compiles their shared packages
# once and links one binary while it compiles for the next, instead of a
# link at a time on one core.
missing=()
for b in "${BINARIES[@]}"; do
  [ -x "$OUT/$b" ] || missing+=("./cmd/$b")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "building ${missing[*]#./cmd/} $K8S_VERSION"
  tmp=$(mktemp -d "$OUT/.build.XXXXXX")
  trap 'rm -rf "$src" "$tmp"' EXIT
  GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${missing[@]}"
  for p in "${missing[@]}"; do mv "$tmp/${p#./cmd/}" "$OUT/${p#./cmd/}"; done
fi

# etcd: the server the module already depends on, behind a three-line main.
mkdir -p cmd/kubenode-etcd
cat > cmd/kubenode-etcd/main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
log "building etcd"
GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$OUT/etcd.tmp" ./cmd/kubenode-etcd
mv "$OUT/etcd.tmp" "$OUT/etcd"
log "built: $OUT"
echo "$OUT"
