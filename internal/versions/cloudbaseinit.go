// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package versions

import "strings"

// CloudbaseInitRelease is the cloudbase-init a Windows image for Cluster
// API's bootstrap (bootstrap = "cluster-api") installs: on each clone it
// reads the user data Cluster API's kubeadm bootstrap provider writes
// (a config drive or a NoCloud seed) and runs it.
type CloudbaseInitRelease struct {
	Version string
	// SHA256 of the x64 MSI release asset. Cloudbase Solutions publishes no
	// checksum file beside its GitHub release assets, so the digest is
	// pinned here, from the public source named in CloudbaseInit's comment.
	SHA256 string
}

// CloudbaseInit is the pinned cloudbase-init release. Its MSI's sha256 is
// the one syselement/packertron-vms pins for the same asset
// (scripts/windows/11_cloudbase_init.ps1, 1.1.8, computed there from the
// release asset); other public build scripts in the stored repositories
// pin the same digest for 1.1.8. A build that uses another MSI gives it as
// artifacts.cloudbase-init with artifact_checksums.cloudbase-init.
var CloudbaseInit = CloudbaseInitRelease{
	Version: "1.1.8",
	SHA256:  "0e7fa42e0cbc0ce7657f85730b0c6cc7afc4087a3639df0ff51a721a0be19bd5",
}

// WindowsArtifact is the release's x64 MSI from cloudbase/cloudbase-init's
// GitHub releases (CloudbaseInitSetup_<X_Y_Z>_x64.msi), checked against
// the pinned SHA256.
func (c CloudbaseInitRelease) WindowsArtifact() Artifact {
	file := "CloudbaseInitSetup_" + strings.ReplaceAll(c.Version, ".", "_") + "_x64.msi"
	return Artifact{
		Name: ArtifactCloudbaseInit, FileName: file,
		URL:          "https://github.com/cloudbase/cloudbase-init/releases/download/" + c.Version + "/" + file,
		PinnedSHA256: c.SHA256,
	}
}
