#!/bin/sh
# kubenode-bake: node basics: time sync, the root file system growing to the disk. Generated from typed configuration; do not edit.
set -eu
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
put() { # put PATH MODE: stdin -> PATH when it or its mode differs
  tmp=$(mktemp); cat > "$tmp"
  if [ -f "$1" ] && cmp -s "$tmp" "$1" && [ "$(stat -c %a "$1")" = "${2#0}" ]; then rm -f "$tmp"; echo "ok: $1"; return 1; fi
  mkdir -p "$(dirname "$1")"; install -m "$2" "$tmp" "$1"; rm -f "$tmp"; echo "changed: $1"
}
export 'HTTP_PROXY=http://proxy:3128'
export 'http_proxy=http://proxy:3128'
export 'NO_PROXY=10.0.0.0/8,'\''quoted'\'''
export 'no_proxy=10.0.0.0/8,'\''quoted'\'''
pkg_install() { # pkg_install APT-PACKAGE DNF-PACKAGE
  if command -v apt-get >/dev/null; then
    echo "changed: installing $1"
    apt-get -o DPkg::Lock::Timeout=0 install -y -qq --no-install-recommends "$1" >/dev/null 2>&1 || { apt-get -o DPkg::Lock::Timeout=0 update -qq && apt-get -o DPkg::Lock::Timeout=0 install -y -qq --no-install-recommends "$1" >/dev/null; }
  elif command -v dnf >/dev/null; then
    echo "changed: installing $2"; dnf install -y -q "$2"
  else
    echo "no apt-get or dnf on this guest: install $1 yourself" >&2; exit 1
  fi
}
# Time sync: the installed daemon, else systemd-timesyncd (apt) or chrony (dnf).
unit=''
for u in chrony.service chronyd.service ntpsec.service ntp.service ntpd.service systemd-timesyncd.service; do
  if [ -z "$unit" ] && systemctl cat "$u" >/dev/null 2>&1; then unit=$u; fi
done
if [ -z "$unit" ]; then
  pkg_install systemd-timesyncd chrony
  if command -v apt-get >/dev/null; then unit=systemd-timesyncd.service; else unit=chronyd.service; fi
fi
if systemctl is-enabled -q "$unit"; then echo "ok: time sync: $unit enabled"; else systemctl enable -q "$unit"; echo "changed: time sync: $unit enabled"; fi
systemctl is-active -q "$unit" || systemctl start "$unit" || echo "note: $unit did not start now; it starts at boot"
# The root grows to each new VM's disk: growpart for cloud-init's growpart and
# resizefs modules (without it cloud-init logs "unable to find resizer").
if command -v growpart >/dev/null; then echo 'ok: growpart installed'; else pkg_install cloud-guest-utils cloud-utils-growpart; fi
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
if command -v cloud-init >/dev/null; then
  if why=$(cloudinit_grows_root); then echo "ok: cloud-init grows the root on each new VM's boot (growpart, resizefs)"; else echo "note: the root will not grow: $why"; fi
else
  # No cloud-init: a oneshot unit grows the root partition and file system at boot.
put '/usr/local/sbin/kubenode-growroot' 0755 <<'KUBENODE_EOF' || true
#!/bin/sh
# kubenode: grow the root partition and file system to the disk, at boot. Generated; do not edit.
set -u
dev=$(readlink -f "$(findmnt -n -o SOURCE /)")
name=$(basename "$dev")
if [ ! -r "/sys/class/block/$name/partition" ]; then echo "kubenode-growroot: $dev is not a partition: nothing to grow"; exit 0; fi
part=$(cat "/sys/class/block/$name/partition")
disk=/dev/$(basename "$(readlink -f "/sys/class/block/$name/..")")
out=$(growpart "$disk" "$part" 2>&1)
case $? in
  0) echo "kubenode-growroot: $out" ;;
  1) echo "kubenode-growroot: $dev already fills $disk"; exit 0 ;;
  *) echo "kubenode-growroot: growpart $disk $part failed: $out" >&2; exit 1 ;;
esac
fstype=$(findmnt -n -o FSTYPE /)
case $fstype in
  ext2|ext3|ext4) resize2fs "$dev" ;;
  xfs) xfs_growfs / ;;
  btrfs) btrfs filesystem resize max / ;;
  *) echo "kubenode-growroot: grow the $fstype file system on $dev yourself" >&2; exit 1 ;;
esac
KUBENODE_EOF
if put '/etc/systemd/system/kubenode-growroot.service' 0644 <<'KUBENODE_EOF'
[Unit]
Description=Grow the root partition and file system to the disk (kubenode)
After=local-fs.target
ConditionPathExists=/usr/local/sbin/kubenode-growroot

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/kubenode-growroot

[Install]
WantedBy=multi-user.target
KUBENODE_EOF
then systemctl daemon-reload; fi
  if systemctl is-enabled -q kubenode-growroot.service; then echo 'ok: kubenode-growroot.service enabled'; else systemctl enable -q kubenode-growroot.service; echo 'changed: kubenode-growroot.service enabled'; fi
fi
