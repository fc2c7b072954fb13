package bake

import (
	"fmt"
	"strings"
)

// The version table: every version kubenode-bake knows, and what changes
// with it. Adding a version is adding a row; nothing else in the
// provisioner names a version.

// KubernetesRelease is a Kubernetes release the bake installs.
type KubernetesRelease struct {
	Version string
	// PauseImage is kubeadm's default sandbox image for this release
	// (cmd/kubeadm/app/constants PauseVersion).
	PauseImage string
}

// ContainerdRelease is a containerd release and the runc it ships with.
type ContainerdRelease struct {
	Version string
	// ConfigVersion of config.toml: 2 for containerd 1.x, 3 for 2.x.
	ConfigVersion int
	RuncVersion   string
}

// CNIPluginsRelease is a containernetworking/plugins release.
type CNIPluginsRelease struct {
	Version string
}

// Rows, oldest first; the last row of each is the default.
var (
	kubernetesReleases = []KubernetesRelease{
		{Version: "v1.33.13", PauseImage: "registry.k8s.io/pause:3.10"},
	}
	containerdReleases = []ContainerdRelease{
		{Version: "1.7.27", ConfigVersion: 2, RuncVersion: "v1.2.6"},
		{Version: "2.1.4", ConfigVersion: 3, RuncVersion: "v1.3.0"},
	}
	cniPluginsReleases = []CNIPluginsRelease{
		{Version: "v1.6.2"},
	}
)

func lookup[R any](key, version string, rows []R, id func(R) string) (R, error) {
	if version == "" {
		return rows[len(rows)-1], nil
	}
	var known []string
	for _, r := range rows {
		if id(r) == version {
			return r, nil
		}
		known = append(known, id(r))
	}
	var zero R
	return zero, fmt.Errorf("%s: %q is not in kubenode-bake's version table (known: %s)", key, version, strings.Join(known, ", "))
}

// LookupKubernetes finds a Kubernetes release ("" is the newest).
func LookupKubernetes(v string) (KubernetesRelease, error) {
	return lookup("kubernetes_version", v, kubernetesReleases, func(r KubernetesRelease) string { return r.Version })
}

// LookupContainerd finds a containerd release ("" is the newest).
func LookupContainerd(v string) (ContainerdRelease, error) {
	return lookup("containerd_version", v, containerdReleases, func(r ContainerdRelease) string { return r.Version })
}

// LookupCNIPlugins finds a CNI plugins release ("" is the newest).
func LookupCNIPlugins(v string) (CNIPluginsRelease, error) {
	return lookup("cni_plugins_version", v, cniPluginsReleases, func(r CNIPluginsRelease) string { return r.Version })
}

// LinuxArtifacts are the release's binaries for linux/amd64 from dl.k8s.io,
// each with its published .sha256.
func (k KubernetesRelease) LinuxArtifacts() []Artifact {
	var out []Artifact
	for _, b := range []string{ArtifactKubelet, ArtifactKubeadm, ArtifactKubectl} {
		u := "https://dl.k8s.io/release/" + k.Version + "/bin/linux/amd64/" + b
		out = append(out, Artifact{Name: b, FileName: b, URL: u, ChecksumURL: u + ".sha256"})
	}
	return out
}

// LinuxArtifacts are containerd's release tarball and runc's binary, from
// their GitHub releases, with the published checksums.
func (c ContainerdRelease) LinuxArtifacts() []Artifact {
	tarball := "containerd-" + c.Version + "-linux-amd64.tar.gz"
	ctrURL := "https://github.com/containerd/containerd/releases/download/v" + c.Version + "/" + tarball
	runcURL := "https://github.com/opencontainers/runc/releases/download/" + c.RuncVersion + "/runc.amd64"
	return []Artifact{
		{Name: ArtifactContainerd, FileName: tarball, URL: ctrURL, ChecksumURL: ctrURL + ".sha256sum"},
		{Name: ArtifactRunc, FileName: "runc.amd64", URL: runcURL,
			ChecksumURL: "https://github.com/opencontainers/runc/releases/download/" + c.RuncVersion + "/runc.sha256sum"},
	}
}

// LinuxArtifact is the CNI plugins tarball for linux/amd64.
func (c CNIPluginsRelease) LinuxArtifact() Artifact {
	tarball := "cni-plugins-linux-amd64-" + c.Version + ".tgz"
	u := "https://github.com/containernetworking/plugins/releases/download/" + c.Version + "/" + tarball
	return Artifact{Name: ArtifactCNIPlugins, FileName: tarball, URL: u, ChecksumURL: u + ".sha256"}
}
