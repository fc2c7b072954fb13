package bake

import (
	"fmt"
	"slices"
	"strings"

	joinerconfig "github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
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
	for _, kv := range [][2]string{{"pause_image", c.PauseImage}, {"http_proxy", c.HTTPProxy}, {"https_proxy", c.HTTPSProxy}, {"no_proxy", c.NoProxy}} {
		if why := node.OneLine(kv[1]); why != "" {
			errs = append(errs, fmt.Errorf("%s: %s", kv[0], why))
		}
	}
	return errs
}

// unlisted is the lookup option of allow_unlisted_version.
func (c *Config) unlisted() versions.LookupOption {
	return versions.AllowUnlisted(c.AllowUnlistedVersion)
}

// versionWarnings say, for each version the table lacks and
// allow_unlisted_version lets through, whose facts the bake takes. Call it
// after the versions are validated.
func (c *Config) versionWarnings() []string {
	var ws []string
	add := func(w string, err error) {
		if err == nil && w != "" {
			ws = append(ws, w)
		}
	}
	k8s, errK := versions.LookupKubernetes(c.KubernetesVersion, c.unlisted())
	add(k8s.Warning(), errK)
	if c.ContainerdSource == "tarball" || c.GuestOS == "windows" {
		ctr, err := versions.LookupContainerd(c.ContainerdVersion, c.unlisted())
		add(ctr.Warning(), err)
		cni, err := versions.LookupCNIPlugins(c.CNIPluginsVersion, c.unlisted())
		add(cni.Warning(), err)
	}
	if errK == nil && (c.InstallCrictl == nil || *c.InstallCrictl) {
		cr, err := versions.LookupCrictl(c.CrictlVersion, k8s, c.unlisted())
		add(cr.Warning(), err)
	}
	return ws
}

// validateVersions looks the three versions up in the table and checks that
// the releases work together: containerd's config version with the
// Kubernetes minor (containerd's recommendations), and a kubelet flag the
// kubelet may no longer have. (The joiner writes its JoinConfiguration in
// the API the node's kubeadm reads, so every minor takes it.) Call it after
// the defaults are set.
func (c *Config) validateVersions() []error {
	k8s, errK := versions.LookupKubernetes(c.KubernetesVersion, c.unlisted())
	ctr, errC := versions.LookupContainerd(c.ContainerdVersion, c.unlisted())
	_, errN := versions.LookupCNIPlugins(c.CNIPluginsVersion, c.unlisted())
	var errs []error
	for _, err := range []error{errK, errC, errN} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if errK != nil {
		return errs
	}
	// containerd_source = "package" installs the distribution's
	// containerd, whose version is known on the guest only.
	if errC == nil && c.ContainerdSource == "tarball" && !slices.Contains(k8s.ContainerdConfigVersions, ctr.ConfigVersion) {
		var minors []string
		for _, r := range versions.ContainerdMinors {
			if slices.Contains(k8s.ContainerdConfigVersions, r.ConfigVersion) {
				minors = append(minors, r.Minor)
			}
		}
		errs = append(errs, fmt.Errorf("containerd_version: containerd %s is not recommended for Kubernetes %s (config version %d); use a release of %s",
			ctr.Version, k8s.Minor, ctr.ConfigVersion, strings.Join(minors, ", ")))
	}
	if _, set := c.KubeletExtraArgs[versions.PodInfraContainerImage]; set && !k8s.PodInfraContainerImageFlag {
		errs = append(errs, fmt.Errorf("kubelet_extra_args[%q]: the kubelet of Kubernetes %s has no such flag and would not start "+
			"(it asks containerd for the sandbox image); remove it: pause_image sets the sandbox image", versions.PodInfraContainerImage, k8s.Minor))
	}
	return errs
}
