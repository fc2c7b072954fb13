// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"errors"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/windows"
)

// guestRule is a setting one guest OS refuses, with the one message that
// says so: Prepare checks it when guest_os_type names the OS, Provision
// once the guest is found to run it.
type guestRule struct {
	refusedOn string // "linux" or "windows"
	set       func(*Config) bool
	msg       string
}

// guestRules are the settings each guest OS refuses.
var guestRules = []guestRule{
	{"windows", func(c *Config) bool { return c.KeepBuildAccount },
		`keep_build_account: Windows' generalize keeps the built-in Administrator (clone_admin_password) and disables any other build account; remove keep_build_account for a Windows guest`},
	{"windows", func(c *Config) bool { return c.HostnamePrefix != "" },
		`hostname_prefix: Linux's clone naming; Windows' sysprep gives each VM its own name; remove hostname_prefix for a Windows guest`},
	{"windows", func(c *Config) bool { return c.PullKubeadmImages },
		`pull_kubeadm_images: kubeadm's images are the Linux control plane's, which a Windows node never runs; remove pull_kubeadm_images for a Windows guest (preload the pause image with images or pull_images)`},
	{"windows", func(c *Config) bool { return c.KubeadmImages != "" },
		`kubeadm_images: kubeadm's images are the Linux control plane's, which a Windows node never runs; remove kubeadm_images for a Windows guest (preload the pause image with images or pull_images)`},
	{"windows", func(c *Config) bool { return c.CNI == "bridge" }, windows.NoCNIBridge},
	{"windows", func(c *Config) bool { return c.ContainerdSource == "package" }, windows.NoContainerdPackage},
	// Each OS's bootstrap data has its own key: cloud-init's datasources
	// are Linux's, cloudbase-init's metadata services Windows'. Only the
	// datasources the user set count, not the default Prepare fills in.
	{"windows", func(c *Config) bool { return c.Bootstrap == node.BootstrapClusterAPI && c.cloudInitDatasourcesSet },
		`cloud_init_datasources: Linux-only (cloud-init's datasources); a Windows guest gets cloudbase-init: remove cloud_init_datasources, and set cloudbase_init_metadata_services if the default (config drive, then NoCloud) does not fit`},
	{"linux", func(c *Config) bool {
		return c.Bootstrap == node.BootstrapClusterAPI && len(c.CloudbaseInitMetadataServices) > 0
	},
		`cloudbase_init_metadata_services: Windows-only (cloudbase-init's metadata services); a Linux guest gets cloud-init: remove it, and set cloud_init_datasources if the default does not fit`},
	{"linux", func(c *Config) bool { return len(c.WindowsFeatures) > 0 },
		`windows_features: Windows features are for Windows guests; remove windows_features for a Linux guest (install packages with a shell provisioner)`},
	{"linux", func(c *Config) bool { return len(c.NTPServers) > 0 },
		`ntp_servers: the Windows Time service's sources; for a Linux guest remove it and configure chrony or systemd-timesyncd with a shell provisioner`},
	{"linux", func(c *Config) bool { return c.KubeletPriorityClass != "" },
		`kubelet_priority_class: the kubelet's Windows process priority; remove it for a Linux guest`},
	{"linux", func(c *Config) bool { return c.KubeletSystemReserved != nil },
		`kubelet_system_reserved: Windows-only; for a Linux guest remove it and give the kubelet --system-reserved with kubelet_extra_args`},
	{"linux", func(c *Config) bool { return c.KubeletKubeReserved != nil },
		`kubelet_kube_reserved: Windows-only; for a Linux guest remove it and give the kubelet --kube-reserved with kubelet_extra_args`},
	{"linux", func(c *Config) bool { return c.WindowsUpdate },
		`windows_update: Windows Update is for Windows guests; remove windows_update for a Linux guest (update its packages with a shell provisioner)`},
	{"linux", func(c *Config) bool { return c.WindowsAutomaticUpdates },
		`windows_automatic_updates: Windows' automatic updates are for Windows guests; remove windows_automatic_updates for a Linux guest`},
}

// guestRefusals are the settings of this configuration that guest ("linux"
// or "windows"; "" when not known yet) refuses.
func (c *Config) guestRefusals(guest string) []error {
	var errs []error
	for _, r := range guestRules {
		if r.refusedOn == guest && r.set(c) {
			errs = append(errs, errors.New(r.msg))
		}
	}
	return errs
}
