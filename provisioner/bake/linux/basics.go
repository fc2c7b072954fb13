package linux

import (
	"path"
	"slices"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// selfCheck is what the Linux self-check expects of the guest.
func (p Plan) selfCheck() node.SelfCheck {
	return node.SelfCheck{
		KubernetesVersion:    p.KubernetesVersion,
		ContainerdVersion:    p.ContainerdVersion,
		CrictlVersion:        p.CrictlVersion,
		Joiner:               len(p.JoinerConfig) > 0,
		ClusterAPI:           p.clusterAPI(),
		BridgeCNI:            p.CNI == "bridge",
		Images:               append(slices.Clone(p.CheckImages), p.Images.Refs()...),
		CloudInitDatasources: p.CloudInitDatasources,
	}
}

// Time sync units, in the order the bake prefers an installed one: Debian's
// chrony.service (chronyd.service is its alias there, Fedora's unit), the
// ntpsec and ntp daemons, systemd-timesyncd.
const linuxTimeSyncUnits = "chrony.service chronyd.service ntpsec.service ntp.service ntpd.service systemd-timesyncd.service"

// Where the root-growing unit goes on a guest without cloud-init.
const (
	linuxGrowrootUnit     = "kubenode-growroot.service"
	linuxGrowrootUnitPath = "/etc/systemd/system/" + linuxGrowrootUnit
	linuxGrowrootScript   = "/usr/local/sbin/kubenode-growroot"
)

// shCloudInitGrowsRoot defines cloudinit_grows_root, which prints why
// cloud-init would not grow the root (and fails) or nothing: its growpart
// module must be listed in cloud.cfg (Debian's lists growpart and resizefs
// in cloud_init_modules), and neither `growpart: mode: off` nor
// `resize_rootfs: false` set in cloud.cfg or cloud.cfg.d.
const shCloudInitGrowsRoot = `cloudinit_grows_root() { # prints why cloud-init would not grow the root, and fails
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
}`

// linuxNodeBasics installs and enables time sync and makes the root grow
// to the disk of every VM made from the image.
func linuxNodeBasics(p Plan) []byte {
	s := newSh("node basics: time sync, the root file system growing to the disk")
	for _, kv := range proxyEnv(p.Proxy) {
		s.line("export %s", q(kv))
	}
	s.line(`pkg_install() { # pkg_install APT-PACKAGE DNF-PACKAGE`)
	s.line(`  if command -v apt-get >/dev/null; then`)
	s.line(`    echo "changed: installing $1"`)
	s.line(`    %[1]s install -y -qq --no-install-recommends "$1" >/dev/null 2>&1 || { %[1]s update -qq && %[1]s install -y -qq --no-install-recommends "$1" >/dev/null; }`, aptGet(p.SettleTimeout))
	s.line(`  elif command -v dnf >/dev/null; then`)
	s.line(`    echo "changed: installing $2"; dnf install -y -q "$2"`)
	s.line(`  else`)
	s.line(`    echo "no apt-get or dnf on this guest: install $1 yourself" >&2; exit 1`)
	s.line(`  fi`)
	s.line(`}`)
	s.line("# Time sync: the installed daemon, else systemd-timesyncd (apt) or chrony (dnf).")
	s.line("unit=''")
	s.line("for u in %s; do", linuxTimeSyncUnits)
	s.line(`  if [ -z "$unit" ] && systemctl cat "$u" >/dev/null 2>&1; then unit=$u; fi`)
	s.line("done")
	s.line(`if [ -z "$unit" ]; then`)
	s.line("  pkg_install systemd-timesyncd chrony")
	s.line("  if command -v apt-get >/dev/null; then unit=systemd-timesyncd.service; else unit=chronyd.service; fi")
	s.line("fi")
	s.line(`if systemctl is-enabled -q "$unit"; then echo "ok: time sync: $unit enabled"; else systemctl enable -q "$unit"; echo "changed: time sync: $unit enabled"; fi`)
	s.line(`systemctl is-active -q "$unit" || systemctl start "$unit" || echo "note: $unit did not start now; it starts at boot"`)
	s.line("# The root grows to each new VM's disk: growpart for cloud-init's growpart and")
	s.line("# resizefs modules (without it cloud-init logs \"unable to find resizer\").")
	s.line("if command -v growpart >/dev/null; then echo 'ok: growpart installed'; else pkg_install cloud-guest-utils cloud-utils-growpart; fi")
	s.line("%s", shCloudInitGrowsRoot)
	s.line("if command -v cloud-init >/dev/null; then")
	s.line(`  if why=$(cloudinit_grows_root); then echo "ok: cloud-init grows the root on each new VM's boot (growpart, resizefs)"; else echo "note: the root will not grow: $why"; fi`)
	s.line("else")
	s.line("  # No cloud-init: a oneshot unit grows the root partition and file system at boot.")
	s.file(linuxGrowrootScript, "0755", GrowrootScript, "")
	s.file(linuxGrowrootUnitPath, "0644", linuxGrowrootUnitFile, "systemctl daemon-reload")
	s.line("  if systemctl is-enabled -q %s; then echo 'ok: %s enabled'; else systemctl enable -q %s; echo 'changed: %s enabled'; fi",
		linuxGrowrootUnit, linuxGrowrootUnit, linuxGrowrootUnit, linuxGrowrootUnit)
	s.line("fi")
	return s.bytes()
}

// GrowrootScript grows the root partition to the end of its disk
// (growpart exits 1 when there is nothing to grow) and then its file
// system. A root that is not a partition (LVM, a whole disk) is left alone.
const GrowrootScript = `#!/bin/sh
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
`

const linuxGrowrootUnitFile = `[Unit]
Description=Grow the root partition and file system to the disk (kubenode)
After=local-fs.target
ConditionPathExists=` + linuxGrowrootScript + `

[Service]
Type=oneshot
ExecStart=` + linuxGrowrootScript + `

[Install]
WantedBy=multi-user.target
`

// linuxCrictl installs crictl from its release tarball as /usr/bin/crictl
// (the containerd step writes /etc/crictl.yaml) and checks its version.
func linuxCrictl(p Plan) []byte {
	s := newSh("crictl " + p.CrictlVersion)
	tarball := q(path.Join(p.Staging, p.CrictlTarball))
	bin := linuxBinDir + "/crictl"
	s.line("if [ -x %s ] && tar -xzf %s -O crictl | cmp -s - %s; then echo 'ok: crictl'; else", bin, tarball, bin)
	s.line("  tmp=$(mktemp); tar -xzf %s -O crictl > \"$tmp\"; install -m 0755 \"$tmp\" %s; rm -f \"$tmp\"; echo 'changed: crictl installed'", tarball, bin)
	s.line("fi")
	s.line("v=$(%s --version 2>/dev/null | awk 'NR == 1 { print $NF }') || v=", bin)
	s.line(`if [ "$v" != %s ]; then`, q(p.CrictlVersion))
	s.line(`  echo %s"${v:-no version}"%s >&2`, q("crictl_version is "+p.CrictlVersion+" but the crictl from "+p.CrictlTarball+" reports "),
		q(": give the crictl of "+p.CrictlVersion+" (artifacts.crictl or artifacts_dir), or set crictl_version to its version"))
	s.line("  exit 1")
	s.line("fi")
	s.line("echo %s", q("ok: crictl is "+p.CrictlVersion))
	return s.bytes()
}
