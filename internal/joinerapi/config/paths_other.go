// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !windows

package config

// DefaultCRISocket is containerd's socket.
const DefaultCRISocket = "unix:///run/containerd/containerd.sock"

// DefaultPaths are the Linux locations, matching kubeadm's.
func DefaultPaths() Paths {
	return Paths{
		Config:        "/etc/kubenode/joiner.yaml",
		SeedFile:      SeedFileLinux,
		KubeadmConfig: "/etc/kubenode/kubeadm-join.yaml",
		KubeletConf:   "/etc/kubernetes/kubelet.conf",
		KubeadmFlags:  "/var/lib/kubelet/kubeadm-flags.env",
		Hosts:         "/etc/hosts",
		Log:           "/var/log/kubenode-joiner.log",
		SeedDevices:   []string{"/dev/sr*", "/dev/vd*", "/dev/sd*", "/dev/xvd*"},
	}
}
