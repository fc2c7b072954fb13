// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// Guest locations of containerd's registry host configuration and of the
// configuration files containerd's `imports` reads.
const (
	certsDir        = containerdDir + `\certs.d`
	containerdConfD = containerdDir + `\conf.d`
)

// registryHosts is linuxRegistryHosts for Windows: the data of the
// registry-hosts template, which the containerd step renders; it sets
// $restart when something changed.
type registryHosts struct {
	Dirs  []string
	Hosts []registryHostFiles
	// Keep are the hosts.toml files of the configured registries; others
	// kubenode wrote (their first line is HeaderPattern) are removed.
	Keep                                []string
	CertsDir, HeaderPattern, CAFileName string
}

// registryHostFiles are one registry's hosts.toml and, when it has one,
// its CA.
type registryHostFiles struct {
	CA, CAContent string
	File, Content string
}

func newRegistryHosts(hosts []node.RegistryHost) registryHosts {
	r := registryHosts{
		Dirs:     []string{certsDir, containerdConfD},
		CertsDir: certsDir, HeaderPattern: node.HostsHeader + "*", CAFileName: node.CAFileName,
	}
	for _, h := range hosts {
		dir := certsDir + `\` + node.HostsDir(h.Registry)
		f := registryHostFiles{File: dir + `\hosts.toml`}
		if h.CA != "" {
			f.CA, f.CAContent = dir+`\`+node.CAFileName, h.CA
		}
		f.Content = node.HostsTOML(h, f.CA)
		r.Hosts = append(r.Hosts, f)
		r.Keep = append(r.Keep, f.File)
	}
	return r
}
