// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Command packer-plugin-kubenode is the Packer plugin that turns an OS install
// ISO into a Kubernetes node image. Components register here as they land:
// builder "kubenode-libvirt", provisioner "kubenode-bake", post-processor
// "kubenode-export".
package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/packer-plugin-sdk/plugin"

	"github.com/kubenode/packer-plugin-kubenode/builder/libvirt"
	"github.com/kubenode/packer-plugin-kubenode/post-processor/export"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake"
	"github.com/kubenode/packer-plugin-kubenode/version"
)

func main() {
	pps := plugin.NewSet()
	pps.RegisterBuilder("libvirt", new(libvirt.Builder))
	pps.RegisterProvisioner("bake", new(bake.Provisioner))
	pps.RegisterPostProcessor("export", new(export.PostProcessor))
	pps.SetVersion(version.PluginVersion)
	if err := pps.Run(); err != nil {
		fmt.Fprintln(os.Stderr, err.Error())
		os.Exit(1)
	}
}
