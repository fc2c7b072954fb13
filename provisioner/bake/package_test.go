// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
)

// ubuntuContainerd answers `containerd --version` as Ubuntu 24.04's
// containerd package does.
var ubuntuContainerd = map[string]string{"containerd --version": "containerd github.com/containerd/containerd/v2 2.2.1\n"}

// debianContainerd answers `containerd --version` as Debian 12's
// containerd package does.
var debianContainerd = map[string]string{"containerd --version": "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3\n"}

const debianOSRelease = "debian\n12\nDebian GNU/Linux 12 (bookworm)\n"

// containerd_source = "package" on the guest: the bake reads the
// package's containerd right after the prerequisites step and, before
// containerd is configured, stops when it is of another minor than
// containerd_version declared, or (declared or not) when containerd's
// matrix does not list it for the Kubernetes minor, naming the guest's OS.
func TestProvisionLinuxHoldsThePackagedContainerdToItsMatrix(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"kubelet", "kubeadm", "kubectl"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(f), 0o755))
	}
	prepare := func(t *testing.T, ctr string) *Provisioner {
		t.Helper()
		raw := map[string]any{
			"guest_os_type": "linux", "kubernetes_version": "v1.36.0", "containerd_source": "package", "artifacts_dir": dir,
			"download_cache_dir": t.TempDir(), "install_joiner": false, "generalize": false, "install_crictl": false,
		}
		if ctr != "" {
			raw["containerd_version"] = ctr
		}
		var p Provisioner
		require.NoError(t, p.Prepare(raw))
		return &p
	}
	stopped := []string{"settle", "verify-artifacts", "prerequisites"}

	for _, tc := range []struct {
		name, ctr          string
		commands           map[string]string
		osRelease, wantErr string // wantErr "": the bake goes on
	}{
		{"declared, Ubuntu's package", "2.2", ubuntuContainerd, "ubuntu\n24.04\nUbuntu 24.04.3 LTS\n", ""},
		{"declared release, the guest's a later patch", "2.2.0", ubuntuContainerd, "ubuntu\n24.04\nUbuntu 24.04.3 LTS\n", ""},
		{"declared for Ubuntu, built on Debian", "2.2", debianContainerd, debianOSRelease,
			`containerd_version 2.2 with containerd_source = "package": the containerd package of Debian GNU/Linux 12 (bookworm) installed containerd 1.6.20, a release of 1.6, not 2.2; ` +
				`set containerd_version to 1.6, the release this distribution's package is built from (packer validate then holds it to containerd's Kubernetes support matrix), ` +
				`or build on a distribution whose containerd package is of 2.2`},
		{"declared 2.3, Ubuntu's 2.2", "2.3", ubuntuContainerd, "ubuntu\n24.04\nUbuntu 24.04.3 LTS\n",
			`containerd_version 2.3 with containerd_source = "package": the containerd package of Ubuntu 24.04.3 LTS installed containerd 2.2.1, a release of 2.2, not 2.3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := prepare(t, tc.ctr)
			g := &guesttest.Linux{Commands: tc.commands, OSRelease: tc.osRelease}
			ui := guesttest.NewUI()
			err := p.Provision(context.Background(), ui, g, nil)
			if tc.wantErr == "" {
				require.NoError(t, err)
				assert.Contains(t, g.Steps, "containerd")
				assert.Contains(t, ui.Out.String(), "kubenode-bake: the distribution's containerd 2.2.1 is one containerd's Kubernetes support matrix lists for Kubernetes v1.36")
				return
			}
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tc.wantErr), "%v", err)
			assert.Equal(t, stopped, g.Steps, "nothing runs after the prerequisites")
		})
	}

	// containerd_version unset passes packer validate only when every
	// distribution the table knows packages a release the matrix lists
	// (none does for any minor today: Debian 12's 1.6.20); the guest's
	// package is checked all the same.
	t.Run("unset", func(t *testing.T) {
		saved := versions.PackagedContainerds
		t.Cleanup(func() { versions.PackagedContainerds = saved })
		versions.PackagedContainerds = []versions.PackagedContainerd{
			{ID: "ubuntu", VersionID: "24.04", Name: "Ubuntu 24.04", Containerd: "2.2.1", Package: "2.2.1-0ubuntu1~24.04.3"},
		}
		p := prepare(t, "")
		debian := &guesttest.Linux{Commands: debianContainerd, OSRelease: debianOSRelease}
		err := p.Provision(context.Background(), guesttest.NewUI(), debian, nil)
		require.Error(t, err)
		assert.Equal(t, `containerd_source = "package" with kubernetes_version v1.36.0: containerd's Kubernetes support matrix lists 2.3.0+, 2.2.0+ for Kubernetes v1.36, `+
			`and the containerd package of Debian GNU/Linux 12 (bookworm) installed containerd 1.6.20; `+
			`set containerd_source = "tarball" and containerd_version to a release it lists (the default, 2.3.7, is one)`, err.Error())
		assert.Equal(t, stopped, debian.Steps, "nothing runs after the prerequisites")

		ubuntu := &guesttest.Linux{Commands: ubuntuContainerd, OSRelease: "ubuntu\n24.04\nUbuntu 24.04.3 LTS\n"}
		require.NoError(t, p.Provision(context.Background(), guesttest.NewUI(), ubuntu, nil))
		assert.Contains(t, ubuntu.Steps, "containerd")
	})
}
