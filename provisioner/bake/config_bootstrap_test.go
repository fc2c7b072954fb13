// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/linux"
)

// bootstrap defaults to the joiner, as before; cluster-api gets the
// default datasources and no joiner.
func TestPrepareBootstrapDefaults(t *testing.T) {
	var c Config
	require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir()}))
	assert.Equal(t, "joiner", c.Bootstrap)
	assert.Empty(t, c.CloudInitDatasources)
	assert.True(t, *c.InstallJoiner)

	c = Config{}
	require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "bootstrap": "cluster-api"}))
	assert.Equal(t, []string{"NoCloud", "ConfigDrive", "OpenStack", "None"}, c.CloudInitDatasources)
	assert.False(t, *c.InstallJoiner)

	c = Config{}
	require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "bootstrap": "cluster-api", "guest_os_type": "linux",
		"cloud_init_datasources": []string{"ConfigDrive", "Ec2", "None"}, "install_joiner": false}))
	assert.Equal(t, []string{"ConfigDrive", "Ec2", "None"}, c.CloudInitDatasources)

	for _, ds := range [][]string{{"NoCloud"}, {"ConfigDrive", "None"}} {
		c = Config{}
		assert.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "bootstrap": "cluster-api", "cloud_init_datasources": ds}), "%v", ds)
	}
	c = Config{}
	require.NoError(t, c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "bootstrap": "cluster-api", "cni": "none"}), "cni = none stays allowed")
}

// Every problem of the Cluster API keys is reported at once, each naming
// its key.
func TestPrepareBootstrapNamesEveryBadKey(t *testing.T) {
	dir := t.TempDir()
	joiner := filepath.Join(dir, "kubenode-joiner")
	require.NoError(t, os.WriteFile(joiner, []byte("x"), 0o755))
	var c Config
	err := c.Prepare(map[string]any{
		"download_cache_dir": t.TempDir(), "bootstrap": "cluster-api", "guest_os_type": "windows",
		"install_joiner":         true,
		"artifacts":              map[string]string{"joiner": joiner},
		"artifact_checksums":     map[string]string{"joiner": "sha256:" + sum("x")},
		"node_labels":            map[string]string{"example.com/pool": "a"},
		"kubelet_extra_args":     map[string]string{"v": "2"},
		"cloud_init_datasources": []string{"NoCloud"},
		"cloudbase_init_metadata_services": []string{
			"cloudbaseinit.metadata.services.nocloudservice.NoCloudConfigDriveService", "NoCloud",
			"cloudbaseinit.metadata.services.nocloudservice.NoCloudConfigDriveService",
		},
	})
	require.Error(t, err)
	for _, want := range []string{
		`cloud_init_datasources: Linux-only (cloud-init's datasources); a Windows guest gets cloudbase-init: remove cloud_init_datasources`,
		`cloudbase_init_metadata_services[1]: "NoCloud" is not a metadata service kubenode-bake knows (known: cloudbaseinit.metadata.services.configdrive.ConfigDriveService, `,
		`cloudbase_init_metadata_services[2]: "cloudbaseinit.metadata.services.nocloudservice.NoCloudConfigDriveService" is listed twice`,
		`install_joiner: bootstrap = "cluster-api" images have no joiner`,
		`artifacts.joiner: bootstrap = "cluster-api" images have no joiner; remove it`,
		`artifact_checksums.joiner: bootstrap = "cluster-api" images have no joiner; remove it`,
		`node_labels: the joiner sets them, and bootstrap = "cluster-api" images have none; set the labels in the KubeadmConfigTemplate`,
		`kubelet_extra_args: the joiner passes them`,
	} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), "cloudbase_init_metadata_services[0]")
	assert.NotContains(t, err.Error(), `"cluster-api" is for Linux guests only`)

	c = Config{}
	err = c.Prepare(map[string]any{
		"download_cache_dir": t.TempDir(), "bootstrap": "cluster-api", "guest_os_type": "linux",
		"cloud_init_datasources":           []string{"NoCloud", "nocloud", "Metal3", "NoCloud"},
		"cloudbase_init_metadata_services": []string{"cloudbaseinit.metadata.services.configdrive.ConfigDriveService"},
	})
	require.Error(t, err)
	for _, want := range []string{
		`cloud_init_datasources[1]: "nocloud" is not a datasource cloud-init knows (known: NoCloud, ConfigDrive, `,
		`cloud_init_datasources[2]: "Metal3" is not a datasource cloud-init knows`,
		`cloud_init_datasources[3]: "NoCloud" is listed twice`,
		`cloudbase_init_metadata_services: Windows-only (cloudbase-init's metadata services); a Linux guest gets cloud-init`,
	} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), "cloud_init_datasources[0]")

	for _, tc := range []struct {
		raw  map[string]any
		want string
	}{
		{map[string]any{"bootstrap": "ignition"}, `bootstrap: "ignition" is not joiner or cluster-api`},
		{map[string]any{"cloud_init_datasources": []string{"NoCloud"}}, `cloud_init_datasources: only used with bootstrap = "cluster-api"`},
		{map[string]any{"cloudbase_init_metadata_services": []string{"cloudbaseinit.metadata.services.configdrive.ConfigDriveService"}}, `cloudbase_init_metadata_services: only used with bootstrap = "cluster-api"`},
		{map[string]any{"bootstrap": "cluster-api", "cni": "bridge"}, `cni: "bridge" with bootstrap = "cluster-api" would give every node made from the image the same pod subnet (bridge_subnet); remove cni`},
		{map[string]any{"bootstrap": "cluster-api", "cloud_init_datasources": []string{"None"}}, `cloud_init_datasources: lists no datasource but None, which has no bootstrap data, so no node made from the image would join; list the one your infrastructure provider delivers it through (NoCloud, ConfigDrive, OpenStack, ...)`},
		{map[string]any{"bootstrap": "cluster-api", "cloud_init_datasources": []string{"None", "NoCloud"}}, `cloud_init_datasources[0]: "None" must be last: cloud-init tries the datasources in order and None always succeeds`},
		{map[string]any{"bootstrap": "cluster-api", "cloud_init_datasources": []string{"NoCloud", "None", "ConfigDrive"}}, `cloud_init_datasources[1]: "None" must be last`},
	} {
		var c Config
		tc.raw["download_cache_dir"] = t.TempDir()
		err := c.Prepare(tc.raw)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// With guest_os_type unset, a guest found to run Windows refuses the
// cloud_init_datasources the configuration set, by name, before anything
// is uploaded; the default datasources Prepare filled in are no problem.
func TestProvisionClusterAPIWindowsRefusesCloudInitDatasources(t *testing.T) {
	var p Provisioner
	require.NoError(t, p.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "bootstrap": "cluster-api", "cloud_init_datasources": []string{"NoCloud"}}))
	g := guesttest.NewWindows()
	err := p.Provision(context.Background(), guesttest.NewUI(), g, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `cloud_init_datasources: Linux-only`)
	assert.Empty(t, g.Files, "nothing is uploaded")

	var q Provisioner
	require.NoError(t, q.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "bootstrap": "cluster-api"}))
	assert.Empty(t, q.config.guestRefusals("windows"), "the default datasources are not the user's")
	assert.Equal(t, linux.DefaultCloudInitDatasources, q.config.CloudInitDatasources)

	var l Provisioner
	require.NoError(t, l.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "bootstrap": "cluster-api",
		"cloudbase_init_metadata_services": []string{"cloudbaseinit.metadata.services.configdrive.ConfigDriveService"}}))
	errs := l.config.guestRefusals("linux")
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), "cloudbase_init_metadata_services: Windows-only")
}

// A Linux bake for Cluster API runs the cluster-api step instead of the
// joiner's, uploads no joiner, and records its bootstrap for the manifest.
func TestProvisionLinuxClusterAPI(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"kubelet", "kubeadm", "kubectl"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(f), 0o755))
	}
	var p Provisioner
	require.NoError(t, p.Prepare(map[string]any{
		"guest_os_type": "linux", "containerd_source": "package", "containerd_version": "2.2", "kubernetes_version": "v1.36.0", "artifacts_dir": dir, "download_cache_dir": t.TempDir(),
		"generalize": false, "install_crictl": false, "bootstrap": "cluster-api", "packer_build_name": "capi",
	}))
	plan, arts, err := p.config.linuxPlan()
	require.NoError(t, err)
	assert.Empty(t, plan.JoinerConfig)
	assert.Equal(t, linux.DefaultCloudInitDatasources, plan.CloudInitDatasources)
	for _, a := range arts {
		assert.NotEqual(t, versions.ArtifactJoiner, a.Name)
	}
	t.Setenv("PACKER_RUN_UUID", "test-"+t.Name())
	g := &guesttest.Linux{Commands: ubuntuContainerd}
	ui := guesttest.NewUI()
	require.NoError(t, p.Provision(context.Background(), ui, g, nil))
	assert.Equal(t, []string{"settle", "verify-artifacts", "prerequisites", "node-basics", "kernel", "containerd", "cni", "kubernetes", "cluster-api", "self-check", "cleanup"}, g.Steps)
	assert.Contains(t, ui.Out.String(), `bootstrap = "cluster-api": cloud-init (datasources NoCloud, ConfigDrive, OpenStack, None) runs Cluster API's kubeadm join; no joiner`)
	rec, err := baked.Take("capi")
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, "cluster-api", rec.Facts.Bootstrap)
	assert.Empty(t, rec.Facts.Joiner)
}

// The keys decode from HCL as users write them (the generated spec),
// through Prepare.
func TestBootstrapFromHCL(t *testing.T) {
	src := fmt.Sprintf(`
download_cache_dir     = %q
bootstrap              = "cluster-api"
cloud_init_datasources = ["ConfigDrive", "None"]
`, t.TempDir())
	f, diags := hclparse.NewParser().ParseHCL([]byte(src), "bake.pkr.hcl")
	require.False(t, diags.HasErrors(), diags.Error())
	var p Provisioner
	v, diags := hcldec.Decode(f.Body, p.ConfigSpec(), nil)
	require.False(t, diags.HasErrors(), diags.Error())
	require.NoError(t, p.Prepare(v))
	assert.Equal(t, "cluster-api", p.config.Bootstrap)
	assert.Equal(t, []string{"ConfigDrive", "None"}, p.config.CloudInitDatasources)
}
