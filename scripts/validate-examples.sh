#!/usr/bin/env bash
# `packer fmt -check` every template (examples/ and the tests' testdata/),
# then `packer validate` every examples/*.pkr.hcl with the real packer and
# this plugin (installed into a private plugin directory). Templates that need
# local files get stand-ins, passed only for the variables they declare:
# validation checks that the files exist, never reads them. A cloud image
# by URL is replaced by the stand-in disk too: packer validate would fetch
# its checksum file (`file:https://...`), which needs the network.
#
# With KUBENODE_PACKER_MPL set (scripts/setup.sh env: packer v1.9.4, the
# last MPL-licensed line), every example is validated with it as well. That
# packer has no `plugins install --path`, and a development build
# (0.1.0-dev) does not meet `version = ">= 0.1.0"` there, so it gets what
# `packer init` would install: a release build (no pre-release suffix),
# named packer-plugin-kubenode_v<version>_<api>_<os>_<arch> beside its
# _SHA256SUM file (scripts/install-plugin, internal/packerinit).
#
#   scripts/validate-examples.sh PLUGIN_BINARY
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
plugin=${1:?usage: $0 PLUGIN_BINARY}
packer=${KUBENODE_PACKER:-packer}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/plugins" "$tmp/kubernetes"
touch "$tmp/base.qcow2" "$tmp/kubenode-joiner" "$tmp/kubenode-joiner.exe"
declare -A standin=(
  [base_disk]="$tmp/base.qcow2"
  [kubernetes_dir]="$tmp/kubernetes"
  [joiner]="$tmp/kubenode-joiner"
  [joiner_windows]="$tmp/kubenode-joiner.exe"
  [cloud_image]="$tmp/base.qcow2"
  [cloud_image_checksum]=none
)

export PACKER_PLUGIN_PATH=$tmp/plugins PACKER_CHECKPOINT_DISABLE=1
"$packer" plugins install --path "$plugin" github.com/kubenode/kubenode >/dev/null

status=0
# packer fmt -check prints the files it would change; -diff shows how.
# `packer fmt -write` on them (or the directory) fixes them.
cd "$ROOT"
mapfile -t templates < <(find examples -name '*.pkr.hcl'; find . -path ./examples -prune -o -path '*/testdata/*' -name '*.pkr.hcl' -print | sed 's|^\./||' | sort)
echo "packer fmt -check -diff (${#templates[@]} templates)"
for f in "${templates[@]}"; do
  if ! "$packer" fmt -check -diff "$f"; then
    echo "FAILED: $f is not formatted: run packer fmt $f"
    status=1
  fi
done

# validate_examples PACKER validates every example with PACKER and the
# plugin in $PACKER_PLUGIN_PATH.
validate_examples() {
  local packer=$1 f v vars
  for f in "$ROOT"/examples/*.pkr.hcl; do
    vars=()
    for v in "${!standin[@]}"; do
      grep -q "variable \"$v\"" "$f" && vars+=(-var "$v=${standin[$v]}")
    done
    echo "packer validate ${vars[*]} examples/$(basename "$f")"
    if ! "$packer" validate "${vars[@]}" "$f"; then
      echo "FAILED: examples/$(basename "$f") with $packer"
      status=1
    fi
  done
}
echo "with $("$packer" version | head -n1)"
validate_examples "$packer"

if [ -n "${KUBENODE_PACKER_MPL:-}" ]; then
  export PACKER_PLUGIN_PATH=$tmp/plugins-mpl
  mod=$(go list -m)
  go build -ldflags "-X $mod/version.VersionPrerelease=" -o "$tmp/release-build" .
  bin=$(go run ./scripts/install-plugin "$PACKER_PLUGIN_PATH" "$tmp/release-build")
  echo "with $("$KUBENODE_PACKER_MPL" version | head -n1) and $(basename "$bin")"
  validate_examples "$KUBENODE_PACKER_MPL"
fi
exit $status
