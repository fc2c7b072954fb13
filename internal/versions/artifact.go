// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package versions

// Artifact is one file to put on the guest.
type Artifact struct {
	// Name is the artifact's key (kubelet, containerd, ...).
	Name string
	// FileName is its name in the guest's staging directory.
	FileName string
	// URL and ChecksumURL are the official download and its published
	// sha256 file, used when no local file is given.
	URL, ChecksumURL string
	// PinnedSHA256 is the sha256 (hex) a download is checked against
	// when the publisher prints no checksum file (ChecksumURL empty):
	// recorded in the version table with the public source it comes from.
	PinnedSHA256 string

	// Local is the file on this machine, set by resolve.
	Local string
	// SHA256 is its checksum (hex), verified again on the guest.
	SHA256 string
}

// Artifact names (keys of `artifacts` and `artifact_checksums`).
const (
	ArtifactKubelet       = "kubelet"
	ArtifactKubeadm       = "kubeadm"
	ArtifactKubectl       = "kubectl"
	ArtifactKubeLogRunner = "kube-log-runner"
	ArtifactContainerd    = "containerd"
	ArtifactRunc          = "runc"
	ArtifactCNIPlugins    = "cni-plugins"
	ArtifactJoiner        = "joiner"
	ArtifactCrictl        = "crictl"
	ArtifactCloudbaseInit = "cloudbase-init"
)

// ArtifactNames are every artifact name, in the order messages list them.
var ArtifactNames = []string{ArtifactKubelet, ArtifactKubeadm, ArtifactKubectl, ArtifactKubeLogRunner, ArtifactContainerd, ArtifactRunc, ArtifactCNIPlugins, ArtifactJoiner, ArtifactCrictl, ArtifactCloudbaseInit}

// PodInfraContainerImage is the kubelet flag of
// KubernetesMinor.PodInfraContainerImageFlag.
const PodInfraContainerImage = "pod-infra-container-image"
