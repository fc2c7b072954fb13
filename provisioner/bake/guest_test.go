// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"context"
	"io"
	"strings"
	"testing"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
)

// linuxGuest is a Linux guest double that answers `uname -s`.
type linuxGuest struct{ guesttest.Linux }

func (g *linuxGuest) Start(ctx context.Context, cmd *packersdk.RemoteCmd) error {
	if cmd.Command != "uname -s" {
		return g.Linux.Start(ctx, cmd)
	}
	go func() {
		_, _ = io.WriteString(cmd.Stdout, "Linux\n")
		cmd.SetExited(0)
	}()
	return nil
}

// A setting a guest OS refuses is refused in the same words by `packer
// validate`, when guest_os_type names the OS, and by the build, once the
// guest is found to run it, before anything runs on it.
func TestGuestRulesOneWording(t *testing.T) {
	capi := map[string]any{"bootstrap": "cluster-api"}
	with := func(base map[string]any, k string, v any) map[string]any {
		out := map[string]any{k: v}
		for bk, bv := range base {
			out[bk] = bv
		}
		return out
	}
	cases := []struct {
		guest string
		raw   map[string]any
	}{
		{"windows", map[string]any{"keep_build_account": true}},
		{"windows", map[string]any{"hostname_prefix": "lab-"}},
		{"windows", map[string]any{"pull_kubeadm_images": true}},
		{"windows", map[string]any{"kubeadm_images": "pull"}},
		{"windows", map[string]any{"cni": "bridge"}},
		{"windows", map[string]any{"containerd_source": "package", "containerd_version": "2.2", "kubernetes_version": "v1.36.0"}},
		{"windows", with(capi, "cloud_init_datasources", []string{"NoCloud"})},
		{"linux", with(capi, "cloudbase_init_metadata_services", []string{"cloudbaseinit.metadata.services.configdrive.ConfigDriveService"})},
		{"linux", map[string]any{"windows_update": true}},
		{"linux", map[string]any{"windows_automatic_updates": true}},
		{"linux", map[string]any{"windows_features": []string{"Routing"}}},
		{"linux", map[string]any{"ntp_servers": []string{"time.example.com"}}},
		{"linux", map[string]any{"kubelet_priority_class": "HIGH_PRIORITY_CLASS"}},
		{"linux", map[string]any{"kubelet_system_reserved": map[string]string{"memory": "1Gi"}}},
		{"linux", map[string]any{"kubelet_kube_reserved": map[string]string{}}},
	}
	require.Len(t, cases, len(guestRules), "a case for each rule")
	for _, tc := range cases {
		var key string
		for k := range tc.raw {
			if k != "bootstrap" && k != "kubernetes_version" && k != "containerd_version" {
				key = k
			}
		}
		t.Run(tc.guest+"/"+key, func(t *testing.T) {
			var c Config
			err := c.Prepare(with(with(tc.raw, "guest_os_type", tc.guest), "download_cache_dir", t.TempDir()))
			require.Error(t, err)
			var msg string
			for _, line := range strings.Split(err.Error(), "\n") {
				if _, m, ok := strings.Cut(line, "* "); ok && strings.HasPrefix(m, key+": ") {
					msg = m
				}
			}
			require.NotEmpty(t, msg, "validate names %s: %v", key, err)

			var p Provisioner
			require.NoError(t, p.Prepare(with(tc.raw, "download_cache_dir", t.TempDir())), "the guest's OS is not known yet")
			lin, win := &linuxGuest{}, guesttest.NewWindows()
			var comm packersdk.Communicator = win
			if tc.guest == "linux" {
				comm = lin
			}
			err = p.Provision(context.Background(), guesttest.NewUI(), comm, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), msg, "the build refuses it in the same words")
			assert.Empty(t, lin.Steps, "nothing ran on the guest")
			assert.Empty(t, win.Files, "nothing was uploaded")
		})
	}
}
