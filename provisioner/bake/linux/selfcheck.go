package linux

import (
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// SelfCheck renders the Linux self-check.
func SelfCheck(c node.SelfCheck) []byte {
	s := &sh{}
	s.line("#!/bin/sh")
	s.line("# kubenode-bake: self-check of the baked guest. Generated from typed configuration; do not edit.")
	s.line("# Every check runs; each problem is printed as \"problem: ...\"; the script fails when there is one.")
	s.line("set -u")
	// containerd's tarball installs to /usr/local/bin, which a sudo PATH may lack.
	s.line(`export LC_ALL=C PATH="${PATH:+$PATH:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"`)
	s.line("problems=0")
	s.line(`problem() { echo "problem: $*"; problems=$((problems + 1)); }`)
	s.line(`enabled() { # enabled UNIT: starts at boot`)
	s.line(`  st=$(systemctl is-enabled "$1" 2>/dev/null) || true`)
	s.line(`  if [ "$st" = enabled ]; then echo "ok: $1 enabled"; else problem "$1 is not enabled to start at boot (systemctl is-enabled: ${st:-no such unit})"; fi`)
	s.line(`}`)
	s.line(`active() { # active UNIT: running now`)
	s.line(`  st=$(systemctl is-active "$1" 2>/dev/null) || true`)
	s.line(`  if [ "$st" = active ]; then echo "ok: $1 active"; else problem "$1 is not running (systemctl is-active: ${st:-unknown}; see journalctl -u $1)"; fi`)
	s.line(`}`)
	s.line(`module() { # module NAME: loaded now and listed for boot`)
	s.line(`  if [ -d "/sys/module/$1" ]; then echo "ok: module $1 loaded"; else problem "kernel module $1 is not loaded"; fi`)
	s.line(`  if cat /etc/modules-load.d/*.conf /run/modules-load.d/*.conf /usr/lib/modules-load.d/*.conf /etc/modules 2>/dev/null | grep -qx "[[:space:]]*$1[[:space:]]*"; then echo "ok: module $1 loaded at boot"; else problem "kernel module $1 is not loaded at boot (no modules-load.d file lists it)"; fi`)
	s.line(`}`)
	s.line(`sysctl_is() { # sysctl_is KEY VALUE: now and at boot`)
	s.line(`  v=$(sysctl -n "$1" 2>/dev/null) || v=`)
	s.line(`  if [ "$v" = "$2" ]; then echo "ok: $1 = $2"; else problem "sysctl $1 is ${v:-unset}, want $2"; fi`)
	s.line(`  if cat /usr/lib/sysctl.d/*.conf /run/sysctl.d/*.conf /etc/sysctl.d/*.conf /etc/sysctl.conf 2>/dev/null | awk -F= -v k="$1" -v w="$2" '{ gsub(/[[:space:]]/, "") } $1 == k { v = $2 } END { exit v != w }'; then echo "ok: $1 = $2 at boot"; else problem "sysctl $1 = $2 is not set for boot (in /etc/sysctl.d)"; fi`)
	s.line(`}`)
	s.line(`version_is() { # version_is NAME WANT COMMAND...: the last word of the command's first line`)
	s.line(`  what=$1; want=$2; shift 2`)
	s.line(`  v=$("$@" 2>/dev/null | awk 'NR == 1 { print $NF }') || v=`)
	s.line(`  if [ "$v" = "$want" ]; then echo "ok: $what $want"; else problem "$what reports ${v:-no version} ($*), want $want"; fi`)
	s.line(`}`)
	s.line("%s", shCloudInitGrowsRoot)
	s.line("")

	s.line("# Services")
	services := []string{"containerd", "kubelet"}
	if c.Joiner {
		services = append(services, units.JoinerServiceName)
	}
	for _, u := range services {
		s.line("enabled %s", q(u))
	}
	s.line("active containerd")
	s.line("# Kernel and swap (the kubelet's and kube-proxy's needs)")
	for _, m := range []string{"overlay", "br_netfilter"} {
		s.line("module %s", m)
	}
	for _, k := range []string{"net.ipv4.ip_forward", "net.bridge.bridge-nf-call-iptables"} {
		s.line("sysctl_is %s 1", k)
	}
	s.line(`if [ "$(wc -l < /proc/swaps)" -le 1 ]; then echo 'ok: swap off'; else problem "swap is on ($(tail -n +2 /proc/swaps | awk '{ print $1 }' | tr '\n' ' ')): the kubelet does not start with swap"; fi`)
	s.line(`if grep -Eq '^[^#].*[[:space:]]swap[[:space:]]' /etc/fstab; then problem 'swap is in /etc/fstab: it comes back at boot'; fi`)
	s.line("# Versions")
	want := c.KubernetesVersion
	s.line("version_is kubelet %s kubelet --version", q(want))
	s.line("version_is kubeadm %s kubeadm version -o short", q(want))
	s.line("version_is kubectl %s kubectl version --client", q(want))
	if c.ContainerdVersion != "" {
		// `containerd --version`: "containerd <module> vX.Y.Z <commit>".
		s.line("v=$(containerd --version 2>/dev/null | awk 'NR == 1 { print $3 }') || v=")
		s.line(`if [ "$v" = %s ]; then echo %s; else problem "containerd reports ${v:-no version}, want %s"; fi`,
			q("v"+c.ContainerdVersion), q("ok: containerd v"+c.ContainerdVersion), c.ContainerdVersion)
	}
	s.line("# containerd answers")
	if c.CrictlVersion != "" {
		s.line("version_is crictl %s crictl --version", q(c.CrictlVersion))
		s.line(`if out=$(crictl info 2>&1); then echo 'ok: containerd answers crictl info (/etc/crictl.yaml: unix:///run/containerd/containerd.sock)'; else problem "containerd does not answer crictl info: $(printf '%%s' "$out" | tail -n 1)"; fi`)
	} else {
		s.line(`if out=$(ctr version 2>&1); then echo 'ok: containerd answers ctr version (crictl not installed: install_crictl = false)'; else problem "containerd does not answer ctr version: $(printf '%%s' "$out" | tail -n 1)"; fi`)
	}
	if c.BridgeCNI {
		s.line("# CNI plugins of the bridge config")
		s.line("for p in bridge host-local loopback; do")
		s.line(`  if [ -x %s/"$p" ]; then echo "ok: CNI plugin $p"; else problem "CNI plugin $p is not in %s (cni = bridge needs it)"; fi`, linuxCNIBinDir, linuxCNIBinDir)
		s.line("done")
	}
	s.line("# Time sync")
	s.line("sync=''")
	s.line("for u in %s; do", linuxTimeSyncUnits)
	s.line(`  if [ -z "$sync" ] && [ "$(systemctl is-enabled "$u" 2>/dev/null)" = enabled ]; then sync=$u; fi`)
	s.line("done")
	s.line(`if [ -n "$sync" ]; then echo "ok: time sync: $sync enabled"; else problem "no time sync service is enabled (chrony, ntp or systemd-timesyncd)"; fi`)
	s.line("# The root grows to each new VM's disk")
	s.line("if ! command -v growpart >/dev/null; then")
	s.line(`  problem "growpart is not installed: the root does not grow to a new VM's disk (Debian: cloud-guest-utils, Fedora: cloud-utils-growpart)"`)
	s.line("elif command -v cloud-init >/dev/null; then")
	s.line(`  if why=$(cloudinit_grows_root); then echo "ok: cloud-init grows the root (growpart, resizefs)"; else problem "the root does not grow to a new VM's disk: $why"; fi`)
	s.line("else")
	s.line("  enabled %s", linuxGrowrootUnit)
	s.line("fi")
	if c.ClusterAPI {
		linuxClusterAPISelfCheck(s, c)
	}
	if len(c.Images) > 0 {
		s.line("# Preloaded images")
		s.line("if images=$(ctr -n k8s.io images ls -q 2>&1); then")
		s.line("  for i in %s; do", shWords(node.NormalizedImages(c.Images)))
		s.line(`    if printf '%%s\n' "$images" | grep -qxF "$i"; then echo "ok: image $i"; else problem "image $i is not in containerd (ctr -n k8s.io images ls)"; fi`)
		s.line("  done")
		s.line("else")
		s.line(`  problem "ctr -n k8s.io images ls failed: $images"`)
		s.line("fi")
	}
	s.line(`if [ "$problems" -gt 0 ]; then echo "self-check: $problems problems" >&2; exit 1; fi`)
	s.line("echo 'ok: self-check passed'")
	return s.bytes()
}

func shWords(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = q(v)
	}
	return strings.Join(quoted, " ")
}
