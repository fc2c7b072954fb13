// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/linux"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

// A failing self-check fails the build with every problem it printed,
// and nothing runs after it.
func TestProvisionLinuxSelfCheckFailureListsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"kubelet", "kubeadm", "kubectl"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(f), 0o755))
	}
	var p Provisioner
	require.NoError(t, p.Prepare(map[string]any{
		"guest_os_type": "linux", "containerd_source": "package", "containerd_version": "2.2", "kubernetes_version": "v1.36.0", "artifacts_dir": dir, "download_cache_dir": t.TempDir(),
		"install_joiner": false, "generalize": false, "install_crictl": false,
	}))
	g := &guesttest.Linux{Commands: ubuntuContainerd, Fail: map[string]string{node.StepSelfCheck: "ok: containerd enabled\n" +
		"problem: kubelet is not enabled to start at boot (systemctl is-enabled: disabled)\n" +
		"problem: image docker.io/library/busybox:latest is not in containerd (ctr -n k8s.io images ls)\n" +
		"self-check: 2 problems\n"}}
	ui := guesttest.NewUI()
	err := p.Provision(context.Background(), ui, g, nil)
	require.Error(t, err)
	var sc *node.SelfCheckError
	require.True(t, errors.As(err, &sc), "%v", err)
	assert.Equal(t, []string{
		"kubelet is not enabled to start at boot (systemctl is-enabled: disabled)",
		"image docker.io/library/busybox:latest is not in containerd (ctr -n k8s.io images ls)",
	}, sc.Problems)
	assert.Contains(t, err.Error(), "self-check: the baked guest is not ready to become a node; 2 problems:\n"+
		"  - kubelet is not enabled to start at boot (systemctl is-enabled: disabled)\n  - image docker.io/library/busybox:latest")
	var se *remote.StepError
	require.True(t, errors.As(err, &se), "the step's own failure stays reachable")
	assert.Equal(t, node.StepSelfCheck, se.Step)
	assert.Equal(t, []string{"settle", "verify-artifacts", "prerequisites", "node-basics", "kernel", "containerd", "cni", "kubernetes", "self-check"}, g.Steps, "nothing runs after the self-check fails")
	assert.Contains(t, ui.Out.String(), "install_crictl = false: crictl is not installed; the self-check asks containerd with `ctr version`")

	// Another step's failure is not a self-check's.
	g = &guesttest.Linux{Commands: ubuntuContainerd, Fail: map[string]string{"kernel": "problem: looks like one\n"}}
	err = p.Provision(context.Background(), guesttest.NewUI(), g, nil)
	require.Error(t, err)
	assert.False(t, errors.As(err, &sc))
}

// crictl is an artifact like the others: by default the table's release
// for the Kubernetes minor (internal/versions tests the table's rows);
// install_crictl = false leaves it out; crictl_version picks another
// release.
func TestCrictlArtifactAndVersion(t *testing.T) {
	prepare := func(extra map[string]any) (Config, error) {
		var c Config
		raw := map[string]any{"guest_os_type": "linux", "download_cache_dir": t.TempDir()}
		for k, v := range extra {
			raw[k] = v
		}
		return c, c.Prepare(raw)
	}
	c, err := prepare(nil)
	require.NoError(t, err)
	require.True(t, *c.InstallCrictl, "default true")
	plan, arts, err := c.linuxPlan()
	require.NoError(t, err)
	k, _ := versions.LookupKubernetes("")
	want, _ := versions.LookupCrictl("", k)
	assert.Equal(t, want.Version, plan.CrictlVersion)
	assert.Contains(t, arts, want.LinuxArtifact())
	assert.Equal(t, "v"+plan.ContainerdVersion, "v"+versions.Defaults.Containerd, "tarball: the self-check compares containerd's version")

	other := versions.CrictlRows[0].Minor + ".7"
	c, err = prepare(map[string]any{"crictl_version": other})
	require.NoError(t, err)
	plan, _, err = c.linuxPlan()
	require.NoError(t, err)
	assert.Equal(t, other, plan.CrictlVersion)

	c, err = prepare(map[string]any{"install_crictl": false})
	require.NoError(t, err)
	plan, arts, err = c.linuxPlan()
	require.NoError(t, err)
	assert.Empty(t, plan.CrictlVersion)
	for _, a := range arts {
		assert.NotEqual(t, versions.ArtifactCrictl, a.Name)
	}
	for _, s := range linux.Steps(plan) {
		assert.NotEqual(t, node.StepCrictl, s.Name)
	}

	_, err = prepare(map[string]any{"crictl_version": "v0.1.0"})
	assert.ErrorContains(t, err, "crictl_version: v0.1.0 is a release of v0.1, which is not in kubenode-bake's version table")
	_, err = prepare(map[string]any{"artifacts": map[string]string{"crictl": filepath.Join(t.TempDir(), "missing")}})
	assert.ErrorContains(t, err, "artifacts.crictl: ")
}
