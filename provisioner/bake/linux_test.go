package bake

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testPlan() LinuxPlan {
	return LinuxPlan{
		KubernetesVersion: "v1.33.13", PauseImage: "registry.k8s.io/pause:3.10",
		ContainerdSource: "tarball", ContainerdTarball: "containerd.tar.gz", RuncBinary: "runc.amd64", CNITarball: "cni.tgz",
		CNI: "bridge", BridgeSubnet: "10.85.0.0/16", CgroupDriver: "systemd",
		Proxy:        Proxy{HTTP: "http://proxy:3128", No: "10.0.0.0/8,'quoted'"},
		JoinerConfig: []byte("apiVersion: joiner.kubenode.io/v1alpha1\nkind: JoinerConfiguration\n"),
		Generalize:   true, Staging: "/var/tmp/kubenode-bake",
	}
}

// Every generated script is valid POSIX shell (checked by the real sh).
func TestLinuxScriptsParse(t *testing.T) {
	for _, source := range []string{"tarball", "package"} {
		p := testPlan()
		p.ContainerdSource = source
		steps := LinuxSteps(p)
		names := []string{}
		for _, s := range steps {
			names = append(names, s.Name)
			path := filepath.Join(t.TempDir(), s.Name+".sh")
			require.NoError(t, os.WriteFile(path, s.Script, 0o644))
			out, err := exec.Command("sh", "-n", path).CombinedOutput()
			assert.NoError(t, err, "%s (%s): %s", s.Name, source, out)
		}
		assert.Equal(t, []string{"prerequisites", "kernel", "containerd", "cni", "kubernetes", "joiner", "generalize"}, names)
	}
	bad := filepath.Join(t.TempDir(), "bad.sh")
	require.NoError(t, os.WriteFile(bad, []byte("if true; then\n"), 0o644))
	assert.Error(t, exec.Command("sh", "-n", bad).Run(), "the check can fail")
}

// The put helper writes a file once, then reports it unchanged: a second
// run of a script changes nothing.
func TestPutIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	s := newSh("test")
	target := filepath.Join(dir, "etc", "x.conf")
	s.file(target, "0640", "a = 'b'\nKUBENODE_EOF\n", "echo reloaded")
	script := filepath.Join(dir, "s.sh")
	require.NoError(t, os.WriteFile(script, s.bytes(), 0o644))
	first, err := exec.Command("sh", script).CombinedOutput()
	require.NoError(t, err, string(first))
	assert.Equal(t, "changed: "+target+"\nreloaded\n", string(first))
	data, _ := os.ReadFile(target)
	assert.Equal(t, "a = 'b'\nKUBENODE_EOF\n", string(data), "content with the delimiter survives")
	fi, _ := os.Stat(target)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	second, err := exec.Command("sh", script).CombinedOutput()
	require.NoError(t, err, string(second))
	assert.Equal(t, "ok: "+target+"\n", string(second))
}

func TestContainerdConfigMatchesTheKubelet(t *testing.T) {
	v2 := ContainerdConfig(2, "registry.k8s.io/pause:3.10", "systemd", "/opt/cni/bin")
	assert.Contains(t, v2, "version = 2\n")
	assert.Contains(t, v2, `sandbox_image = "registry.k8s.io/pause:3.10"`)
	assert.Contains(t, v2, "SystemdCgroup = true")
	assert.Contains(t, v2, `bin_dir = "/opt/cni/bin"`)
	v3 := ContainerdConfig(3, "registry.k8s.io/pause:3.10", "cgroupfs", "/opt/cni/bin")
	assert.Contains(t, v3, "version = 3\n")
	assert.Contains(t, v3, "[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"registry.k8s.io/pause:3.10\"")
	assert.Contains(t, v3, "SystemdCgroup = false")
	assert.Contains(t, v3, `bin_dirs = ["/opt/cni/bin"]`)
}

func TestShellQuoting(t *testing.T) {
	out, err := exec.Command("sh", "-c", "printf %s "+q(`it's "$HOME" $(id)`)).Output()
	require.NoError(t, err)
	assert.Equal(t, `it's "$HOME" $(id)`, string(out))
	assert.True(t, strings.HasPrefix(string(LinuxSteps(testPlan())[0].Script), "#!/bin/sh\n"))
}
