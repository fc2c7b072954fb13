#!/usr/bin/env bash
# Builds a small Debian 12 qcow2 base disk on the host (no installer: the
# netboot installer cannot fetch its .udebs here, and installing inside a TCG
# guest takes ~37 minutes). debootstrap + extlinux, cloud-init for the seed.
# Cached by recipe: the path includes the variant and a hash of this file, so
# changing the recipe builds a new disk. Needs root (debootstrap, mount,
# losetup).
#
#   scripts/base-disk.sh          builds if needed, prints the qcow2 path:
#                                 ifupdown brings up what cloud-init renders
#   scripts/base-disk.sh netplan  the same system networked as a cloud image
#                                 is (Ubuntu's): netplan on systemd-networkd,
#                                 systemd-resolved, no ifupdown; cloud-init
#                                 renders netplan, its fallback matching the
#                                 build VM's NIC by MAC address
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${KUBENODE_CACHE:-$HOME/.cache/kubenode}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
SIZE=3G
PACKAGES=linux-image-amd64,openssh-server,cloud-init,systemd-sysv,extlinux,python3-cffi-backend,sudo,qemu-guest-agent,e2fsprogs
TOOLS="debootstrap sfdisk losetup mkfs.ext4 qemu-img extlinux"
log() { printf '[base-disk] %s\n' "$*" >&2; }

variant=${1:-}
case "$variant" in
  "")
    name=debian-12
    PACKAGES+=,ifupdown,isc-dhcp-client ;;
  netplan)
    name=debian-12-netplan
    # dbus by name: debootstrap leaves systemd-resolved's dependency on
    # the virtual default-dbus-system-bus unresolved.
    PACKAGES+=,netplan.io,systemd-resolved,dbus
    TOOLS+=" systemctl" ;; # --root: enables units in the new system
  *) echo "usage: $0 [netplan]" >&2; exit 2 ;;
esac

recipe=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)
out_dir=$CACHE/base-disk/$name-$recipe
out=$out_dir/$name.qcow2

if [ -f "$out" ]; then
  log "cached: $out"
  echo "$out"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || { log "building the base disk needs root (debootstrap, mount)"; exit 1; }
for tool in $TOOLS; do
  command -v "$tool" >/dev/null || { log "$tool missing: run scripts/setup.sh packages"; exit 1; }
done

work=$(mktemp -d /var/tmp/kubenode-base.XXXXXX)
mnt=$work/mnt
loop=""
cleanup() {
  set +e
  mountpoint -q "$mnt/dev" && umount "$mnt/dev"
  mountpoint -q "$mnt/proc" && umount "$mnt/proc"
  mountpoint -q "$mnt/sys" && umount "$mnt/sys"
  mountpoint -q "$mnt" && umount "$mnt"
  [ -n "$loop" ] && losetup -d "$loop"
  rm -rf "$work"
}
trap cleanup EXIT

log "debootstrap $SUITE for $name (minbase + kernel, sshd, cloud-init; ~4 minutes)"
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$work/rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
  { tail -30 "$work/debootstrap.log" >&2; exit 1; }

log "partitioning a $SIZE raw disk"
raw=$work/disk.raw
truncate -s "$SIZE" "$raw"
echo 'start=2048, type=83, bootable' | sfdisk -q "$raw"
offset=$((2048 * 512))
# losetup -P makes no partition devices here: attach the partition by offset.
loop=$(losetup --find --show --offset "$offset" "$raw")
mkfs.ext4 -q -L root "$loop"
uuid=$(blkid -s UUID -o value "$loop")
mkdir -p "$mnt"
mount "$loop" "$mnt"
cp -a "$work/rootfs/." "$mnt/"

log "configuring boot (extlinux), fstab, serial console"
cat >"$mnt/etc/fstab" <<FSTAB
UUID=$uuid / ext4 defaults,errors=remount-ro 0 1
FSTAB
echo "kubenode-base" >"$mnt/etc/hostname"
case "$variant" in
  "")
    # Debian's ifupdown brings up what cloud-init renders into interfaces.d.
    printf 'auto lo\niface lo inet loopback\nsource /etc/network/interfaces.d/*\n' >"$mnt/etc/network/interfaces"
    # cloud-init only from the NoCloud seed disc: no network metadata probing.
    echo 'datasource_list: [ NoCloud, None ]' >"$mnt/etc/cloud/cloud.cfg.d/90-kubenode.cfg"
    ;;
  netplan)
    # As on Ubuntu's cloud images: networkd (with its socket, by Also=)
    # brings up what netplan generates from /etc/netplan, and its
    # wait-online service holds network-online.target until it has;
    # systemd-resolved's package enabled it and made /etc/resolv.conf its
    # stub. Debian's systemd leaves networkd disabled.
    systemctl --root="$mnt" enable systemd-networkd.service systemd-networkd-wait-online.service >&2
    # cloud-init renders netplan (/etc/netplan/50-cloud-init.yaml), and only
    # from a NoCloud seed disc. Two datasources besides None, so that
    # ds-identify looks for each and, finding neither (a clone booted with
    # a join seed alone), disables cloud-init, as a cloud image's long list
    # does: given one and None it enables cloud-init without looking, and a
    # cloud-init that finds no datasource renders its fallback for whatever
    # NIC the VM has. OpenStack is known by its DMI product name, which no
    # VM here has; ConfigDrive is not listed, so a config drive is left
    # alone as on the default disk.
    cat >"$mnt/etc/cloud/cloud.cfg.d/90-kubenode.cfg" <<'CFG'
datasource_list: [ NoCloud, OpenStack, None ]
system_info:
  network:
    renderers: [ netplan ]
CFG
    ;;
esac
truncate -s 0 "$mnt/etc/machine-id"
rm -f "$mnt"/etc/ssh/ssh_host_*
# sshd needs host keys: create them at boot when missing.
mkdir -p "$mnt/etc/systemd/system/ssh.service.d"
printf '[Service]\nExecStartPre=/usr/bin/ssh-keygen -A\n' >"$mnt/etc/systemd/system/ssh.service.d/10-hostkeys.conf"
kernel=$(cd "$mnt/boot" && ls vmlinuz-* | sort -V | tail -1)
initrd=$(cd "$mnt/boot" && ls initrd.img-* | sort -V | tail -1)
mkdir -p "$mnt/boot/extlinux"
cat >"$mnt/boot/extlinux/extlinux.conf" <<EXT
DEFAULT debian
TIMEOUT 1
SERIAL 0 115200
LABEL debian
  LINUX /boot/$kernel
  INITRD /boot/$initrd
  APPEND root=UUID=$uuid ro console=ttyS0,115200 net.ifnames=0
EXT
extlinux --install "$mnt/boot/extlinux" >/dev/null 2>&1
umount "$mnt"
losetup -d "$loop"
loop=""
dd if=/usr/lib/EXTLINUX/mbr.bin of="$raw" bs=440 count=1 conv=notrunc status=none

mkdir -p "$out_dir"
qemu-img convert -q -c -O qcow2 "$raw" "$out.tmp"
mv "$out.tmp" "$out"
log "built: $out ($(du -h "$out" | cut -f1))"
echo "$out"
