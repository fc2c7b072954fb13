// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package units describes how the joiner and the kubelet run as services:
// the joiner's systemd unit (Linux) and the Windows service command lines of
// the joiner and the kubelet. kubenode-bake installs them; the joiner itself
// re-registers the kubelet on Windows after kubeadm join. Everything here is
// pure: it returns text and argument lists.
package units

import "fmt"

// JoinerServiceName is the joiner's service on both OSes (kubenode-joiner.service
// on Linux). autounattend's first-boot commands enable it by this name.
const JoinerServiceName = "kubenode-joiner"

// LinuxHostnameServiceName is the unit (kubenode-hostname.service) that
// kubenode-bake's generalize installs on Linux: at boot it gives a VM that
// nothing else named (no cloud-init seed, no user) a host name of its own.
// The joiner's unit runs after it, so that the node name, which defaults
// to the host name, is the VM's own.
const LinuxHostnameServiceName = "kubenode-hostname"

// Linux locations kubenode-bake installs the joiner to.
const (
	LinuxJoinerPath = "/usr/local/bin/kubenode-joiner"
	LinuxUnitPath   = "/etc/systemd/system/" + JoinerServiceName + ".service"
)

// SystemdUnit is the joiner's first-boot unit. It runs until the node has
// joined: once kubeadm has written kubelet.conf the condition keeps it from
// starting again, and the joiner also disables it after a successful join.
// It runs after LinuxHostnameServiceName (when installed: After= alone
// pulls nothing in), so the default node name is the VM's own host name.
func SystemdUnit(kubeletConf string) string {
	return fmt.Sprintf(`[Unit]
Description=kubenode joiner: join this node to its Kubernetes cluster (first boot)
Documentation=https://github.com/kubenode/packer-plugin-kubenode/blob/main/docs/joiner.md
Wants=network-online.target
After=network-online.target containerd.service %s.service
ConditionPathExists=!%s

[Service]
Type=oneshot
ExecStart=%s join
RemainAfterExit=yes
Restart=on-failure
RestartSec=30s

[Install]
WantedBy=multi-user.target
`, LinuxHostnameServiceName, kubeletConf, LinuxJoinerPath)
}
