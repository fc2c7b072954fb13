// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
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
