// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

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
	hostnameUnit       = units.LinuxHostnameServiceName + ".service"
	hostnameUnitPath   = "/etc/systemd/system/" + hostnameUnit
	hostnameScriptPath = "/usr/local/sbin/" + units.LinuxHostnameServiceName
	BuildHostnamesFile = "/etc/kubenode/build-hostname"
	// kernelHostname is the running host name, readable (and writable by
	// root) where hostname(1) is not installed.
	kernelHostname = "/proc/sys/kernel/hostname"
)

// hostnameUnitFile orders the rename after cloud-init's stages that
// set a host name (cloud-init-local, and the network stage under each of
// its releases' names; default dependencies put it after sysinit.target,
// by which systemd has made the machine ID), and before the joiner reads
// the name and the kubelet registers it. An After= on a unit that is not
// installed orders nothing.
const hostnameUnitFile = `[Unit]
Description=Give this VM a host name of its own when nothing else named it (kubenode)
Documentation=https://github.com/kubenode/packer-plugin-kubenode/blob/main/docs/bake.md
After=local-fs.target systemd-machine-id-commit.service cloud-init-local.service cloud-init-network.service cloud-init.service
Before=` + units.JoinerServiceName + `.service kubelet.service
ConditionPathExists=` + hostnameScriptPath + `

[Service]
Type=oneshot
ExecStart=` + hostnameScriptPath + `
RemainAfterExit=yes

[Install]
WantedBy=multi-user.target
`

// HostnameScript renames the VM to prefix + the first HostnameSuffixLen
// hex digits of /etc/machine-id when its host name is still one of the
// build's (BuildHostnamesFile), localhost or empty, through
// hostnamectl (or /etc/hostname and hostname(1), or the kernel's name,
// where hostnamectl fails),
// and has /etc/hosts resolve that name (127.0.1.1, as Debian's installer
// writes it). Any other name is left alone. Every run after the first
// changes nothing. prefix is a checked DNS label prefix (hostname_prefix).
func HostnameScript(prefix string) string { return string(render("hostname.sh.tmpl", prefix)) }

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
