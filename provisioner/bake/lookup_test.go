// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
)

// countLookups counts the version table's lookups, by key, until the test
// ends.
func countLookups(t *testing.T) map[string]int {
	saved := lookup
	t.Cleanup(func() { lookup = saved })
	n := map[string]int{}
	lookup.kubernetes = func(v string, o ...versions.LookupOption) (versions.KubernetesRelease, error) {
		n["kubernetes_version"]++
		return saved.kubernetes(v, o...)
	}
	lookup.containerd = func(v string, o ...versions.LookupOption) (versions.ContainerdRelease, error) {
		n["containerd_version"]++
		return saved.containerd(v, o...)
	}
	lookup.cniPlugins = func(v string, o ...versions.LookupOption) (versions.CNIPluginsRelease, error) {
		n["cni_plugins_version"]++
		return saved.cniPlugins(v, o...)
	}
	lookup.crictl = func(v string, k versions.KubernetesRelease, o ...versions.LookupOption) (versions.CrictlRelease, error) {
		n["crictl_version"]++
		return saved.crictl(v, k, o...)
	}
	return n
}

// Each version is looked up in the table once per build: Prepare looks
// them up, and the checks, the planned downloads, the plan, the pause
// image warning and the record of what was baked take the rows it found.
func TestEachVersionIsLookedUpOncePerBuild(t *testing.T) {
	once := map[string]int{"kubernetes_version": 1, "containerd_version": 1, "cni_plugins_version": 1, "crictl_version": 1}
	raw := map[string]any{"kubernetes_version": "v1.99.1", "allow_unlisted_version": true, "crictl_version": "v1.99.0",
		"download_mirrors": map[string]string{"https://dl.k8s.io": "https://mirror.example/dl.k8s.io"}}

	t.Run("linux", func(t *testing.T) {
		dir := t.TempDir()
		var plan Provisioner
		require.NoError(t, plan.Prepare(raw, map[string]any{"guest_os_type": "linux", "download_cache_dir": t.TempDir()}))
		_, arts, err := plan.config.linuxPlan()
		require.NoError(t, err)
		for _, a := range arts {
			require.NoError(t, os.WriteFile(filepath.Join(dir, a.FileName), []byte(a.Name), 0o755))
		}

		n := countLookups(t)
		var p Provisioner
		require.NoError(t, p.Prepare(raw, map[string]any{"guest_os_type": "linux", "download_cache_dir": t.TempDir(),
			"artifacts_dir": dir, "packer_build_name": "once", "generalize": false}))
		assert.Equal(t, once, n, "Prepare")
		t.Setenv("PACKER_RUN_UUID", "test-"+t.Name())
		t.Setenv("TMPDIR", t.TempDir()) // the record of what was baked goes there
		ui := guesttest.NewUI()
		require.NoError(t, p.Provision(context.Background(), ui, &guesttest.Linux{}, nil))
		assert.Equal(t, once, n, "Prepare and the build")
		assert.Contains(t, ui.Err.String(), "kubernetes_version v1.99.1: v1.99 is not in kubenode-bake's version table", "the warnings come from the rows")
	})

	t.Run("windows", func(t *testing.T) {
		n := countLookups(t)
		var p Provisioner
		require.NoError(t, p.Prepare(raw, map[string]any{"guest_os_type": "windows", "download_cache_dir": t.TempDir()}))
		assert.Equal(t, once, n, "Prepare")
		win, err := versions.LookupWindows("")
		require.NoError(t, err)
		_, _, err = p.config.windowsPlan(win)
		require.NoError(t, err)
		assert.NotEmpty(t, p.config.versionWarnings())
		assert.Equal(t, once, n, "Prepare and the plan")
	})
}
