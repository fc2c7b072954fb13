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
# With RELEASE_FILES_SETUP=PACKER_BINARY it also writes what scripts/setup.sh
# and scripts/k8s-binaries.sh download, for a test of their download path:
#
#   releases.hashicorp.com/packer/<p>/packer_<p>_linux_amd64.zip, packer_<p>_SHA256SUMS
#   dl.k8s.io/release/<k8s>/bin/linux/amd64/{kube-apiserver,kube-controller-manager,kube-scheduler}[.sha256]
#   github.com/etcd-io/etcd/releases/download/v<e>/etcd-v<e>-linux-amd64.tar.gz, SHA256SUMS
#
# Where each file comes from:
#   - the Kubernetes binaries and etcd: K8S_DIR (scripts/k8s-binaries.sh);
#     packer: PACKER_BINARY;
#   - containerd, containerd-shim-runc-v2, ctr: containerd's release tarball,
#     checked against its .sha256sum; if it cannot be downloaded, built
#     here from github.com/containerd/containerd/v2 at that version
#     (CGO_ENABLED=0, version stamped as upstream's Makefile does);
#   - runc: runc's release binary, checked against runc.sha256sum; else
#     built here from github.com/opencontainers/runc at that version with
#     the seccomp build tag, statically linked with Debian's libseccomp (as
#     upstream's release binary is: containerd gives every container a
#     seccomp profile, which a runc without seccomp refuses);
#   - crictl: crictl's release tarball, checked against its .sha256; else
#     built here from sigs.k8s.io/cri-tools at that version;
#   - the CNI plugins: the release tarball of CNI_VERSION, checked against
#     its .sha256 and served as it is; if it cannot be downloaded (or no
#     CNI_VERSION is given), Debian's containernetworking-plugins package
#     (/usr/lib/cni), packed as upstream packs its release, under Debian's
#     version.
# Downloads (scripts/release-downloads.sh: the base URLs, a mirror) and
# builds are cached by version in $KUBENODE_CACHE/release-builds, and the
# archives packed from them in its packed/: containerd's and crictl's
# tarballs are packed again from their binaries, downloaded or built, and
# every file served has the checksum this script writes beside it.
#
#   scripts/release-files.sh OUT K8S_DIR K8S_VERSION CONTAINERD_VERSION RUNC_VERSION CRICTL_VERSION [CNI_VERSION]
#   prints the CNI plugins version it serves
set -euo pipefail

[ $# -eq 6 ] || [ $# -eq 7 ] || { echo "usage: $0 OUT K8S_DIR K8S_VERSION CONTAINERD_VERSION RUNC_VERSION CRICTL_VERSION [CNI_VERSION]" >&2; exit 2; }
OUT=$(realpath -m "$1") K8S_DIR=$2 K8S=$3 CTRD=$4 RUNC=$5 CRICTL=$6 CNI=${7:-}
CACHE=${KUBENODE_CACHE:-$HOME/.cache/kubenode}/release-builds
log() { printf '[release-files] %s\n' "$*" >&2; }
# shellcheck source=scripts/release-downloads.sh
. "$(dirname "${BASH_SOURCE[0]}")/release-downloads.sh"

# gobuild NAME VERSION CGO TAGS LDFLAGS PACKAGE...: go install at VERSION
# into $CACHE/NAME-VERSION, once.
gobuild() {
  local name=$1 version=$2 cgo=$3 tags=$4 ldflags=$5; shift 5
  local dir=$CACHE/$name-$version
  if [ -f "$dir/.complete" ]; then
    return
  fi
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

# unpacked NAME-VERSION UNPACK FILE: $CACHE/NAME-VERSION made from the
# checked download FILE by the function UNPACK FILE DIR. (Called outside
# an if's condition, where set -e would not stop a failed step.)
unpacked() {
  local dir=$CACHE/$1 unpack=$2 file=$3
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  "$unpack" "$file" "$dir.tmp"
  rm -f "$file"
  touch "$dir.tmp/.complete"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
}

# provide NAME VERSION URL CHECKSUM_URL UNPACK GOBUILD-ARGS...: the release
# download URL, checked against CHECKSUM_URL and unpacked by UNPACK, else
# gobuild NAME VERSION GOBUILD-ARGS...; it says which.
provide() {
  local name=$1 version=$2 url=$3 sums=$4 unpack=$5
  shift 5
  if [ -f "$CACHE/$name-$version/.complete" ]; then
    log "$name $version: cached"
    return
  fi
  if download_verified "$url" "$sums" "$work/${url##*/}"; then
    unpacked "$name-$version" "$unpack" "$work/${url##*/}"
    log "$name $version: downloaded"
    return
  fi
  log "$name $version: not downloaded ($download_error): building from the Go module proxy instead"
  gobuild "$name" "$version" "$@"
  log "$name $version: built"
}

# Downloads land in work (in CACHE: the same file system) until checked.
mkdir -p "$CACHE"
work=$(mktemp -d "$CACHE/.download.XXXXXX")
trap 'rm -rf "$work"' EXIT

unpack_containerd() { tar -xzf "$1" -C "$2" --strip-components=1 bin/containerd bin/containerd-shim-runc-v2 bin/ctr; }
unpack_runc() { install -m 0755 "$1" "$2/runc"; }
unpack_crictl() { tar -xzf "$1" -C "$2" crictl; }
unpack_cni() { mv "$1" "$2/"; }

gh=$(release_url github.com "")
ctrd_pkg=github.com/containerd/containerd/v2
ctrd_url=${gh}containerd/containerd/releases/download/v$CTRD/containerd-$CTRD-linux-amd64.tar.gz
provide containerd "v$CTRD" "$ctrd_url" "$ctrd_url.sha256sum" unpack_containerd \
  0 "" "-s -w -X $ctrd_pkg/version.Version=v$CTRD -X $ctrd_pkg/version.Revision=kubenode-test -X $ctrd_pkg/version.Package=github.com/containerd/containerd/v2" \
  $ctrd_pkg/cmd/containerd $ctrd_pkg/cmd/containerd-shim-runc-v2 $ctrd_pkg/cmd/ctr
runc_url=${gh}opencontainers/runc/releases/download/$RUNC
provide runc-seccomp "$RUNC" "$runc_url/runc.amd64" "$runc_url/runc.sha256sum" unpack_runc \
  1 seccomp "-s -w -X main.version=${RUNC#v} -extldflags -static" github.com/opencontainers/runc
crictl_url=${gh}kubernetes-sigs/cri-tools/releases/download/$CRICTL/crictl-$CRICTL-linux-amd64.tar.gz
provide crictl "$CRICTL" "$crictl_url" "$crictl_url.sha256" unpack_crictl \
  0 "" "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL" sigs.k8s.io/cri-tools/cmd/crictl
cni_dir=""
if [ -n "$CNI" ]; then
  cni_url=${gh}containernetworking/plugins/releases/download/$CNI/cni-plugins-linux-amd64-$CNI.tgz
  if [ -f "$CACHE/cni-plugins-$CNI/.complete" ]; then
    log "cni-plugins $CNI: cached"
    cni_dir=$CACHE/cni-plugins-$CNI
  elif download_verified "$cni_url" "$cni_url.sha256" "$work/${cni_url##*/}"; then
    unpacked "cni-plugins-$CNI" unpack_cni "$work/${cni_url##*/}"
    log "cni-plugins $CNI: downloaded"
    cni_dir=$CACHE/cni-plugins-$CNI
  else
    log "cni-plugins $CNI: not downloaded ($download_error): packing Debian's containernetworking-plugins instead"
  fi
fi

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

if [ -n "$cni_dir" ]; then
  cni_version=$CNI
  n=github.com/containernetworking/plugins/releases/download/$cni_version
  mkdir -p "$n"
  cp "$cni_dir/cni-plugins-linux-amd64-$cni_version.tgz" "$n/"
else
  cni_package=$(dpkg-query -W -f '${Version}' containernetworking-plugins)
  cni_version=v$(sed -E 's/^([0-9.]+).*/\1/' <<<"$cni_package")
  n=github.com/containernetworking/plugins/releases/download/$cni_version
  mkdir -p "$n" stage/cni
  cp /usr/lib/cni/* stage/cni/
  (cd stage/cni && packed "cni-plugins-linux-amd64-$cni_version-debian-$cni_package.tgz" . "$OUT/$n/cni-plugins-linux-amd64-$cni_version.tgz" $(ls | sed 's|^|./|'))
fi
(cd "$n" && sha256sum "cni-plugins-linux-amd64-$cni_version.tgz" > "cni-plugins-linux-amd64-$cni_version.tgz.sha256")

t=github.com/kubernetes-sigs/cri-tools/releases/download/$CRICTL
mkdir -p "$t" stage/crictl
cp "$CACHE/crictl-$CRICTL/crictl" stage/crictl/
packed "crictl-$CRICTL-linux-amd64.tar.gz" stage/crictl "$t/crictl-$CRICTL-linux-amd64.tar.gz" crictl
(cd "$t" && sha256sum "crictl-$CRICTL-linux-amd64.tar.gz" | cut -d' ' -f1 > "crictl-$CRICTL-linux-amd64.tar.gz.sha256")

if [ -n "${RELEASE_FILES_SETUP:-}" ]; then
  for b in kube-apiserver kube-controller-manager kube-scheduler; do
    install -m 0755 "$K8S_DIR/$b" "$k/$b"
    sha256sum "$k/$b" | cut -d' ' -f1 > "$k/$b.sha256"
  done
  etcd=$("$K8S_DIR/etcd" --version | sed -n 's/^etcd Version: //p')
  e=github.com/etcd-io/etcd/releases/download/v$etcd
  mkdir -p "$e" "stage/etcd-v$etcd-linux-amd64"
  cp "$K8S_DIR/etcd" "stage/etcd-v$etcd-linux-amd64/"
  tgz stage "$e/etcd-v$etcd-linux-amd64.tar.gz" "etcd-v$etcd-linux-amd64"
  (cd "$e" && sha256sum "etcd-v$etcd-linux-amd64.tar.gz" > SHA256SUMS)
  packer=$(PACKER_CHECKPOINT_DISABLE=1 "$RELEASE_FILES_SETUP" version | sed -n '1s/^Packer v\([0-9][0-9.]*\).*/\1/p')
  p=releases.hashicorp.com/packer/$packer
  mkdir -p "$p" stage/packer
  cp "$RELEASE_FILES_SETUP" stage/packer/packer
  (cd stage/packer && zip -q -1 -X "$OUT/$p/packer_${packer}_linux_amd64.zip" packer)
  (cd "$p" && sha256sum "packer_${packer}_linux_amd64.zip" > "packer_${packer}_SHA256SUMS")
fi

rm -rf stage
log "release files in $OUT"
echo "$cni_version"
