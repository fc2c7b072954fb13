#!/usr/bin/env bash
# Installs and builds what kubenode's tests and main job need, idempotently.
# Every binary is cached under $KUBENODE_CACHE/<tool>/<version>/, so a warm
# run takes seconds. Release binaries (packer, Kubernetes) are downloaded
# and checked against their published checksums; only when a download cannot
# be fetched are they built from the Go module proxy, which takes tens of
# minutes (scripts/release-downloads.sh: the base URLs, a mirror).
#
#   scripts/setup.sh packages    Debian packages (apt-get; needs root)
#   scripts/setup.sh packer      packer: its release download, else built from the Go module proxy
#   scripts/setup.sh packer-mpl  packer $PACKER_MPL_VERSION, the last MPL-2.0 line, the same way
#                                (make validate-examples and make release check the examples with it too)
#   scripts/setup.sh goreleaser  goreleaser, built from the Go module proxy (make release)
#   scripts/setup.sh packer-path prints the packer make dev uses: one on PATH when it
#                                is $PACKER_VERSION or newer, else the pinned build (downloaded or built if missing)
#   scripts/setup.sh packer-sdc  packer-sdc (the SDK's code/doc generator)
#   scripts/setup.sh k8s         kubeadm, kubelet, kubectl, control plane, etcd (scripts/k8s-binaries.sh)
#   scripts/setup.sh capirender  the modules of cmd/lab/capirender (a Go module of its own:
#                                Cluster API and its k8s.io) into the Go module cache
#   scripts/setup.sh packer-plugin-qemu  hashicorp/packer-plugin-qemu, the peer make bench compares
#                                with (not in `all`: prints the binary's path)
#   scripts/setup.sh all         all of the above, and (as root) the test base
#                                disk (scripts/base-disk.sh) built alongside
#   scripts/setup.sh env         prints `export` lines for PATH, CGO_CFLAGS, ...
#                                (use: eval "$(scripts/setup.sh env)")
set -euo pipefail

# Pinned versions: the module proxy refuses version lists for packer and its
# SDK, so nothing here may say @latest.
PACKER_VERSION=v1.16.0
# Packer's last MPL-2.0 release line is 1.9.x (1.10.0 onwards are BUSL-1.1);
# v1.9.5 is not served by the module proxy.
PACKER_MPL_VERSION=v1.9.4
GORELEASER_VERSION=v2.15.1 # v2.18.2 and newer need a newer Go
PACKER_SDC_VERSION=v0.6.10 # must match packer-plugin-sdk in go.mod
PACKER_PLUGIN_QEMU_VERSION=v1.0.9 # newer tags are not served by the module proxy

APT_PACKAGES=(
  ca-certificates git make gcc libc6-dev # go, cgo (race detector, tree-sitter)
  curl unzip zip                         # release downloads (scripts/release-downloads.sh); zip: the test mirror's packer zip
  xorriso genisoimage                    # read seed discs back independently (xorriso, isoinfo); UDF install-disc fixtures
  wimtools                               # install.wim/install.esd fixtures (wimcapture, wimappend, wimexport)
  openssl whois                          # openssl passwd / mkpasswd check our password hashes
  libvirt-daemon-system libvirt-clients  # the builder's hypervisor API (started by scripts/libvirtd.sh)
  qemu-system-x86 qemu-utils ovmf        # QEMU (TCG here), qemu-img, UEFI firmware
  swtpm swtpm-tools                      # vTPM for Windows 11-class guests
  debootstrap extlinux fdisk e2fsprogs mount # scripts/base-disk.sh: the Debian test base disk
  grub-efi-amd64-bin isolinux syslinux-common # scripts/installer-iso.sh: GRUB EFI (grub-mkstandalone) and isolinux for the install-media fixture
  mtools dosfstools busybox-static cpio squashfs-tools kmod # its EFI El Torito/ESP FAT images, the installer's init shell, initramfs (and its drivers) and root file system image
  openssh-server openssh-client          # a loopback sshd for the qemu+ssh:// (remote hypervisor) test
  containerd runc containernetworking-plugins # the node runtime the joiner's real join runs against
  libseccomp-dev pkg-config              # runc built with seccomp for the release-files mirror (scripts/release-files.sh)
  iptables conntrack socat ethtool ebtables # kubeadm join preflight prerequisites on this host
)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${KUBENODE_CACHE:-$HOME/.cache/kubenode}
PACKER_BIN=$CACHE/packer/$PACKER_VERSION/packer
PACKER_MPL_BIN=$CACHE/packer/$PACKER_MPL_VERSION/packer
GORELEASER_BIN=$CACHE/goreleaser/$GORELEASER_VERSION/goreleaser
PACKER_SDC_BIN=$CACHE/packer-sdc/$PACKER_SDC_VERSION/packer-sdc
PACKER_PLUGIN_QEMU_BIN=$CACHE/packer-plugin-qemu/$PACKER_PLUGIN_QEMU_VERSION/packer-plugin-qemu

log() { printf '[setup] %s\n' "$*" >&2; }
# shellcheck source=scripts/release-downloads.sh
. "$ROOT/scripts/release-downloads.sh"

need_go() {
  command -v go >/dev/null || { log "Go is not on PATH: install Go 1.26 or newer (https://go.dev/doc/install)"; exit 1; }
}

packages() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "Debian packages: all present"
    return
  fi
  log "Debian packages: installing ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# build_from_module NAME MODULE VERSION BIN NOTE compiles a module's main
# package from its source into BIN, unless BIN is there already: `go install
# x@v` is refused by the proxy (it asks for the version list), so the module
# is downloaded, copied and built in place. Log lines go to stderr.
build_from_module() {
  local name=$1 mod=$2 version=$3 bin=$4 note=$5
  need_go
  if [ -x "$bin" ]; then
    log "$name $version: cached at $bin"
    return
  fi
  log "$name $version: building$note"
  local dir src
  dir=$(cd /tmp && go mod download -json "$mod@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -n "$dir" ] || { log "go mod download $mod@$version failed"; exit 1; }
  src=$(mktemp -d)
  trap 'rm -rf "$src"; trap - RETURN' RETURN
  cp -r "$dir/." "$src"
  chmod -R u+w "$src"
  mkdir -p "$(dirname "$bin")"
  (cd "$src" && GOFLAGS=-mod=mod go build -trimpath -o "$bin.tmp" . >&2)
  mv "$bin.tmp" "$bin"
  log "$name $version: built at $bin"
}

# get_packer [VERSION BIN] puts packer VERSION (PACKER_VERSION) at BIN
# (PACKER_BIN): HashiCorp's release zip, checked against its SHA256SUMS,
# else built from the Go module proxy.
get_packer() {
  local PACKER_VERSION=${1:-$PACKER_VERSION} PACKER_BIN=${2:-$PACKER_BIN}
  if [ -x "$PACKER_BIN" ]; then
    log "packer $PACKER_VERSION: cached at $PACKER_BIN"
    return
  fi
  local v=${PACKER_VERSION#v} arch url zip
  if ! arch=$(release_arch); then
    download_error="no release for $(uname -m)"
  elif ! command -v unzip >/dev/null; then
    download_error="unzip is not installed"
  else
    url=$(release_url releases.hashicorp.com "packer/$v/packer_${v}_linux_$arch.zip")
    zip=$(dirname "$PACKER_BIN")/${url##*/}
    if download_verified "$url" "$(release_url releases.hashicorp.com "packer/$v/packer_${v}_SHA256SUMS")" "$zip"; then
      unzip -p "$zip" packer >"$PACKER_BIN.tmp"
      rm -f "$zip"
      chmod 0755 "$PACKER_BIN.tmp"
      mv "$PACKER_BIN.tmp" "$PACKER_BIN"
      log "packer $PACKER_VERSION: downloaded to $PACKER_BIN"
      return
    fi
  fi
  log "packer $PACKER_VERSION: not downloaded ($download_error): building from the Go module proxy instead"
  build_from_module packer github.com/hashicorp/packer "$PACKER_VERSION" "$PACKER_BIN" " (about 7 minutes cold)"
}

get_packer_mpl() {
  get_packer "$PACKER_MPL_VERSION" "$PACKER_MPL_BIN"
}

build_goreleaser() {
  build_from_module goreleaser github.com/goreleaser/goreleaser/v2 "$GORELEASER_VERSION" "$GORELEASER_BIN" " (5 CPU-minutes cold)"
}

# version_at_least A B: A >= B, both X.Y.Z (sort -V orders versions).
version_at_least() {
  [ "$(printf '%s\n' "$1" "$2" | sort -V | head -n1)" = "$2" ]
}

# packer_path prints the packer `make dev` installs the plugin into: the
# one on PATH when it is PACKER_VERSION or newer, else the pinned one,
# downloaded (or built) if missing. It says which on stderr.
packer_path() {
  local found version=""
  if found=$(command -v packer); then
    version=$(PACKER_CHECKPOINT_DISABLE=1 "$found" version 2>/dev/null | sed -n '1s/^Packer v\([0-9][0-9.]*\).*/\1/p') || true
    if [ -n "$version" ] && version_at_least "$version" "${PACKER_VERSION#v}"; then
      log "packer: using $found (v$version, on PATH)"
      echo "$found"
      return
    fi
    log "packer: $found is ${version:+v}${version:-of an unknown version}, older than $PACKER_VERSION: using the pinned build"
  fi
  get_packer
  log "packer: using $PACKER_BIN"
  echo "$PACKER_BIN"
}

build_packer_sdc() {
  need_go
  if [ -x "$PACKER_SDC_BIN" ]; then
    log "packer-sdc $PACKER_SDC_VERSION: cached at $PACKER_SDC_BIN"
    return
  fi
  log "packer-sdc $PACKER_SDC_VERSION: building"
  mkdir -p "$(dirname "$PACKER_SDC_BIN")"
  (cd "$ROOT" && go build -o "$PACKER_SDC_BIN.tmp" github.com/hashicorp/packer-plugin-sdk/cmd/packer-sdc)
  mv "$PACKER_SDC_BIN.tmp" "$PACKER_SDC_BIN"
}

# build_packer_plugin_qemu builds hashicorp/packer-plugin-qemu (make bench's
# peer build) and prints the binary's path on stdout.
build_packer_plugin_qemu() {
  build_from_module packer-plugin-qemu github.com/hashicorp/packer-plugin-qemu "$PACKER_PLUGIN_QEMU_VERSION" "$PACKER_PLUGIN_QEMU_BIN" " (about 1 minute cold)"
  echo "$PACKER_PLUGIN_QEMU_BIN"
}

# capirender_modules fills the Go module cache with what cmd/lab/capirender
# (its own go.mod: Cluster API needs newer k8s.io modules than the plugin)
# builds and tests with, so that `make test` and `make lint` need no network.
# With everything cached, GOPROXY=off finds it all and nothing is fetched.
capirender_modules() {
  need_go
  local dir=$ROOT/cmd/lab/capirender
  if GOPROXY=off go -C "$dir" mod download >/dev/null 2>&1; then
    log "capirender modules: cached"
    return
  fi
  log "capirender modules: downloading (cmd/lab/capirender/go.mod)"
  go -C "$dir" mod download >&2
}

# tree_sitter_cflags: the PowerShell grammar's scanner.c includes
# <tree_sitter/parser.h>, which lives in the grammar module's src/.
tree_sitter_cflags() {
  local dir
  dir=$(cd "$ROOT" && go list -m -f '{{.Dir}}' github.com/airbus-cert/tree-sitter-powershell 2>/dev/null || true)
  if [ -z "$dir" ]; then
    (cd "$ROOT" && go mod download github.com/airbus-cert/tree-sitter-powershell) >&2
    dir=$(cd "$ROOT" && go list -m -f '{{.Dir}}' github.com/airbus-cert/tree-sitter-powershell)
  fi
  printf '%s' "-I$dir/src"
}

print_env() {
  need_go
  echo "export PATH=\"$(dirname "$PACKER_BIN"):$(dirname "$PACKER_SDC_BIN"):\$PATH\""
  echo "export CGO_CFLAGS=\"$(tree_sitter_cflags)\""
  echo "export PACKER_CHECKPOINT_DISABLE=1"
  echo "export KUBENODE_PACKER=\"$PACKER_BIN\""
  echo "export KUBENODE_PACKER_MPL=\"$PACKER_MPL_BIN\""
  echo "export KUBENODE_GORELEASER=\"$GORELEASER_BIN\""
  echo "export KUBENODE_PACKER_SDC=\"$PACKER_SDC_BIN\""
}

case "${1:-all}" in
  packages) packages ;;
  packer) get_packer ;;
  packer-mpl) get_packer_mpl ;;
  goreleaser) build_goreleaser ;;
  packer-path) packer_path ;;
  packer-sdc) build_packer_sdc ;;
  k8s) bash "$ROOT/scripts/k8s-binaries.sh" >/dev/null ;;
  capirender) capirender_modules ;;
  packer-plugin-qemu) build_packer_plugin_qemu ;;
  all)
    packages
    # Three jobs at once, each in a subshell of its own (set -e holds in
    # it): the test base disks (debootstrap: mostly downloads and unpacking;
    # as root only, as it needs), the two packers, and packer-sdc with the
    # capirender modules, the Kubernetes binaries and goreleaser. The Go
    # builds are CPU-bound, but each spends minutes downloading modules and
    # linking on one core, which the other fills.
    pids=() names=()
    if [ "$(id -u)" -eq 0 ]; then
      (bash "$ROOT/scripts/base-disk.sh" >/dev/null; bash "$ROOT/scripts/base-disk.sh" netplan >/dev/null) &
      pids+=($!) names+=("scripts/base-disk.sh (and its netplan variant)")
    fi
    (build_packer_sdc; capirender_modules; bash "$ROOT/scripts/k8s-binaries.sh" >/dev/null; build_goreleaser) &
    pids+=($!) names+=("packer-sdc, the capirender modules, scripts/k8s-binaries.sh or goreleaser")
    (get_packer; get_packer_mpl) &
    pids+=($!) names+=("packer (v1.16.0, then the MPL-2.0 v1.9.4)")
    # Whatever fails, nothing is left running.
    trap 'for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done' EXIT
    failed=""
    for i in "${!pids[@]}"; do
      wait "${pids[$i]}" || failed+="${failed:+, }${names[$i]}"
    done
    [ -z "$failed" ] || { log "failed: $failed (its lines above)"; exit 1; }
    ;;
  env) print_env ;;
  *) echo "usage: $0 [packages|packer|packer-mpl|goreleaser|packer-path|packer-sdc|k8s|capirender|packer-plugin-qemu|all|env]" >&2; exit 2 ;;
esac
