#!/bin/sh
# kubenode-bake: self-check of the baked guest. Generated from typed configuration; do not edit.
# Every check runs; each problem is printed as "problem: ..."; the script fails when there is one.
set -u
export LC_ALL=C PATH="${PATH:+$PATH:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
problems=0
problem() { echo "problem: $*"; problems=$((problems + 1)); }
enabled() { # enabled UNIT: starts at boot
  st=$(systemctl is-enabled "$1" 2>/dev/null) || true
  if [ "$st" = enabled ]; then echo "ok: $1 enabled"; else problem "$1 is not enabled to start at boot (systemctl is-enabled: ${st:-no such unit})"; fi
}
active() { # active UNIT: running now
  st=$(systemctl is-active "$1" 2>/dev/null) || true
  if [ "$st" = active ]; then echo "ok: $1 active"; else problem "$1 is not running (systemctl is-active: ${st:-unknown}; see journalctl -u $1)"; fi
}
module() { # module NAME: loaded now and listed for boot
  if [ -d "/sys/module/$1" ]; then echo "ok: module $1 loaded"; else problem "kernel module $1 is not loaded"; fi
  if cat /etc/modules-load.d/*.conf /run/modules-load.d/*.conf /usr/lib/modules-load.d/*.conf /etc/modules 2>/dev/null | grep -qx "[[:space:]]*$1[[:space:]]*"; then echo "ok: module $1 loaded at boot"; else problem "kernel module $1 is not loaded at boot (no modules-load.d file lists it)"; fi
}
sysctl_is() { # sysctl_is KEY VALUE: now and at boot
  v=$(sysctl -n "$1" 2>/dev/null) || v=
  if [ "$v" = "$2" ]; then echo "ok: $1 = $2"; else problem "sysctl $1 is ${v:-unset}, want $2"; fi
  if cat /usr/lib/sysctl.d/*.conf /run/sysctl.d/*.conf /etc/sysctl.d/*.conf /etc/sysctl.conf 2>/dev/null | awk -F= -v k="$1" -v w="$2" '{ gsub(/[[:space:]]/, "") } $1 == k { v = $2 } END { exit v != w }'; then echo "ok: $1 = $2 at boot"; else problem "sysctl $1 = $2 is not set for boot (in /etc/sysctl.d)"; fi
}
version_is() { # version_is NAME WANT COMMAND...: the last word of the command's first line
  what=$1; want=$2; shift 2
  v=$("$@" 2>/dev/null | awk 'NR == 1 { print $NF }') || v=
  if [ "$v" = "$want" ]; then echo "ok: $what $want"; else problem "$what reports ${v:-no version} ($*), want $want"; fi
}
cloudinit_grows_root() { # prints why cloud-init would not grow the root, and fails
  cfg=$(cat /etc/cloud/cloud.cfg /etc/cloud/cloud.cfg.d/*.cfg 2>/dev/null)
  if ! printf '%s\n' "$cfg" | grep -Eq '^[[:space:]]*-[[:space:]]*\[?[[:space:]]*(cc_)?growpart([[:space:],]|\]|$)'; then
    echo "cloud-init's cloud.cfg lists no growpart module"; return 1
  fi
  if printf '%s\n' "$cfg" | awk '/^growpart:/ { g = 1; if ($0 ~ /mode:[[:space:]]*["'"'"']?(off|false)/) f = 1; next } /^[^[:space:]#]/ { g = 0 } g && /^[[:space:]]+mode:[[:space:]]*["'"'"']?(off|false)/ { f = 1 } END { exit !f }'; then
    echo "cloud-init's growpart is turned off (growpart: mode: off in /etc/cloud)"; return 1
  fi
  if printf '%s\n' "$cfg" | grep -Eq '^resize_rootfs:[[:space:]]*["'"'"']?(false|False|no|off)'; then
    echo "cloud-init's resize_rootfs is false in /etc/cloud"; return 1
  fi
  return 0
}

# Services
enabled 'containerd'
enabled 'kubelet'
active containerd
# Kernel and swap (the kubelet's and kube-proxy's needs)
module overlay
module br_netfilter
sysctl_is net.ipv4.ip_forward 1
sysctl_is net.bridge.bridge-nf-call-iptables 1
if [ "$(wc -l < /proc/swaps)" -le 1 ]; then echo 'ok: swap off'; else problem "swap is on ($(tail -n +2 /proc/swaps | awk '{ print $1 }' | tr '\n' ' ')): the kubelet does not start with swap"; fi
if grep -Eq '^[^#].*[[:space:]]swap[[:space:]]' /etc/fstab; then problem 'swap is in /etc/fstab: it comes back at boot'; fi
# Versions
version_is kubelet 'v1.33.13' kubelet --version
version_is kubeadm 'v1.33.13' kubeadm version -o short
version_is kubectl 'v1.33.13' kubectl version --client
# containerd answers
if out=$(ctr version 2>&1); then echo 'ok: containerd answers ctr version (crictl not installed: install_crictl = false)'; else problem "containerd does not answer ctr version: $(printf '%s' "$out" | tail -n 1)"; fi
# Time sync
sync=''
for u in chrony.service chronyd.service ntpsec.service ntp.service ntpd.service systemd-timesyncd.service; do
  if [ -z "$sync" ] && [ "$(systemctl is-enabled "$u" 2>/dev/null)" = enabled ]; then sync=$u; fi
done
if [ -n "$sync" ]; then echo "ok: time sync: $sync enabled"; else problem "no time sync service is enabled (chrony, ntp or systemd-timesyncd)"; fi
# The root grows to each new VM's disk
if ! command -v growpart >/dev/null; then
  problem "growpart is not installed: the root does not grow to a new VM's disk (Debian: cloud-guest-utils, Fedora: cloud-utils-growpart)"
elif command -v cloud-init >/dev/null; then
  if why=$(cloudinit_grows_root); then echo "ok: cloud-init grows the root (growpart, resizefs)"; else problem "the root does not grow to a new VM's disk: $why"; fi
else
  enabled kubenode-growroot.service
fi
if [ "$problems" -gt 0 ]; then echo "self-check: $problems problems" >&2; exit 1; fi
echo 'ok: self-check passed'
