// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"path"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// Guest locations of containerd's registry host configuration and of the
// configuration files containerd's `imports` reads.
const (
	certsDir        = "/etc/containerd/certs.d"
	containerdConfD = "/etc/containerd/conf.d"
)

// registryHostsInput is the input of registry-hosts: the files of the
// hosts directory (each mirror's CA file and hosts.toml), and Keep, the
// hosts.toml files among them, space-separated with a space either side.
type registryHostsInput struct {
	Files []heredocFile
	Keep  string
}

// registryHosts is what registry-hosts writes for hosts: it removes the
// hosts.toml files an earlier bake wrote for registries no longer
// configured and makes the imports directory. A change restarts
// containerd.
func registryHosts(hosts []node.RegistryHost) registryHostsInput {
	var in registryHostsInput
	var keep []string
	for _, h := range hosts {
		dir := path.Join(certsDir, node.HostsDir(h.Registry))
		ca := ""
		if h.CA != "" {
			ca = path.Join(dir, node.CAFileName)
			in.Files = append(in.Files, heredocFile{ca, 0o644, h.CA})
		}
		toml := path.Join(dir, "hosts.toml")
		in.Files = append(in.Files, heredocFile{toml, 0o644, node.HostsTOML(h, ca)})
		keep = append(keep, toml)
	}
	in.Keep = " " + strings.Join(keep, " ") + " "
	return in
}
