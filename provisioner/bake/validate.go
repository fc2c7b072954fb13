// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"fmt"
	"slices"
	"strings"

	joinerconfig "github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/windows"
)

// validateNode checks, for Linux and Windows guests alike, what the image
// hands to the node at first boot: the joiner refuses a configuration with
// a label or kubelet flag it checks at boot (the same rules, from
// internal/joinerapi/config), and a control character in the pause image
// or a proxy would break the files and scripts that carry them. Every
// clone of an image built with such a value would fail, so it fails here,
// naming its HCL key.
func (c *Config) validateNode() []error {
	var errs []error
	for _, k := range sortedKeys(c.NodeLabels) {
		for _, msg := range joinerconfig.CheckLabel(k, c.NodeLabels[k]) {
			errs = append(errs, fmt.Errorf("node_labels[%q]: %s", k, msg))
		}
	}
	for _, name := range sortedKeys(c.KubeletExtraArgs) {
		for _, msg := range []string{joinerconfig.CheckKubeletArgName(name), joinerconfig.ForbiddenKubeletArg(name),
			joinerconfig.CheckKubeletArgValue(name, c.KubeletExtraArgs[name])} {
			if msg != "" {
				errs = append(errs, fmt.Errorf("kubelet_extra_args[%q]: %s", name, msg))
			}
		}
	}
	// The Windows kubelet's priority and reserves; their overlap with
	// kubelet_extra_args only matters on Windows.
	extra := c.KubeletExtraArgs
	if c.GuestOS != "windows" {
		extra = nil
	}
	errs = append(errs, windows.CheckNTPServers(c.NTPServers)...)
	errs = append(errs, windows.CheckWindowsFeatures(c.WindowsFeatures)...)
	errs = append(errs, windows.CheckKubeletResources(c.KubeletPriorityClass, c.KubeletSystemReserved, c.KubeletKubeReserved, extra)...)
	for _, kv := range [][2]string{{"pause_image", c.PauseImage}, {"http_proxy", c.HTTPProxy}, {"https_proxy", c.HTTPSProxy}, {"no_proxy", c.NoProxy}} {
		if why := node.OneLine(kv[1]); why != "" {
			errs = append(errs, fmt.Errorf("%s: %s", kv[0], why))
		}
	}
	return errs
}

// lookup is the version table's lookups; a test counts the calls.
var lookup = struct {
	kubernetes func(string, ...versions.LookupOption) (versions.KubernetesRelease, error)
	containerd func(string, ...versions.LookupOption) (versions.ContainerdRelease, error)
	cniPlugins func(string, ...versions.LookupOption) (versions.CNIPluginsRelease, error)
	crictl     func(string, versions.KubernetesRelease, ...versions.LookupOption) (versions.CrictlRelease, error)
}{versions.LookupKubernetes, versions.LookupContainerd, versions.LookupCNIPlugins, versions.LookupCrictl}

// releases are the version table's rows of the configured versions, with
// the error of each version the table refuses.
type releases struct {
	asked releaseKeys
	k8s   versions.KubernetesRelease
	ctr   versions.ContainerdRelease
	cni   versions.CNIPluginsRelease
	// crictl is looked up when crictl is installed or crictl_version is
	// set.
	crictl                      versions.CrictlRelease
	errK, errC, errN, errCrictl error
}

// releaseKeys are the keys the releases are looked up by.
type releaseKeys struct {
	k8s, ctr, cni, crictl string
	unlisted, crictlOn    bool
}

// releases looks each configured version up in the table once: the
// validation, the plan and the record of what was baked take the rows
// found then. Changed versions are looked up again.
func (c *Config) releases() *releases {
	asked := releaseKeys{c.KubernetesVersion, c.ContainerdVersion, c.CNIPluginsVersion, c.CrictlVersion,
		c.AllowUnlistedVersion, c.InstallCrictl == nil || *c.InstallCrictl}
	if c.rel != nil && c.rel.asked == asked {
		return c.rel
	}
	opt := versions.AllowUnlisted(c.AllowUnlistedVersion)
	r := &releases{asked: asked}
	r.k8s, r.errK = lookup.kubernetes(c.KubernetesVersion, opt)
	r.ctr, r.errC = lookup.containerd(c.ContainerdVersion, opt)
	r.cni, r.errN = lookup.cniPlugins(c.CNIPluginsVersion, opt)
	// Without crictl_version the Kubernetes release picks crictl's.
	if (asked.crictlOn && r.errK == nil) || c.CrictlVersion != "" {
		r.crictl, r.errCrictl = lookup.crictl(c.CrictlVersion, r.k8s, opt)
	}
	c.rel = r
	return r
}

// versionWarnings say, for each version the table lacks and
// allow_unlisted_version lets through, whose facts the bake takes.
func (c *Config) versionWarnings() []string {
	r := c.releases()
	var ws []string
	add := func(w string, err error) {
		if err == nil && w != "" {
			ws = append(ws, w)
		}
	}
	add(r.k8s.Warning(), r.errK)
	if c.ContainerdSource == "tarball" || c.GuestOS == "windows" {
		add(r.ctr.Warning(), r.errC)
		add(r.cni.Warning(), r.errN)
	}
	if r.errK == nil && r.asked.crictlOn {
		add(r.crictl.Warning(), r.errCrictl)
	}
	return ws
}

// validateVersions reports the versions the table refuses and checks that
// the releases work together: containerd's release with the releases
// containerd's support matrix lists for the Kubernetes minor (for
// containerd_source = "package", the release containerd_version says the
// distribution's package is built from or, unset, the packages of the
// distributions the version table knows), its config
// version with the minor's, and a kubelet flag the kubelet may no longer
// have. (The joiner writes its JoinConfiguration in
// the API the node's kubeadm reads, so every minor takes it.) Call it after
// the defaults are set.
func (c *Config) validateVersions() []error {
	r := c.releases()
	k8s, ctr := r.k8s, r.ctr
	// With the package path containerd_version is the distribution's
	// release, not one of the table's tarballs.
	pkg := c.ContainerdSource == "package" && c.GuestOS != "windows"
	lookups := []error{r.errK, r.errC, r.errN}
	if pkg {
		lookups[1] = nil
	}
	var errs []error
	for _, err := range lookups {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if r.errK != nil {
		return errs
	}
	switch {
	case pkg:
		// The distribution's containerd: held to the matrix here by
		// containerd_version or, unset, by the packages of every
		// distribution the table knows; linux.Bake checks the guest's.
		if err := versions.CheckPackagedContainerds(k8s, c.ContainerdVersion); err != nil {
			errs = append(errs, err)
		}
	case r.errC != nil:
	case versions.CheckContainerd(k8s, ctr) != nil:
		// containerd's own matrix of the releases each Kubernetes minor
		// takes; it names only releases the minor takes.
		errs = append(errs, versions.CheckContainerd(k8s, ctr))
	case !slices.Contains(k8s.ContainerdConfigVersions, ctr.ConfigVersion):
		// A release the matrix lists whose config version the minor's row
		// does not take: the table's rows disagree.
		var take []string
		for _, listed := range k8s.Containerd {
			if m, err := versions.LookupContainerd(listed); err == nil && slices.Contains(k8s.ContainerdConfigVersions, m.ConfigVersion) {
				take = append(take, listed+"+")
			}
		}
		errs = append(errs, fmt.Errorf("containerd_version: containerd %s is not recommended for Kubernetes %s (config version %d); use one of %s",
			ctr.Version, k8s.Minor, ctr.ConfigVersion, strings.Join(take, ", ")))
	}
	if _, set := c.KubeletExtraArgs[versions.PodInfraContainerImage]; set && !k8s.PodInfraContainerImageFlag {
		errs = append(errs, fmt.Errorf("kubelet_extra_args[%q]: the kubelet of Kubernetes %s has no such flag and would not start "+
			"(it asks containerd for the sandbox image); remove it: pause_image sets the sandbox image", versions.PodInfraContainerImage, k8s.Minor))
	}
	return errs
}
