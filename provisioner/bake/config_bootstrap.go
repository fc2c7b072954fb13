// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/linux"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/windows"
)

// prepareBootstrap sets the defaults of `bootstrap` and
// `cloud_init_datasources` and reports their problems, and those of
// `cloudbase_init_metadata_services`. With `bootstrap = "cluster-api"` the
// image has no joiner: the keys that only configure the joiner are refused
// rather than silently dropped, and install_joiner is set false. Each
// guest OS refuses the other's bootstrap-data key (guestRules).
// Call it before install_joiner's default is set.
func (c *Config) prepareBootstrap() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Bootstrap == "" {
		c.Bootstrap = node.BootstrapJoiner
	}
	switch c.Bootstrap {
	case node.BootstrapJoiner:
		if len(c.CloudInitDatasources) > 0 {
			add(`cloud_init_datasources: only used with bootstrap = "cluster-api" (the joiner reads its seed disc itself); remove it, or set bootstrap = "cluster-api"`)
		}
		if len(c.CloudbaseInitMetadataServices) > 0 {
			add(`cloudbase_init_metadata_services: only used with bootstrap = "cluster-api" (the joiner reads its seed disc itself); remove it, or set bootstrap = "cluster-api"`)
		}
		return errs
	case node.BootstrapClusterAPI:
	default:
		add("bootstrap: %q is not %s or %s", c.Bootstrap, node.BootstrapJoiner, node.BootstrapClusterAPI)
		return errs
	}
	if c.InstallJoiner != nil && *c.InstallJoiner {
		add(`install_joiner: bootstrap = "cluster-api" images have no joiner (cloud-init, or cloudbase-init on Windows, runs Cluster API's kubeadm join); remove install_joiner`)
	}
	f := false
	c.InstallJoiner = &f
	if _, ok := c.Artifacts[versions.ArtifactJoiner]; ok {
		add(`artifacts.%s: bootstrap = "cluster-api" images have no joiner; remove it`, versions.ArtifactJoiner)
	}
	if _, ok := c.ArtifactChecksums[versions.ArtifactJoiner]; ok {
		add(`artifact_checksums.%s: bootstrap = "cluster-api" images have no joiner; remove it`, versions.ArtifactJoiner)
	}
	if len(c.NodeLabels) > 0 {
		add(`node_labels: the joiner sets them, and bootstrap = "cluster-api" images have none; set the labels in the KubeadmConfigTemplate (joinConfiguration.nodeRegistration.kubeletExtraArgs node-labels)`)
	}
	if len(c.KubeletExtraArgs) > 0 {
		add(`kubelet_extra_args: the joiner passes them, and bootstrap = "cluster-api" images have none; set them in the KubeadmConfigTemplate (joinConfiguration.nodeRegistration.kubeletExtraArgs)`)
	}
	if c.CNI == "bridge" {
		add(`cni: "bridge" with bootstrap = "cluster-api" would give every node made from the image the same pod subnet (bridge_subnet); remove cni (the cluster's CNI, which Cluster API's cluster installs, brings the network)`)
	}
	c.cloudInitDatasourcesSet = len(c.CloudInitDatasources) > 0
	for i, svc := range c.CloudbaseInitMetadataServices {
		switch {
		case !slices.Contains(windows.CloudbaseInitMetadataServiceNames, svc):
			add("cloudbase_init_metadata_services[%d]: %q is not a metadata service kubenode-bake knows (known: %s)", i, svc, strings.Join(windows.CloudbaseInitMetadataServiceNames, ", "))
		case slices.Index(c.CloudbaseInitMetadataServices, svc) != i:
			add("cloudbase_init_metadata_services[%d]: %q is listed twice", i, svc)
		}
	}
	if c.GuestOS == "windows" {
		return errs
	}
	if len(c.CloudInitDatasources) == 0 {
		c.CloudInitDatasources = slices.Clone(linux.DefaultCloudInitDatasources)
	}
	last := len(c.CloudInitDatasources) - 1
	for i, ds := range c.CloudInitDatasources {
		switch {
		case !slices.Contains(linux.CloudInitDatasourceNames, ds):
			add("cloud_init_datasources[%d]: %q is not a datasource cloud-init knows (known: %s)", i, ds, strings.Join(linux.CloudInitDatasourceNames, ", "))
		case slices.Index(c.CloudInitDatasources, ds) != i:
			add("cloud_init_datasources[%d]: %q is listed twice", i, ds)
		case ds == datasourceNone && i != last:
			add(`cloud_init_datasources[%d]: "None" must be last: cloud-init tries the datasources in order and None always succeeds, so those after it are never tried`, i)
		}
	}
	notNone := func(ds string) bool { return ds != datasourceNone }
	if !slices.ContainsFunc(c.CloudInitDatasources, notNone) {
		var named []string
		for _, ds := range linux.DefaultCloudInitDatasources {
			if notNone(ds) {
				named = append(named, ds)
			}
		}
		add(`cloud_init_datasources: lists no datasource but None, which has no bootstrap data, so no node made from the image would join; list the one your infrastructure provider delivers it through (%s, ...)`, strings.Join(named, ", "))
	}
	return errs
}

// datasourceNone is cloud-init's fallback datasource: it always succeeds,
// with no user data.
const datasourceNone = "None"
