// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package node

import (
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

// Image is what one bake resolved for one guest: the releases from the
// version table, the artifacts to put on the guest (their file names are
// their names in its staging directory; after the downloads, their local
// files and checked digests), the images, registry hosts and the settings
// each node from the image starts with. provisioner/bake builds it once
// from the configuration; linux.Bake and windows.Bake turn it into their
// steps.
type Image struct {
	// Releases from the version table. Containerd and CNIPlugins are zero
	// for a Linux guest with ContainerdSource "package"; Crictl is zero
	// when crictl is not installed; CloudbaseInit is zero unless a
	// Windows image is for Cluster API; Windows is the release of a
	// Windows guest's build number, zero on Linux.
	Kubernetes    versions.KubernetesRelease
	Containerd    versions.ContainerdRelease
	CNIPlugins    versions.CNIPluginsRelease
	Crictl        versions.CrictlRelease
	CloudbaseInit versions.CloudbaseInitRelease
	Windows       versions.WindowsRelease

	// PauseImage is the sandbox image: pause_image, or the release's for
	// this guest.
	PauseImage string
	Proxy      Proxy
	// ContainerdSource is "tarball" or "package" (Linux only).
	ContainerdSource string
	// PackageContainerd is, with ContainerdSource "package", the
	// containerd release (X.Y or X.Y.Z) containerd_version says the
	// distribution's package is built from; empty when unset.
	PackageContainerd string
	// CNI is "none" or "bridge"; BridgeSubnet the bridge's pod subnet.
	CNI, BridgeSubnet string

	// Bootstrap is how a node from the image joins: BootstrapJoiner or
	// BootstrapClusterAPI, with cloud-init's datasources (Linux) or
	// cloudbase-init's metadata services (Windows).
	Bootstrap                     string
	CloudInitDatasources          []string
	CloudbaseInitMetadataServices []string
	// InstallJoiner installs the joiner with NodeLabels and
	// KubeletExtraArgs (flag name without dashes -> value) in its baked
	// configuration.
	InstallJoiner    bool
	NodeLabels       map[string]string
	KubeletExtraArgs map[string]string
	// Windows: the kubelet's priority class and reserves (empty, nil: the
	// Windows package's defaults).
	KubeletPriorityClass                       string
	KubeletSystemReserved, KubeletKubeReserved map[string]string

	// Images are preloaded into containerd; RegistryHosts written to its
	// hosts directory.
	Images        Images
	RegistryHosts []RegistryHost
	// Artifacts are the files the guest gets, in order.
	Artifacts []versions.Artifact

	// Generalize readies the image for cloning: Linux's first-boot unit
	// and account lock, Windows' sysprep.
	Generalize bool
	// Linux: the clones' host name prefix, whether the build account is
	// kept, the bound of the settle step's waits.
	HostnamePrefix   string
	KeepBuildAccount bool
	SettleTimeout    time.Duration
	// Windows: the clones' Administrator password (empty: a random one),
	// Defender exclusions, Hyper-V (auto, on, off), the NTP servers (none:
	// Windows' own), the features beside Containers, the restart bound,
	// Windows Update and automatic updates.
	CloneAdminPassword   string
	DefenderExclusions   bool
	HyperV               string
	NTPServers           []string
	WindowsFeatures      []string
	RestartTimeout       time.Duration
	WindowsUpdate        bool
	WindowsUpdateTimeout time.Duration
	AutomaticUpdates     bool
}

// Artifact is the artifact of that name, ok false when there is none.
func (img Image) Artifact(name string) (versions.Artifact, bool) {
	for _, a := range img.Artifacts {
		if a.Name == name {
			return a, true
		}
	}
	return versions.Artifact{}, false
}

// ArtifactVersion is the release the artifact of that name is, as the
// version table names it: "" for the joiner, whose version only the
// installed binary knows, and for the images archives.
func (img Image) ArtifactVersion(name string) string {
	switch name {
	case versions.ArtifactKubelet, versions.ArtifactKubeadm, versions.ArtifactKubectl, versions.ArtifactKubeLogRunner:
		return img.Kubernetes.Version
	case versions.ArtifactContainerd:
		return img.Containerd.Version
	case versions.ArtifactRunc:
		return img.Containerd.RuncVersion
	case versions.ArtifactCNIPlugins:
		return img.CNIPlugins.Version
	case versions.ArtifactCrictl:
		return img.Crictl.Version
	case versions.ArtifactCloudbaseInit:
		return img.CloudbaseInit.Version
	}
	return ""
}
