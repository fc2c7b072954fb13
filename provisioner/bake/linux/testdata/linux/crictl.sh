#!/bin/sh
# kubenode-bake: crictl v1.33.0. Generated from typed configuration; do not edit.
set -eu
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
put() { # put PATH MODE: stdin -> PATH when it or its mode differs
  tmp=$(mktemp); cat > "$tmp"
  if [ -f "$1" ] && cmp -s "$tmp" "$1" && [ "$(stat -c %a "$1")" = "${2#0}" ]; then rm -f "$tmp"; echo "ok: $1"; return 1; fi
  mkdir -p "$(dirname "$1")"; install -m "$2" "$tmp" "$1"; rm -f "$tmp"; echo "changed: $1"
}
if [ -x /usr/bin/crictl ] && tar -xzf '/var/tmp/kubenode-bake/crictl.tar.gz' -O crictl | cmp -s - /usr/bin/crictl; then echo 'ok: crictl'; else
  tmp=$(mktemp); tar -xzf '/var/tmp/kubenode-bake/crictl.tar.gz' -O crictl > "$tmp"; install -m 0755 "$tmp" /usr/bin/crictl; rm -f "$tmp"; echo 'changed: crictl installed'
fi
v=$(/usr/bin/crictl --version 2>/dev/null | awk 'NR == 1 { print $NF }') || v=
if [ "$v" != 'v1.33.0' ]; then
  echo 'crictl_version is v1.33.0 but the crictl from crictl.tar.gz reports '"${v:-no version}"': give the crictl of v1.33.0 (artifacts.crictl or artifacts_dir), or set crictl_version to its version' >&2
  exit 1
fi
echo 'ok: crictl is v1.33.0'
