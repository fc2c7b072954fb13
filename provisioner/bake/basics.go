package bake

import (
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/linux"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/windows"
)

// prepareBasics sets the basics' defaults and reports their problems.
func (c *Config) prepareBasics() []error {
	c.InstallCrictl = orTrue(c.InstallCrictl)
	if err := c.releases().errCrictl; err != nil && c.CrictlVersion != "" {
		return []error{err}
	}
	return nil
}

// crictl is the crictl release to install, ok false when install_crictl is
// false.
func (c *Config) crictl() (versions.CrictlRelease, bool, error) {
	r := c.releases()
	if !r.asked.crictlOn {
		return versions.CrictlRelease{}, false, nil
	}
	return r.crictl, r.errCrictl == nil, r.errCrictl
}

// crictlSummary is the bake's first word on crictl, in the UI.
func crictlSummary(version string) string {
	if version == "" {
		return "kubenode-bake: install_crictl = false: crictl is not installed; the self-check asks containerd with `ctr version`"
	}
	return "kubenode-bake: crictl " + version + " (install_crictl = false leaves it out)"
}

// linuxBasics fills the basics of the Linux plan (crictl, the versions the
// self-check compares) and adds crictl's artifact.
func (c *Config) linuxBasics(plan *linux.Plan, arts []versions.Artifact) ([]versions.Artifact, error) {
	if c.ContainerdSource == "tarball" {
		plan.ContainerdVersion = c.releases().ctr.Version
	}
	cr, ok, err := c.crictl()
	if err != nil || !ok {
		return arts, err
	}
	a := cr.LinuxArtifact()
	plan.CrictlVersion, plan.CrictlTarball = cr.Version, a.FileName
	return append(arts, a), nil
}

// windowsBasics fills the basics of the Windows plan and adds crictl's
// artifact.
func (c *Config) windowsBasics(plan windows.Plan, arts []versions.Artifact) (windows.Plan, []versions.Artifact, error) {
	cr, ok, err := c.crictl()
	if err != nil || !ok {
		return plan, arts, err
	}
	plan.InstallCrictl, plan.Crictl = true, cr
	return plan, append(arts, cr.WindowsArtifact()), nil
}
