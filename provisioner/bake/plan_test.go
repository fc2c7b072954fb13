package bake

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/windows"
)

func TestWindowsPlanFromConfig(t *testing.T) {
	c := Config{HyperV: "auto", CNI: "none", ContainerdSource: "tarball"}
	win, err := versions.LookupWindows("")
	require.NoError(t, err)
	plan, arts, err := c.windowsPlan(win)
	require.NoError(t, err)
	assert.Equal(t, versions.WindowsPauseImage(plan.Kubernetes, win), plan.PauseImage)
	var names []string
	for _, a := range arts {
		names = append(names, a.Name)
	}
	assert.Equal(t, []string{versions.ArtifactKubelet, versions.ArtifactKubeadm, versions.ArtifactKubectl, versions.ArtifactKubeLogRunner, versions.ArtifactContainerd, versions.ArtifactCNIPlugins, versions.ArtifactJoiner, versions.ArtifactCrictl}, names)
	assert.Equal(t, arts[4].FileName, plan.Files.ContainerdTarball)

	c.CNI, c.ContainerdSource = "bridge", "tarball"
	_, _, err = c.windowsPlan(win)
	assert.ErrorContains(t, err, `cni: "bridge" is not available on Windows`)
	c.CNI, c.KubernetesVersion = "none", "v0.0.0"
	_, _, err = c.windowsPlan(win)
	assert.ErrorContains(t, err, `kubernetes_version: v0.0.0 is a release of v0.0, which is not in kubenode-bake's version table`)
}

func TestWindowsFirstBootPasswordIsNotTheBuilds(t *testing.T) {
	c := &Config{}
	a, err := c.windowsFirstBoot(false)
	require.NoError(t, err)
	b, err := c.windowsFirstBoot(false)
	require.NoError(t, err)
	assert.NotEqual(t, a, b, "a random password for each build")

	c.CloneAdminPassword = "Clone-Only-1!"
	xml, err := c.windowsFirstBoot(false)
	require.NoError(t, err)
	assert.Contains(t, string(xml), autounattend.EncodeUnattendPassword("Clone-Only-1!", "AdministratorPassword"))

	for i := 0; i < 50; i++ {
		pw, err := randomWindowsPassword()
		require.NoError(t, err)
		assert.Len(t, pw, 32)
		assert.Regexp(t, `[A-Z]`, pw)
		assert.Regexp(t, `[a-z]`, pw)
		assert.Regexp(t, `[0-9]`, pw)
		assert.Regexp(t, `[-_.!#%+=]`, pw)
	}
}

// Without clone_admin_password, the answer file's random password only
// takes Setup past the welcome screens: each clone's first boot makes the
// Administrator a password of its own. With it, every clone keeps it.
func TestEachCloneMakesItsOwnPasswordWithoutCloneAdminPassword(t *testing.T) {
	win, err := versions.LookupWindows("")
	require.NoError(t, err)
	c := Config{HyperV: "auto", CNI: "none", ContainerdSource: "tarball"}
	plan, _, err := c.windowsPlan(win)
	require.NoError(t, err)
	assert.True(t, plan.RandomClonePassword)

	c.CloneAdminPassword = "Clone-Only-1!"
	plan, _, err = c.windowsPlan(win)
	require.NoError(t, err)
	assert.False(t, plan.RandomClonePassword)
	for _, f := range windows.FirstBootFiles(plan) {
		assert.NotContains(t, string(f.Content), "Set-LocalUser", f.Path)
	}
}
