#!/usr/bin/env bash
# Builds a small installer-shaped ISO: hybrid install media that boot like
# real Windows/Linux install discs under both firmwares, and install the
# Debian 12 base disk's system (scripts/base-disk.sh) onto a virtual disk
# from a kernel + initramfs whose init is a busybox shell script
# (scripts/installer-iso/init). Cached by recipe: the path includes a hash of
# this file, every file under scripts/installer-iso/ and the base disk's path
# (which encodes the base disk's own recipe). Needs root (mount, losetup).
#
#   scripts/installer-iso.sh    builds if needed, prints the ISO's path;
#                               kubenode-installer.iso.sha256 (sha256sum
#                               format) lies beside it
#
# How the disc boots (configs in scripts/installer-iso/):
#
#   UEFI  El Torito EFI image -> GRUB (grub-mkstandalone) -> the disc's
#         /boot/grub/grub.cfg prints "Press any key to boot from CD or
#         DVD..." on screen and serial, waits 5 s: a key (space, letters,
#         digits, ...; not ESC) goes to the installer stage; no key boots
#         the first disk's \EFI\BOOT\BOOTX64.EFI (GRUB 2.06's `exit` would
#         return EFI_SUCCESS, after which OVMF opens its boot manager menu
#         rather than the next boot entry; see grub.cfg). The installer stage
#         (install.cfg) waits without timeout. Boot command, from power-on:
#
#           <spacebar><wait1s> repeated from power-on until a few seconds
#             after the prompt (under TCG the prompt appears ~5 s after
#             power-on; later spaces are ignored by the installer stage)
#           c<wait2s>install kubenode.seed=cidata<enter>
#
#         or, with GRUB's own commands after `c`:
#           linux /install/vmlinuz console=ttyS0,115200 kubenode.seed=cidata<enter>
#           initrd /install/initrd.img<enter>
#           boot<enter>
#
#   BIOS  isolinux: "boot:" prompt, default label `install`, 12 s timeout.
#         Boot command:   install kubenode.seed=cidata<enter>
#
# Without kubenode.seed= (the default entries, or a timeout) the installer
# prints "kubenode-installer: no kubenode.seed= on the kernel command line;
# not installing" and powers off. With it, it reads kubenode-install.conf
# (disk=/dev/vda, hostname=NAME) from the seed disc with that volume label,
# prints "kubenode-installer: install started", installs (MBR: p1 ESP FAT32
# with GRUB at /EFI/BOOT/BOOTX64.EFI, p2 ext4 root with extlinux), prints
# "kubenode-installer: install complete, rebooting" and reboots. The disk
# prints "kubenode-installed: booting from disk (bios)" or "(uefi)" on the
# serial console before it boots the installed kernel; cloud-init (NoCloud)
# then reads the same seed disc.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${KUBENODE_CACHE:-$HOME/.cache/kubenode}
FILES=$ROOT/scripts/installer-iso
LABEL=KUBENODE_INSTALL
# Kernel drivers the installer loads (with their dependencies): disks and
# discs on virtio, SATA (q35), IDE (i440fx), SCSI, NVMe; the file systems.
# ext4 with metadata_csum needs the crc32c crypto driver, which it does not
# depend on by symbol (mount fails with ENOENT without it).
MODULES="virtio_pci virtio_blk virtio_scsi ahci ata_piix nvme sd_mod sr_mod isofs squashfs loop crc32c_generic crc32c_intel ext4 vfat nls_cp437 nls_ascii nls_utf8"
# Host tools the initramfs carries (busybox lacks them or their features),
# with their shared libraries: host and installed system are both Debian 12.
HOST_TOOLS="sfdisk blkid mke2fs mkfs.fat extlinux"
# The root file system image: squashfs mounted by the installer's kernel.
# Measured under TCG, see the install times in the log lines.
SQUASHFS_COMP=(-comp lz4)

log() { printf '[installer-iso] %s\n' "$*" >&2; }

[ "$(id -u)" -eq 0 ] || { log "building the installer ISO needs root (losetup, mount; and scripts/base-disk.sh)"; exit 1; }
base=$(bash "$ROOT/scripts/base-disk.sh")
recipe=$( {
  sha256sum <"${BASH_SOURCE[0]}"
  (cd "$FILES" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
  echo "$base"
} | sha256sum | cut -c1-12)
out_dir=$CACHE/installer-iso/kubenode-installer-$recipe
out=$out_dir/kubenode-installer.iso

if [ -f "$out" ] && [ -f "$out.sha256" ]; then
  log "cached: $out"
  echo "$out"
  exit 0
fi
for tool in xorriso grub-mkstandalone mkfs.fat mmd mcopy mksquashfs cpio qemu-img losetup sfdisk depmod modprobe $HOST_TOOLS; do
  command -v "$tool" >/dev/null || { log "$tool missing: run scripts/setup.sh packages"; exit 1; }
done
for f in /bin/busybox /usr/lib/ISOLINUX/isolinux.bin /usr/lib/ISOLINUX/isohdpfx.bin \
  /usr/lib/syslinux/modules/bios/ldlinux.c32 /usr/lib/EXTLINUX/mbr.bin; do
  [ -f "$f" ] || { log "$f missing: run scripts/setup.sh packages"; exit 1; }
done
# Debian's busybox package is dynamic; busybox-static replaces /bin/busybox.
if ldd /bin/busybox >/dev/null 2>&1; then
  log "/bin/busybox is not static: install busybox-static (scripts/setup.sh packages)"
  exit 1
fi

work=$(mktemp -d /var/tmp/kubenode-installer.XXXXXX)
mnt=$work/base
loop=""
cleanup() {
  set +e
  mountpoint -q "$mnt" && umount "$mnt"
  [ -n "$loop" ] && losetup -d "$loop"
  rm -rf "$work" "$out_dir.tmp.$$"
}
trap cleanup EXIT
start=$SECONDS

log "base disk $base: attaching its root file system read-only"
qemu-img convert -O raw "$base" "$work/base.raw"
start_sector=$(sfdisk --dump "$work/base.raw" | sed -n 's/.*start= *\([0-9]*\),.*bootable.*/\1/p' | head -n 1)
[ -n "$start_sector" ] || { log "no bootable partition in $base"; exit 1; }
# losetup -P makes no partition devices on some hosts: attach by offset.
loop=$(losetup --find --show --read-only --offset $((start_sector * 512)) "$work/base.raw")
mkdir -p "$mnt"
mount -o ro,noload "$loop" "$mnt"
kver=$(ls "$mnt/lib/modules" | sort -V | tail -n 1)
[ -f "$mnt/boot/vmlinuz-$kver" ] || { log "no /boot/vmlinuz-$kver in the base disk"; exit 1; }

iso=$work/iso
mkdir -p "$iso/.disk" "$iso/install" "$iso/isolinux" "$iso/boot/grub"
echo "kubenode installer (Debian 12, kernel $kver), recipe $recipe" >"$iso/.disk/kubenode-installer"
cp "$mnt/boot/vmlinuz-$kver" "$iso/install/vmlinuz"

log "root file system image (squashfs ${SQUASHFS_COMP[*]})"
# The base disk's extlinux files belong to its own disk; the installer
# writes its own.
mksquashfs "$mnt" "$iso/install/rootfs.squashfs" "${SQUASHFS_COMP[@]}" -no-xattrs -noappend -quiet -no-progress \
  -e boot/extlinux -e lost+found >/dev/null

log "initramfs: busybox init, $HOST_TOOLS, drivers for kernel $kver"
ird=$work/initramfs
mkdir -p "$ird"/{bin,sbin,usr/bin,usr/sbin,etc,lib/modules,usr/lib/EXTLINUX,proc,sys,dev,tmp,run}
cp /bin/busybox "$ird/bin/busybox"
for applet in $(/bin/busybox --list); do
  [ -e "$ird/bin/$applet" ] || ln -s busybox "$ird/bin/$applet"
done
for tool in $HOST_TOOLS; do
  path=$(command -v "$tool")
  cp -L "$path" "$ird/usr/sbin/$tool"
  for lib in $(ldd "$path" | grep -o '/[^ ]*'); do
    [ -e "$ird$lib" ] || { mkdir -p "$ird$(dirname "$lib")"; cp -L "$lib" "$ird$lib"; }
  done
done
ln -s mke2fs "$ird/usr/sbin/mkfs.ext4"
cp /etc/mke2fs.conf "$ird/etc/mke2fs.conf"
cp /usr/lib/EXTLINUX/mbr.bin "$ird/usr/lib/EXTLINUX/mbr.bin"
for m in $MODULES; do
  modprobe -d "$mnt" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
done | sort -u | while read -r ko; do
  rel=${ko#"$mnt"}
  mkdir -p "$ird$(dirname "$rel")"
  cp "$ko" "$ird$rel"
done
cp "$mnt/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} "$ird/lib/modules/$kver/"
depmod -b "$ird" "$kver"
echo "$MODULES" >"$ird/etc/kubenode-installer-modules"
install -m 0755 "$FILES/init" "$ird/init"
(cd "$ird" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet | gzip -9) >"$iso/install/initrd.img"

log "EFI loaders (grub-mkstandalone): the disc's and the installed disk's"
grub_standalone() {
  # All modules: probing a device makes GRUB try every file system module.
  grub-mkstandalone -O x86_64-efi -o "$1" \
    --modules="part_msdos part_gpt iso9660 fat ext2" --locales= --fonts= --themes= \
    "boot/grub/grub.cfg=$2"
}
grub_standalone "$work/cd-bootx64.efi" "$FILES/grub-embed.cfg"
grub_standalone "$iso/install/disk-bootx64.efi" "$FILES/disk-grub-embed.cfg"
efi_kib=$(( $(stat -c %s "$work/cd-bootx64.efi") / 1024 + 512 ))
mkfs.fat -C -n EFIBOOT "$iso/boot/efi.img" "$efi_kib" >/dev/null
mmd -i "$iso/boot/efi.img" ::/EFI ::/EFI/BOOT ::/.disk
mcopy -i "$iso/boot/efi.img" "$work/cd-bootx64.efi" ::/EFI/BOOT/BOOTX64.EFI
# Tells grub.cfg's no-key entry that this loader is the disc's own.
echo "kubenode installer EFI boot image" >"$work/efi-marker"
mcopy -i "$iso/boot/efi.img" "$work/efi-marker" ::/.disk/kubenode-installer-efi
cp "$FILES/grub.cfg" "$FILES/install.cfg" "$iso/boot/grub/"

log "isolinux (BIOS)"
cp /usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32 "$iso/isolinux/"
cp "$FILES/isolinux.cfg" "$iso/isolinux/isolinux.cfg"

umount "$mnt"
losetup -d "$loop"
loop=""
rm -f "$work/base.raw"

log "hybrid ISO (xorriso): isolinux El Torito + EFI El Torito image, label $LABEL"
xorriso -as mkisofs -quiet -o "$work/kubenode-installer.iso" -V "$LABEL" -J -joliet-long -r \
  -isohybrid-mbr /usr/lib/ISOLINUX/isohdpfx.bin \
  -c isolinux/boot.cat -b isolinux/isolinux.bin -no-emul-boot -boot-load-size 4 -boot-info-table \
  -eltorito-alt-boot -e boot/efi.img -no-emul-boot -isohybrid-gpt-basdat \
  "$iso" 2>"$work/xorriso.log" || { cat "$work/xorriso.log" >&2; exit 1; }
(cd "$work" && sha256sum kubenode-installer.iso >kubenode-installer.iso.sha256)

mkdir -p "$out_dir.tmp.$$"
mv "$work/kubenode-installer.iso" "$work/kubenode-installer.iso.sha256" "$out_dir.tmp.$$/"
rm -rf "$out_dir"
mv "$out_dir.tmp.$$" "$out_dir"
# Discs of older recipes are half a gigabyte each: keep only this one.
for old in "$CACHE"/installer-iso/kubenode-installer-*; do
  [ "$old" = "$out_dir" ] || case $old in *.tmp.*) ;; *) rm -rf "$old" ;; esac
done
log "built in $((SECONDS - start)) s: $out ($(du -h "$out" | cut -f1))"
echo "$out"
