// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build windows

package config

// DefaultCRISocket is containerd's named pipe.
const DefaultCRISocket = "npipe:////./pipe/containerd-containerd"

// DefaultPaths are the Windows locations. kubeadm's /etc/kubernetes and
// /var/lib/kubelet live on the system drive (C:\etc\kubernetes, ...).
func DefaultPaths() Paths {
	return Paths{
		Config:        `C:\ProgramData\kubenode\joiner.yaml`,
		SeedFile:      SeedFileWindows,
		KubeadmConfig: `C:\ProgramData\kubenode\kubeadm-join.yaml`,
		KubeletConf:   `C:\etc\kubernetes\kubelet.conf`,
		KubeadmFlags:  `C:\var\lib\kubelet\kubeadm-flags.env`,
		Hosts:         `C:\Windows\System32\drivers\etc\hosts`,
		Log:           `C:\ProgramData\kubenode\joiner.log`,
	}
}
