#!/usr/bin/env bash
# `packer fmt -check` every template (examples/ and the tests' testdata/),
# then `packer validate` every examples/*.pkr.hcl with the real packer and
# this plugin (installed into a private plugin directory). Templates that need
# local files get stand-ins, passed only for the variables they declare:
# validation checks that the files exist, never reads them. A cloud image
# by URL is replaced by the stand-in disk too: packer validate would fetch
# its checksum file (`file:https://...`), which needs the network.
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

for f in "$ROOT"/examples/*.pkr.hcl; do
  vars=()
  for v in "${!standin[@]}"; do
    grep -q "variable \"$v\"" "$f" && vars+=(-var "$v=${standin[$v]}")
  done
  echo "packer validate ${vars[*]} examples/$(basename "$f")"
  if ! "$packer" validate "${vars[@]}" "$f"; then
    echo "FAILED: examples/$(basename "$f")"
    status=1
  fi
done
exit $status
