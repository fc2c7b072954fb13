// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/linux"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/windows"
)

// linuxPlan is the Linux plan of the configuration's description, and its
// artifacts before the downloads.
func (c *Config) linuxPlan() (linux.Plan, []versions.Artifact, error) {
	img, err := c.nodeImage("linux", versions.WindowsRelease{})
	if err != nil {
		return linux.Plan{}, nil, err
	}
	plan, err := linux.NewPlan(img)
	return plan, img.Artifacts, err
}

// windowsPlan is the Windows plan of the configuration's description for
// the release win, and its artifacts before the downloads.
func (c *Config) windowsPlan(win versions.WindowsRelease) (windows.Plan, []versions.Artifact, error) {
	img, err := c.nodeImage("windows", win)
	if err != nil {
		return windows.Plan{}, nil, err
	}
	plan, err := windows.NewPlan(img)
	return plan, img.Artifacts, err
}

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

// Both operating systems take the one description the same way: the same
// entry point, the same plan and artifacts functions of a node.Image.
func TestBothOperatingSystemsBakeTheSameWay(t *testing.T) {
	assert.Equal(t, reflect.TypeOf(linux.Bake), reflect.TypeOf(windows.Bake), "linux.Bake and windows.Bake")
	assert.Equal(t, reflect.TypeOf(linux.Artifacts), reflect.TypeOf(windows.Artifacts), "linux.Artifacts and windows.Artifacts")
	l, w := reflect.TypeOf(linux.NewPlan), reflect.TypeOf(windows.NewPlan)
	assert.Equal(t, l.NumIn(), w.NumIn())
	assert.Equal(t, l.In(0), w.In(0), "NewPlan takes the description")
	assert.Equal(t, l.Out(1), w.Out(1))
}
