// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// containerd's config always names the hosts directory and the imports
// directory, for both config versions and both OSes.
func TestContainerdConfigRegistryAndImports(t *testing.T) {
	v2 := ContainerdConfig(2, "registry.k8s.io/pause:3.10", "systemd", "/opt/cni/bin")
	assert.Contains(t, v2, "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n")
	assert.Contains(t, v2, "[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n")
	v3 := ContainerdConfig(3, "registry.k8s.io/pause:3.10", "systemd", "/opt/cni/bin")
	assert.Contains(t, v3, "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n")
	assert.Contains(t, v3, "[plugins.'io.containerd.cri.v1.images'.registry]\n  config_path = \"/etc/containerd/certs.d\"\n")
	// imports is a top-level key: before the first table.
	for _, cfg := range []string{v2, v3} {
		assert.Less(t, strings.Index(cfg, "imports = "), strings.Index(cfg, "["+"plugins"))
	}
}

// The containerd step's registry part, run against a temporary /etc:
// writes each hosts.toml and CA file once (asking for a restart), then
// changes nothing; a mirror dropped from the configuration loses the
// hosts.toml the bake wrote, a hosts.toml someone else wrote stays.
func TestLinuxRegistryHosts(t *testing.T) {
	dir := t.TempDir()
	caPEM, err := os.ReadFile(guesttest.CA(t, dir))
	require.NoError(t, err)
	etc := filepath.Join(dir, "etc")
	hosts := []node.RegistryHost{
		{Registry: "docker.io", Endpoints: []string{"https://mirror.example.com"}, CA: string(caPEM)},
		{Registry: "registry.example.com:5000", Endpoints: []string{"http://10.0.2.2:5000"}},
	}
	run := func(hosts []node.RegistryHost) string {
		script := string(piece("registry-hosts", registryHosts(hosts))) + `echo "restart=${restart:-0}"` + "\n"
		script = strings.ReplaceAll(script, "/etc/containerd/", etc+"/containerd/")
		require.NotContains(t, script, " /etc/", "every path was redirected")
		out, err := exec.Command("sh", "-c", script).CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	out := run(hosts)
	assert.Contains(t, out, "restart=1")
	toml, err := os.ReadFile(filepath.Join(etc, "containerd/certs.d/docker.io/hosts.toml"))
	require.NoError(t, err)
	assert.Contains(t, string(toml), `server = "https://registry-1.docker.io"`)
	assert.Contains(t, string(toml), `[host."https://mirror.example.com"]`)
	assert.Contains(t, string(toml), `ca = "`+etc+`/containerd/certs.d/docker.io/ca.crt"`)
	ca, err := os.ReadFile(filepath.Join(etc, "containerd/certs.d/docker.io/ca.crt"))
	require.NoError(t, err)
	assert.Equal(t, string(caPEM), string(ca))
	assert.FileExists(t, filepath.Join(etc, "containerd/certs.d/registry.example.com_5000_/hosts.toml"))
	assert.DirExists(t, filepath.Join(etc, "containerd/conf.d"))

	again := run(hosts)
	assert.NotContains(t, again, "changed: ")
	assert.Contains(t, again, "restart=0")

	mine := filepath.Join(etc, "containerd/certs.d/quay.io/hosts.toml")
	require.NoError(t, os.MkdirAll(filepath.Dir(mine), 0o755))
	require.NoError(t, os.WriteFile(mine, []byte("server = \"https://quay.io\"\n"), 0o644))
	dropped := run(hosts[1:])
	assert.Contains(t, dropped, "changed: "+etc+"/containerd/certs.d/docker.io/hosts.toml removed (no longer in registry_mirrors)")
	assert.Contains(t, dropped, "restart=1")
	assert.NoDirExists(t, filepath.Join(etc, "containerd/certs.d/docker.io"))
	assert.FileExists(t, mine, "a hosts.toml the bake did not write stays")
	assert.FileExists(t, filepath.Join(etc, "containerd/certs.d/registry.example.com_5000_/hosts.toml"))
}

// The containerd step writes the hosts before it (re)starts containerd.
func TestContainerdStepsWriteHosts(t *testing.T) {
	p := testPlan()
	p.RegistryHosts = []node.RegistryHost{{Registry: "docker.io", Endpoints: []string{"https://mirror.example.com"}}}
	linux := string(containerd(p))
	assert.Contains(t, linux, "put '/etc/containerd/certs.d/docker.io/hosts.toml' 0644")
	assert.Less(t, strings.Index(linux, "certs.d/docker.io/hosts.toml"), strings.Index(linux, "systemctl restart containerd"))

}
