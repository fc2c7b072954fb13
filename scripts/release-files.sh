#!/usr/bin/env bash
# Writes release files in the layout and checksum format of their upstream
# downloads into OUT, for a mirror a test serves over HTTP
# (kubenode-bake's `download_mirrors`):
#
#   dl.k8s.io/release/<k8s>/bin/linux/amd64/{kubelet,kubeadm,kubectl}[.sha256]
#   github.com/containerd/containerd/releases/download/v<c>/containerd-<c>-linux-amd64.tar.gz[.sha256sum]
#   github.com/opencontainers/runc/releases/download/<r>/runc.amd64, runc.sha256sum
#   github.com/containernetworking/plugins/releases/download/<n>/cni-plugins-linux-amd64-<n>.tgz[.sha256]
#   github.com/kubernetes-sigs/cri-tools/releases/download/<v>/crictl-<v>-linux-amd64.tar.gz[.sha256]
#
# Where each file comes from (none is an upstream release asset):
#   - kubelet, kubeadm, kubectl: K8S_DIR, built by scripts/k8s-binaries.sh
#     from k8s.io/kubernetes at that version;
#   - containerd, containerd-shim-runc-v2, ctr: built here from
#     github.com/containerd/containerd/v2 at that version (CGO_ENABLED=0,
#     version stamped as upstream's Makefile does);
#   - runc: built here from github.com/opencontainers/runc at that version
#     with the seccomp build tag, statically linked with Debian's libseccomp
#     (as upstream's release binary is: containerd gives every container a
#     seccomp profile, which a runc without seccomp refuses);
#   - crictl: built here from sigs.k8s.io/cri-tools at that version;
#   - CNI plugins: Debian's containernetworking-plugins package
#     (/usr/lib/cni), packed as upstream packs its release, under Debian's
#     version.
# Builds are cached by version in $KUBENODE_CACHE/release-builds, and the
# archives packed from them in its packed/.
#
#   scripts/release-files.sh OUT K8S_DIR K8S_VERSION CONTAINERD_VERSION RUNC_VERSION CRICTL_VERSION
#   prints the CNI plugins version it packed
set -euo pipefail

[ $# -eq 6 ] || { echo "usage: $0 OUT K8S_DIR K8S_VERSION CONTAINERD_VERSION RUNC_VERSION CRICTL_VERSION" >&2; exit 2; }
OUT=$(realpath -m "$1") K8S_DIR=$2 K8S=$3 CTRD=$4 RUNC=$5 CRICTL=$6
CACHE=${KUBENODE_CACHE:-$HOME/.cache/kubenode}/release-builds
log() { printf '[release-files] %s\n' "$*" >&2; }

# gobuild NAME VERSION CGO TAGS LDFLAGS PACKAGE...: go install at VERSION
# into $CACHE/NAME-VERSION, once.
gobuild() {
  local name=$1 version=$2 cgo=$3 tags=$4 ldflags=$5; shift 5
  local dir=$CACHE/$name-$version
  if [ -f "$dir/.complete" ]; then
    return
  fi
  log "building $name $version from the Go module proxy"
  rm -rf "$dir" "$dir.tmp"
  mkdir -p "$dir.tmp"
  local pkgs=()
  for p in "$@"; do pkgs+=("$p@$version"); done
  (cd /tmp && GOBIN="$dir.tmp" CGO_ENABLED=$cgo GOFLAGS=-mod=mod go install -trimpath -tags "$tags" -ldflags "$ldflags" "${pkgs[@]}")
  touch "$dir.tmp/.complete"
  mv "$dir.tmp" "$dir"
}

# tgz DIR ARCHIVE FILE...: a gzip tar of FILE... (relative to DIR),
# byte-for-byte the same on every run.
tgz() {
  local dir=$1 archive=$2; shift 2
  tar -C "$dir" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - "$@" | gzip -9n > "$archive"
}

# packed KEY DIR ARCHIVE FILE...: tgz's archive, kept in $CACHE/packed/KEY
# and copied from there on later runs (gzip -9 of containerd takes most of
# this script's time). KEY names every input: builds are cached by version
# and never change once complete.
packed() {
  local key=$1 dir=$2 archive=$3; shift 3
  local kept=$CACHE/packed/$key
  if [ ! -f "$kept" ]; then
    mkdir -p "$CACHE/packed"
    tgz "$dir" "$kept.tmp" "$@"
    mv "$kept.tmp" "$kept"
  fi
  cp "$kept" "$archive"
}

ctrd_pkg=github.com/containerd/containerd/v2
gobuild containerd "v$CTRD" 0 "" "-s -w -X $ctrd_pkg/version.Version=v$CTRD -X $ctrd_pkg/version.Revision=kubenode-test -X $ctrd_pkg/version.Package=github.com/containerd/containerd/v2" \
  $ctrd_pkg/cmd/containerd $ctrd_pkg/cmd/containerd-shim-runc-v2 $ctrd_pkg/cmd/ctr
gobuild runc-seccomp "$RUNC" 1 seccomp "-s -w -X main.version=${RUNC#v} -extldflags -static" github.com/opencontainers/runc
gobuild crictl "$CRICTL" 0 "" "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL" sigs.k8s.io/cri-tools/cmd/crictl

mkdir -p "$OUT"
cd "$OUT"

k=dl.k8s.io/release/$K8S/bin/linux/amd64
mkdir -p "$k"
for b in kubelet kubeadm kubectl; do
  install -m 0755 "$K8S_DIR/$b" "$k/$b"
  sha256sum "$k/$b" | cut -d' ' -f1 > "$k/$b.sha256" # dl.k8s.io: the bare digest
done

c=github.com/containerd/containerd/releases/download/v$CTRD
mkdir -p "$c" stage/containerd/bin
cp "$CACHE/containerd-v$CTRD"/{containerd,containerd-shim-runc-v2,ctr} stage/containerd/bin/
packed "containerd-$CTRD-linux-amd64.tar.gz" stage/containerd "$c/containerd-$CTRD-linux-amd64.tar.gz" bin
(cd "$c" && sha256sum "containerd-$CTRD-linux-amd64.tar.gz" > "containerd-$CTRD-linux-amd64.tar.gz.sha256sum")

r=github.com/opencontainers/runc/releases/download/$RUNC
mkdir -p "$r"
install -m 0755 "$CACHE/runc-seccomp-$RUNC/runc" "$r/runc.amd64"
(cd "$r" && sha256sum runc.amd64 > runc.sha256sum)

cni_package=$(dpkg-query -W -f '${Version}' containernetworking-plugins)
cni_version=v$(sed -E 's/^([0-9.]+).*/\1/' <<<"$cni_package")
n=github.com/containernetworking/plugins/releases/download/$cni_version
mkdir -p "$n" stage/cni
cp /usr/lib/cni/* stage/cni/
(cd stage/cni && packed "cni-plugins-linux-amd64-$cni_version-debian-$cni_package.tgz" . "$OUT/$n/cni-plugins-linux-amd64-$cni_version.tgz" $(ls | sed 's|^|./|'))
(cd "$n" && sha256sum "cni-plugins-linux-amd64-$cni_version.tgz" > "cni-plugins-linux-amd64-$cni_version.tgz.sha256")

t=github.com/kubernetes-sigs/cri-tools/releases/download/$CRICTL
mkdir -p "$t" stage/crictl
cp "$CACHE/crictl-$CRICTL/crictl" stage/crictl/
packed "crictl-$CRICTL-linux-amd64.tar.gz" stage/crictl "$t/crictl-$CRICTL-linux-amd64.tar.gz" crictl
(cd "$t" && sha256sum "crictl-$CRICTL-linux-amd64.tar.gz" | cut -d' ' -f1 > "crictl-$CRICTL-linux-amd64.tar.gz.sha256")

rm -rf stage
log "release files in $OUT"
echo "$cni_version"
