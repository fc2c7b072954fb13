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

// packer validate, the guest unknown: a declared containerd_version is
// held to containerd's matrix for the minor (a minor alone or a release);
// unset, the package path passes only when every distribution that
// packages containerd packages one the matrix lists.
func TestCheckPackagedContainerds(t *testing.T) {
	const tarball = `set containerd_source = "tarball" and containerd_version to a release it lists`
	for _, tc := range []struct {
		k8s, declared string
		// want is the whole refusal; "" accepts.
		want string
	}{
		{"v1.36.0", "", `containerd_source = "package" with kubernetes_version v1.36.0 and containerd_version unset: ` +
			`containerd's Kubernetes support matrix lists 2.3.0+, 2.2.0+ for Kubernetes v1.36, and not every distribution kubenode-bake knows packages one ` +
			`(Debian 12: 1.6.20, not supported by v1.36; Ubuntu 24.04: 2.2.1; Rocky Linux 9: no containerd package); ` +
			`set containerd_version to the containerd release your distribution's package is built from (X.Y or X.Y.Z; the bake checks it on the guest), ` +
			`or ` + tarball + ` (the default, 2.3.7, is one)`},
		{"v1.37.2", "", `containerd_source = "package" with kubernetes_version v1.37.2 and containerd_version unset: ` +
			`containerd's Kubernetes support matrix lists 2.4.0+, 2.3.0+ for Kubernetes v1.37, and not every distribution kubenode-bake knows packages one ` +
			`(Debian 12: 1.6.20, not supported by v1.37; Ubuntu 24.04: 2.2.1, not supported by v1.37; Rocky Linux 9: no containerd package); ` +
			`set containerd_version to the containerd release your distribution's package is built from (X.Y or X.Y.Z; the bake checks it on the guest), ` +
			`or ` + tarball + ` (the default, 2.3.7, is one)`},
		// Debian 12's 1.6.20 is older than every minor's matrix.
		{"v1.35.0", "", `containerd_source = "package" with kubernetes_version v1.35.0 and containerd_version unset: ` +
			`containerd's Kubernetes support matrix lists 2.2.0+, 2.1.5+, 1.7.28+ for Kubernetes v1.35, and not every distribution kubenode-bake knows packages one ` +
			`(Debian 12: 1.6.20, not supported by v1.35; Ubuntu 24.04: 2.2.1; Rocky Linux 9: no containerd package); ` +
			`set containerd_version to the containerd release your distribution's package is built from (X.Y or X.Y.Z; the bake checks it on the guest), ` +
			`or ` + tarball + ` (the default, 2.3.7, is one)`},
		{"v1.36.0", "1.6", `containerd_source = "package" with kubernetes_version v1.36.0 and containerd_version 1.6: ` +
			`containerd's Kubernetes support matrix lists 2.3.0+, 2.2.0+ for Kubernetes v1.36, and 1.6 is not one; ` +
			`build on a distribution whose containerd package is one of those and set containerd_version to its release, ` +
			`or ` + tarball + ` (the default, 2.3.7, is one)`},
		{"v1.36.0", "1.6.20", `containerd_source = "package" with kubernetes_version v1.36.0 and containerd_version 1.6.20: ` +
			`containerd's Kubernetes support matrix lists 2.3.0+, 2.2.0+ for Kubernetes v1.36, and 1.6.20 is not one; ` +
			`build on a distribution whose containerd package is one of those and set containerd_version to its release, ` +
			`or ` + tarball + ` (the default, 2.3.7, is one)`},
		// Listed minor, release older than the matrix's oldest of it.
		{"v1.35.0", "2.1.4", `containerd_source = "package" with kubernetes_version v1.35.0 and containerd_version 2.1.4: ` +
			`containerd's Kubernetes support matrix lists 2.2.0+, 2.1.5+, 1.7.28+ for Kubernetes v1.35, and 2.1.4 is not one; ` +
			`build on a distribution whose containerd package is one of those and set containerd_version to its release, or ` + tarball + ` (the default, 2.3.7, is one)`},
		{"v1.36.0", "2.2", ""},
		{"v1.36.0", "2.2.1", ""},
		{"v1.36.0", "2.4", "" /* newer than the matrix lists */},
		{"v1.35.0", "2.1", ""}, // the guest's release is checked there
		{"v1.37.2", "2.3", ""},
		{"v1.36.0", "v2.2", `containerd_version: with containerd_source = "package" it names the containerd release the distribution's package is built from, X.Y or X.Y.Z without a v; "v2.2" is neither`},
		{"v1.36.0", "2", `containerd_version: with containerd_source = "package" it names the containerd release the distribution's package is built from, X.Y or X.Y.Z without a v; "2" is neither`},
		{"v1.36.0", "2.2.1~ds1", `containerd_version: with containerd_source = "package" it names the containerd release the distribution's package is built from, X.Y or X.Y.Z without a v; "2.2.1~ds1" is neither`},
	} {
		k, err := LookupKubernetes(tc.k8s)
		require.NoError(t, err)
		err = CheckPackagedContainerds(k, tc.declared)
		if tc.want == "" {
			assert.NoError(t, err, "%s with containerd_version %q", tc.k8s, tc.declared)
			continue
		}
		if assert.Error(t, err, "%s with containerd_version %q", tc.k8s, tc.declared) {
			assert.Equal(t, tc.want, err.Error())
		}
	}
}

// Unset, the package path passes when every distribution that packages
// containerd packages one the matrix lists (Rocky Linux 9's none is the
// guest's failure, not the matrix's).
func TestCheckPackagedContainerdsEveryDistributionListed(t *testing.T) {
	saved := PackagedContainerds
	t.Cleanup(func() { PackagedContainerds = saved })
	PackagedContainerds = []PackagedContainerd{
		{ID: "debian", VersionID: "13", Name: "Debian 13", Containerd: "2.2.3", Package: "2.2.3-1"},
		{ID: "ubuntu", VersionID: "24.04", Name: "Ubuntu 24.04", Containerd: "2.2.1", Package: "2.2.1-0ubuntu1~24.04.3"},
		{ID: "rocky", VersionID: "9", Name: "Rocky Linux 9"},
	}
	k36, err := LookupKubernetes("v1.36.0")
	require.NoError(t, err)
	assert.NoError(t, CheckPackagedContainerds(k36, ""))
	k35, err := LookupKubernetes("v1.35.0")
	require.NoError(t, err)
	assert.NoError(t, CheckPackagedContainerds(k35, ""))
	k37, err := LookupKubernetes("v1.37.2")
	require.NoError(t, err)
	err = CheckPackagedContainerds(k37, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "(Debian 13: 2.2.3, not supported by v1.37; Ubuntu 24.04: 2.2.1, not supported by v1.37; Rocky Linux 9: no containerd package)")
}

// On the guest: the installed containerd against the declared release's
// minor, then against the matrix, with packer validate's message.
func TestCheckPackagedContainerd(t *testing.T) {
	const matrix36 = `containerd_source = "package" with kubernetes_version v1.36.0: containerd's Kubernetes support matrix lists 2.3.0+, 2.2.0+ for Kubernetes v1.36, `
	const tarball = `set containerd_source = "tarball" and containerd_version to a release it lists (the default, 2.3.7, is one)`
	const debian, ubuntu = "Debian GNU/Linux 12 (bookworm)", "Ubuntu 24.04.3 LTS"
	for _, tc := range []struct {
		declared, found, guest string
		want                   string // "": accepted
	}{
		{"", "1.6.20", debian, matrix36 + `and the containerd package of Debian GNU/Linux 12 (bookworm) installed containerd 1.6.20; ` + tarball},
		// containerd 1.7 for v1.36: only the releases the matrix lists
		// are named.
		{"", "1.7.28", "", matrix36 + `and the containerd package of the guest installed containerd 1.7.28; ` + tarball},
		{"", "2.2.1", ubuntu, ""},
		{"", "2.4.2", ubuntu, ""}, // a minor newer than those listed
		{"2.2", "2.2.1", ubuntu, ""},
		{"2.2.1", "2.2.3", ubuntu, ""}, // the minor is what is compared
		// Declared for Ubuntu, built on Debian.
		{"2.2", "1.6.20", debian, `containerd_version 2.2 with containerd_source = "package": the containerd package of Debian GNU/Linux 12 (bookworm) installed containerd 1.6.20, a release of 1.6, not 2.2; ` +
			`set containerd_version to 1.6, the release this distribution's package is built from (packer validate then holds it to containerd's Kubernetes support matrix), ` +
			`or build on a distribution whose containerd package is of 2.2`},
		{"2.3", "2.2.1", "", `containerd_version 2.3 with containerd_source = "package": the containerd package of the guest installed containerd 2.2.1, a release of 2.2, not 2.3; ` +
			`set containerd_version to 2.2, the release this distribution's package is built from (packer validate then holds it to containerd's Kubernetes support matrix), ` +
			`or build on a distribution whose containerd package is of 2.3`},
	} {
		k36, err := LookupKubernetes("v1.36.0")
		require.NoError(t, err)
		err = CheckPackagedContainerd(k36, tc.declared, tc.found, tc.guest)
		if tc.want == "" {
			assert.NoError(t, err, "declared %q, found %s", tc.declared, tc.found)
			continue
		}
		if assert.Error(t, err, "declared %q, found %s", tc.declared, tc.found) {
			assert.Equal(t, tc.want, err.Error())
		}
	}
	// The declared minor, a release older than the matrix's (v1.35:
	// 2.1.5+).
	k35, err := LookupKubernetes("v1.35.0")
	require.NoError(t, err)
	err = CheckPackagedContainerd(k35, "2.1", "2.1.3", ubuntu)
	require.Error(t, err)
	assert.Equal(t, `containerd_source = "package" with kubernetes_version v1.35.0 and containerd_version 2.1: `+
		`containerd's Kubernetes support matrix lists 2.2.0+, 2.1.5+, 1.7.28+ for Kubernetes v1.35, `+
		`and the containerd package of Ubuntu 24.04.3 LTS installed containerd 2.1.3; `+tarball, err.Error())
}
