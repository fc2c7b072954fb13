// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// containerd's config always names the hosts directory and the imports
// directory (the Linux config: linux/registry_test.go).
func TestContainerdConfigRegistryAndImports(t *testing.T) {
	w := ContainerdConfig(newestContainerd(t, 3), "registry.k8s.io/pause:3.10.2")
	assert.Contains(t, w, `imports = ['C:\Program Files\containerd\conf.d\*.toml']`)
	assert.Contains(t, w, "[plugins.'io.containerd.cri.v1.images'.registry]\n  config_path = 'C:\\Program Files\\containerd\\certs.d'\n")
}

// The containerd step writes the hosts before it (re)starts containerd.
func TestContainerdStepsWriteHosts(t *testing.T) {
	w := basePlan(t).WithDefaults()
	w.RegistryHosts = []node.RegistryHost{{Registry: "docker.io", Endpoints: []string{"https://mirror.example.com"}}}
	win := string(containerd(w))
	assert.Contains(t, win, `Set-KubenodeFile -Path 'C:\Program Files\containerd\certs.d\docker.io\hosts.toml' -Content '# Written by kubenode-bake: the registry host configuration of docker.io`)
	assert.Less(t, strings.Index(win, `certs.d\docker.io\hosts.toml`), strings.Index(win, "Restart-Service -Name 'containerd'"))
}
