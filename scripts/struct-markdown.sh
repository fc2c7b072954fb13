#!/usr/bin/env bash
# Renders a config file's field comments into docs-partials/ with
# `packer-sdc struct-markdown`, for a //go:generate directive:
#
#   //go:generate bash ../../scripts/struct-markdown.sh
#
# Why not `go tool packer-sdc struct-markdown` directly: packer-sdc (v0.6.10)
# finds the plugin's root by walking up from the Go file to a directory whose
# name starts with `packer-plugin-`. In a checkout named anything else
# (/work/main, ~/src/kubenode) the walk reaches "/" and never stops, because
# filepath.Dir("/") is "/": the command spins at 100% CPU forever. Under a
# directory named `packer` it exits 0 and writes nothing. So it runs here
# through a symlink named after the plugin, which gives it the root it looks
# for wherever the checkout lives, and under a timeout in case it hangs again.
set -euo pipefail

file=${1:-${GOFILE:?run from a //go:generate directive or give the Go file}}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
here=$(pwd -P)
case $here/ in
"$root"/*) rel=${here#"$root"} ;;
*) echo "struct-markdown.sh: $here is not inside $root" >&2; exit 1 ;;
esac

# Build (or find in the build cache) the packer-sdc pinned by go.mod's tool
# directive first, so that the timeout below never counts a cold compile.
sdc=$(cd "$root" && go tool -n packer-sdc)

tmp=$(mktemp -d)
trap 'rm -f "$tmp/packer-plugin-kubenode"; rmdir "$tmp"' EXIT
ln -s "$root" "$tmp/packer-plugin-kubenode"
# cd keeps the logical path in PWD, which Go's os.Getwd returns.
cd "$tmp/packer-plugin-kubenode$rel"
if ! timeout 60 "$sdc" struct-markdown "$file"; then
	echo "struct-markdown.sh: packer-sdc struct-markdown $rel/$file failed or ran over 60 s" >&2
	exit 1
fi
