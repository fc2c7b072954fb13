// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package versions

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestContainerdVersionFromOutput(t *testing.T) {
	for out, want := range map[string]string{
		"containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3\n":          "1.6.20",
		"containerd github.com/containerd/containerd/v2 2.2.1":                                   "2.2.1",
		"containerd github.com/containerd/containerd/v2 v2.3.7 a1b2c3d4e5f60718293a4b5c6d7e8f90": "2.3.7",
	} {
		got, err := ContainerdVersionFromOutput(out)
		require.NoError(t, err, out)
		assert.Equal(t, want, got, out)
	}
	for _, out := range []string{"", "containerd", "containerd github.com/containerd/containerd dev"} {
		_, err := ContainerdVersionFromOutput(out)
		assert.Error(t, err, "%q", out)
	}
}

// Every row names an os-release ID and version once, and a release.
func TestPackagedContainerdsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range PackagedContainerds {
		key := d.ID + " " + d.VersionID
		assert.False(t, seen[key], "%s listed twice", key)
		seen[key] = true
		assert.NotEmpty(t, d.Name)
		if d.Containerd != "" {
			assert.Regexp(t, `^[0-9]+\.[0-9]+\.[0-9]+$`, d.Containerd, d.Name)
			assert.NotEmpty(t, d.Package, d.Name)
		}
	}
}

// packer validate, the guest unknown: refused where no known
// distribution's package is in containerd's matrix, named where some are
// not.
func TestCheckPackagedContainerds(t *testing.T) {
	k37, err := LookupKubernetes("v1.37.2")
	require.NoError(t, err)
	_, err = CheckPackagedContainerds(k37)
	require.Error(t, err)
	assert.Equal(t, `containerd_source = "package" with kubernetes_version v1.37.2: containerd's Kubernetes support matrix lists 2.4.0+, 2.3.0+ for Kubernetes v1.37, `+
		`and no distribution kubenode-bake knows packages one (Debian 12: 1.6.20; Ubuntu 24.04: 2.2.1; Rocky Linux 9: no containerd package); `+
		`set containerd_source = "tarball" and containerd_version to a release it lists (the default, 2.3.7, is one)`, err.Error())

	k36, err := LookupKubernetes("v1.36.0")
	require.NoError(t, err)
	warn, err := CheckPackagedContainerds(k36)
	require.NoError(t, err, "Ubuntu 24.04's containerd 2.2.1 is in v1.36's matrix")
	assert.Equal(t, `containerd_source = "package" with kubernetes_version v1.36.0: containerd's Kubernetes support matrix lists 2.3.0+, 2.2.0+ for Kubernetes v1.36, `+
		`which Ubuntu 24.04's containerd 2.2.1 is; on Debian 12 (containerd 1.6.20) and Rocky Linux 9 (no containerd package) the bake fails once it has read the guest's containerd version`, warn)
}

// On the guest: the installed containerd against the matrix, with packer
// validate's message.
func TestCheckPackagedContainerd(t *testing.T) {
	k36, err := LookupKubernetes("v1.36.0")
	require.NoError(t, err)
	err = CheckPackagedContainerd(k36, "1.6.20", "Debian GNU/Linux 12 (bookworm)")
	require.Error(t, err)
	assert.Equal(t, `containerd_source = "package" with kubernetes_version v1.36.0: containerd's Kubernetes support matrix lists 2.3.0+, 2.2.0+ for Kubernetes v1.36, `+
		`and the containerd package of Debian GNU/Linux 12 (bookworm) installed containerd 1.6.20; `+
		`set containerd_source = "tarball" and containerd_version to a release it lists (the default, 2.3.7, is one)`, err.Error())
	// containerd 1.7 for v1.36: only the releases the matrix lists are
	// suggested.
	err = CheckPackagedContainerd(k36, "1.7.28", "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the containerd package of the guest installed containerd 1.7.28")
	assert.NotContains(t, err.Error(), "2.1.")
	assert.NotContains(t, err.Error(), "2.0.")
	assert.NoError(t, CheckPackagedContainerd(k36, "2.2.1", "Ubuntu 24.04.3 LTS"))
	assert.NoError(t, CheckPackagedContainerd(k36, "2.4.2", "Ubuntu 24.04.3 LTS"), "a minor newer than those listed")
}
