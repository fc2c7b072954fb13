// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"errors"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/linux"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/windows"
)

// nodeImage is the description of the node this configuration bakes on a
// guest ("linux" or "windows"; win is a Windows guest's release): the
// releases (each looked up once, see releases), the settings, and the
// artifacts the guest gets. The downloads (fetch) and the images' archives
// (withImages) complete it.
func (c *Config) nodeImage(guest string, win versions.WindowsRelease) (node.Image, error) {
	r := c.releases()
	img := node.Image{
		Kubernetes: r.k8s, Windows: win,
		PauseImage:       c.PauseImage,
		Proxy:            node.Proxy{HTTP: c.HTTPProxy, HTTPS: c.HTTPSProxy, No: c.NoProxy},
		ContainerdSource: c.ContainerdSource,
		CNI:              c.CNI,
		BridgeSubnet:     c.BridgeSubnet,

		Bootstrap:                     c.Bootstrap,
		CloudInitDatasources:          c.CloudInitDatasources,
		CloudbaseInitMetadataServices: c.CloudbaseInitMetadataServices,
		InstallJoiner:                 isTrue(c.InstallJoiner),
		NodeLabels:                    c.NodeLabels,
		KubeletExtraArgs:              c.KubeletExtraArgs,
		KubeletPriorityClass:          c.KubeletPriorityClass,
		KubeletSystemReserved:         c.KubeletSystemReserved,
		KubeletKubeReserved:           c.KubeletKubeReserved,

		Generalize:           isTrue(c.Generalize),
		HostnamePrefix:       c.HostnamePrefix,
		KeepBuildAccount:     c.KeepBuildAccount,
		SettleTimeout:        c.SettleTimeout,
		CloneAdminPassword:   c.CloneAdminPassword,
		DefenderExclusions:   isTrue(c.DefenderExclusions),
		HyperV:               c.HyperV,
		NTPServers:           c.NTPServers,
		WindowsFeatures:      c.WindowsFeatures,
		RestartTimeout:       c.RestartTimeout,
		WindowsUpdate:        c.WindowsUpdate,
		WindowsUpdateTimeout: c.WindowsUpdateTimeout,
		AutomaticUpdates:     c.WindowsAutomaticUpdates,
	}
	switch {
	case guest == "windows":
		if err := errors.Join(r.errK, r.errC, r.errN); err != nil {
			return node.Image{}, err
		}
	case r.errK != nil:
		return node.Image{}, r.errK
	case c.ContainerdSource == "tarball":
		if err := errors.Join(r.errC, r.errN); err != nil {
			return node.Image{}, err
		}
	}
	if guest == "windows" || c.ContainerdSource == "tarball" {
		img.Containerd, img.CNIPlugins = r.ctr, r.cni
	} else {
		img.PackageContainerd = c.ContainerdVersion
	}
	if img.PauseImage == "" {
		img.PauseImage = r.k8s.PauseImage
		if guest == "windows" {
			img.PauseImage = versions.WindowsPauseImage(r.k8s, win)
		}
	}
	if guest == "windows" && c.Bootstrap == node.BootstrapClusterAPI {
		img.CloudbaseInit = versions.CloudbaseInit
	}
	cr, ok, err := c.crictl()
	if err != nil {
		return node.Image{}, err
	}
	if ok {
		img.Crictl = cr
	}
	if img.RegistryHosts, err = c.registryHosts(); err != nil {
		return node.Image{}, err
	}
	if guest == "windows" {
		img.Artifacts = windows.Artifacts(img)
	} else {
		img.Artifacts = linux.Artifacts(img)
	}
	return img, nil
}

// withImages adds the images' archives and pulls to img, and their
// archives to its artifacts (after the downloads: they are local files,
// checked in Prepare), and warns when the pause image is not preloaded.
func (c *Config) withImages(ui packersdk.Ui, img *node.Image) error {
	im, arts, err := c.imagePlan()
	if err != nil {
		return err
	}
	img.Images, img.Artifacts = im, append(img.Artifacts, arts...)
	warnPauseImage(ui, im, img.PauseImage, img.Kubernetes.PauseImage)
	return nil
}

// isTrue is a boolean key that defaults to true.
func isTrue(b *bool) bool { return b == nil || *b }
