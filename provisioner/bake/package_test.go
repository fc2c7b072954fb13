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

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
)

// ubuntuContainerd answers `containerd --version` as Ubuntu 24.04's
// containerd package does.
var ubuntuContainerd = map[string]string{"containerd --version": "containerd github.com/containerd/containerd/v2 2.2.1\n"}

// containerd_source = "package" with v1.36: packer validate lets it
// through (Ubuntu 24.04's containerd 2.2.1 is in v1.36's matrix); on a
// Debian 12 guest, whose package installs containerd 1.6.20, the bake
// stops right after the prerequisites step with packer validate's
// refusal, naming the guest's OS, before containerd is configured.
func TestProvisionLinuxHoldsThePackagedContainerdToItsMatrix(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"kubelet", "kubeadm", "kubectl"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(f), 0o755))
	}
	var p Provisioner
	require.NoError(t, p.Prepare(map[string]any{
		"guest_os_type": "linux", "kubernetes_version": "v1.36.0", "containerd_source": "package", "artifacts_dir": dir,
		"download_cache_dir": t.TempDir(), "install_joiner": false, "generalize": false, "install_crictl": false,
	}))

	debian := &guesttest.Linux{
		Commands:  map[string]string{"containerd --version": "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3\n"},
		OSRelease: "debian\n12\nDebian GNU/Linux 12 (bookworm)\n",
	}
	err := p.Provision(context.Background(), guesttest.NewUI(), debian, nil)
	require.Error(t, err)
	assert.Equal(t, `containerd_source = "package" with kubernetes_version v1.36.0: containerd's Kubernetes support matrix lists 2.3.0+, 2.2.0+ for Kubernetes v1.36, `+
		`and the containerd package of Debian GNU/Linux 12 (bookworm) installed containerd 1.6.20; `+
		`set containerd_source = "tarball" and containerd_version to a release it lists (the default, 2.3.7, is one)`, err.Error())
	assert.Equal(t, []string{"settle", "verify-artifacts", "prerequisites"}, debian.Steps, "nothing runs after the prerequisites")

	ubuntu := &guesttest.Linux{Commands: ubuntuContainerd, OSRelease: "ubuntu\n24.04\nUbuntu 24.04.3 LTS\n"}
	ui := guesttest.NewUI()
	require.NoError(t, p.Provision(context.Background(), ui, ubuntu, nil))
	assert.Contains(t, ubuntu.Steps, "containerd")
	assert.Contains(t, ui.Out.String(), "kubenode-bake: the distribution's containerd 2.2.1 is one containerd's Kubernetes support matrix lists for Kubernetes v1.36")
	assert.Contains(t, ui.Err.String(), "on Debian 12 (containerd 1.6.20)", "the warning packer validate gave")
}
