package linux

import (
	"fmt"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
)

// A clone's own host name. A VM made from a generalized image boots with
// the build's host name (/etc/hostname) unless something names it: a
// cloud-init seed (NoCloud local-hostname, a config drive) or the user.
// Without one, every clone would have the same name, and so would the
// nodes the joiner registers (its node name defaults to the host name).
// generalize records the build's names and installs a oneshot unit that,
// on every boot, after cloud-init has had its chance and before the joiner
// and the kubelet start, renames a clone still called by a build name (or
// by localhost, or nothing) to HostnamePrefix followed by the first 12 hex
// digits of its machine ID (generalize empties /etc/machine-id, so each
// clone's systemd makes a new one at its first boot). A name anyone else
// gave is left alone. bootstrap = "cluster-api" images have none: their
// datasource always names the VM (Cluster API's machine name).

// DefaultHostnamePrefix is hostname_prefix's default.
const DefaultHostnamePrefix = "kubenode-"

// HostnameSuffixLen is how many hex digits of the machine ID follow the
// prefix: the name is at most 63 characters, a DNS label.
const HostnameSuffixLen = 12

// Where generalize leaves the clone-naming unit and what it reads.
const (
	linuxHostnameUnit       = units.LinuxHostnameServiceName + ".service"
	linuxHostnameUnitPath   = "/etc/systemd/system/" + linuxHostnameUnit
	linuxHostnameScript     = "/usr/local/sbin/" + units.LinuxHostnameServiceName
	LinuxBuildHostnamesFile = "/etc/kubenode/build-hostname"
	// linuxKernelHostname is the running host name, readable (and
	// writable by root) where hostname(1) is not installed.
	linuxKernelHostname = "/proc/sys/kernel/hostname"
)

// linuxHostnameUnitFile orders the rename after cloud-init's stages that
// set a host name (cloud-init-local, and the network stage under each of
// its releases' names; default dependencies put it after sysinit.target,
// by which systemd has made the machine ID), and before the joiner reads
// the name and the kubelet registers it. An After= on a unit that is not
// installed orders nothing.
const linuxHostnameUnitFile = `[Unit]
Description=Give this VM a host name of its own when nothing else named it (kubenode)
Documentation=https://github.com/kubenode/packer-plugin-kubenode/blob/main/docs/bake.md
After=local-fs.target systemd-machine-id-commit.service cloud-init-local.service cloud-init-network.service cloud-init.service
Before=` + units.JoinerServiceName + `.service kubelet.service
ConditionPathExists=` + linuxHostnameScript + `

[Service]
Type=oneshot
ExecStart=` + linuxHostnameScript + `
RemainAfterExit=yes

[Install]
WantedBy=multi-user.target
`

// HostnameScript renames the VM to prefix + the first HostnameSuffixLen
// hex digits of /etc/machine-id when its host name is still one of the
// build's (LinuxBuildHostnamesFile), localhost or empty, through
// hostnamectl (or /etc/hostname and hostname(1), or the kernel's name,
// where hostnamectl fails),
// and has /etc/hosts resolve that name (127.0.1.1, as Debian's installer
// writes it). Any other name is left alone. Every run after the first
// changes nothing. prefix is a checked DNS label prefix (hostname_prefix).
func HostnameScript(prefix string) string {
	s := &sh{}
	s.line("#!/bin/sh")
	s.line("# kubenode: give this VM a host name of its own at boot, unless something else named it. Generated; do not edit.")
	s.line("set -u")
	s.line("prefix=%s", q(prefix))
	s.line(`current=$(cat %s 2>/dev/null) || current=`, linuxKernelHostname)
	s.line(`mid=$(head -c %d /etc/machine-id 2>/dev/null) || mid=`, HostnameSuffixLen)
	s.line(`case $mid in`)
	s.line(`  *[!0-9a-f]*|'') mid= ;;`)
	s.line(`esac`)
	s.line(`if [ ${#mid} -ne %d ]; then echo "kubenode-hostname: /etc/machine-id holds no machine ID yet: the host name ${current:-(none)} is left as it is" >&2; exit 0; fi`, HostnameSuffixLen)
	s.line(`name=$prefix$mid`)
	s.line(`unnamed() { # the VM still has a build's name, localhost or none`)
	s.line(`  case $current in`)
	s.line(`    ''|'(none)'|localhost|localhost.localdomain) return 0 ;;`)
	s.line(`  esac`)
	s.line(`  [ -f %s ] && grep -qxF -- "$current" %s`, LinuxBuildHostnamesFile, LinuxBuildHostnamesFile)
	s.line(`}`)
	s.line(`if [ "$current" = "$name" ]; then`)
	s.line(`  echo "kubenode-hostname: $name: this VM's name already"`)
	s.line(`elif unnamed; then`)
	s.line(`  if hostnamectl set-hostname "$name" 2>/dev/null; then :; else printf '%%s\n' "$name" > /etc/hostname; hostname "$name" 2>/dev/null || printf '%%s' "$name" > %s; fi`, linuxKernelHostname)
	s.line(`  echo "kubenode-hostname: ${current:-(none)} -> $name (no cloud-init seed or user named this VM; hostname_prefix $prefix + machine ID)"`)
	s.line(`else`)
	s.line(`  echo "kubenode-hostname: $current: named by cloud-init or the user; left as it is"`)
	s.line(`  exit 0`)
	s.line(`fi`)
	s.line(`# The name resolves (sudo, kubeadm): 127.0.1.1, as Debian's installer has it.`)
	s.line(`if grep -Eq "^[^#]*[[:space:]]$name([[:space:]]|\$)" /etc/hosts 2>/dev/null; then exit 0; fi`)
	s.line(`if grep -q '^127\.0\.1\.1[[:space:]]' /etc/hosts 2>/dev/null; then`)
	s.line(`  sed -i "s/^127\.0\.1\.1[[:space:]].*/127.0.1.1 $name/" /etc/hosts`)
	s.line(`else`)
	s.line(`  printf '127.0.1.1 %%s\n' "$name" >> /etc/hosts`)
	s.line(`fi`)
	s.line(`echo "kubenode-hostname: /etc/hosts: 127.0.1.1 $name"`)
	return s.b.String()
}

// linuxCloneHostname is generalize's part: the build's names recorded (its
// host name and /etc/hostname), the script and the unit installed and
// enabled. Run again, it changes nothing.
func linuxCloneHostname(s *sh, prefix string) {
	s.line("names=$(cat %s /etc/hostname 2>/dev/null | tr -d ' \\t' | grep -v '^$' | sort -u)", linuxKernelHostname)
	s.line(`if [ -f %[1]s ] && [ "$(cat %[1]s)" = "$names" ]; then echo 'ok: %[1]s'; else mkdir -p "$(dirname %[1]s)"; printf '%%s\n' "$names" > %[1]s; chmod 0644 %[1]s; echo "changed: %[1]s: $(echo $names) (a VM still called so is renamed at boot)"; fi`, LinuxBuildHostnamesFile)
	s.file(linuxHostnameScript, "0755", HostnameScript(prefix), "")
	s.file(linuxHostnameUnitPath, "0644", linuxHostnameUnitFile, "systemctl daemon-reload")
	s.line("if systemctl is-enabled -q %s; then echo 'ok: %s enabled'; else systemctl enable -q %s; echo %s; fi",
		linuxHostnameUnit, linuxHostnameUnit, linuxHostnameUnit, q("changed: "+linuxHostnameUnit+" enabled: a VM from this image that nothing names is called "+prefix+"<machine ID>"))
}

// linuxRemoveCloneHostname removes what an earlier bake's generalize left
// (bootstrap = "cluster-api": the datasource names every VM).
func linuxRemoveCloneHostname(s *sh) {
	s.line("if [ -e %[1]s ] || [ -e %[2]s ] || [ -e %[3]s ]; then systemctl disable -q %[4]s 2>/dev/null || true; rm -f %[1]s %[2]s %[3]s; systemctl daemon-reload; echo %[5]s; else echo %[6]s; fi",
		linuxHostnameUnitPath, linuxHostnameScript, LinuxBuildHostnamesFile, linuxHostnameUnit,
		q("changed: "+linuxHostnameUnit+" removed (cloud-init names each VM from its datasource)"), q("ok: no "+linuxHostnameUnit))
}

// CheckHostnamePrefix says why prefix cannot start a VM's host name, or
// "": prefix + HostnameSuffixLen hex digits must be a DNS-1123 label
// (lowercase letters, digits and '-', starting with a letter or digit, at
// most 63 characters), which every resolver, kubeadm and the kubelet take.
func CheckHostnamePrefix(prefix string) string {
	if max := 63 - HostnameSuffixLen; len(prefix) > max {
		return fmt.Sprintf("%q is %d characters; at most %d, so that it and the %d hex digits of the machine ID after it make a host name of at most 63", prefix, len(prefix), max, HostnameSuffixLen)
	}
	for i, r := range prefix {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case r == '-' && i > 0:
		case r == '-':
			return fmt.Sprintf("%q starts with '-': a host name starts with a lowercase letter or digit", prefix)
		default:
			return fmt.Sprintf("%q holds %q: a host name (a DNS-1123 label) has lowercase letters a-z, digits and '-' only", prefix, r)
		}
	}
	return ""
}
