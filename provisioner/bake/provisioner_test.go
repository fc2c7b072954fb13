// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/windows"
)

// Provision on Linux records for kubenode-export what the SBOM lists: the
// artifacts with their releases and sources, the guest's installed
// packages (not one removed with its configuration kept), the runc the
// guest runs, and the configuration's digest.
func TestProvisionLinuxRecordsTheInventory(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"kubelet", "kubeadm", "kubectl"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(f), 0o755))
	}
	config := map[string]any{
		"guest_os_type": "linux", "containerd_source": "package", "containerd_version": "2.2", "kubernetes_version": "v1.36.0", "artifacts_dir": dir, "download_cache_dir": t.TempDir(),
		"generalize": false, "install_crictl": false, "bootstrap": "cluster-api", "packer_build_name": "linux",
	}
	var p Provisioner
	require.NoError(t, p.Prepare(config))
	t.Setenv("PACKER_RUN_UUID", "test-"+t.Name())
	require.NoError(t, p.Provision(context.Background(), guesttest.NewUI(), &guesttest.Linux{Commands: ubuntuContainerd}, nil))
	rec, err := baked.Take("linux")
	require.NoError(t, err)
	require.NotNil(t, rec)
	k8s := rec.Facts.Kubernetes
	require.NotEmpty(t, k8s)
	sum := sha256.Sum256([]byte("kubelet"))
	assert.Equal(t, []baked.Artifact{
		{Name: "kubelet", Version: k8s, URL: "https://dl.k8s.io/release/" + k8s + "/bin/linux/amd64/kubelet", SHA256: hex.EncodeToString(sum[:])},
		{Name: "kubeadm", Version: k8s, URL: "https://dl.k8s.io/release/" + k8s + "/bin/linux/amd64/kubeadm", SHA256: rec.Facts.Checksums["kubeadm"]},
		{Name: "kubectl", Version: k8s, URL: "https://dl.k8s.io/release/" + k8s + "/bin/linux/amd64/kubectl", SHA256: rec.Facts.Checksums["kubectl"]},
	}, rec.Inventory.Artifacts, "containerd and runc come from the distribution's packages")
	assert.Equal(t, []baked.Package{
		{Name: "libc6", Version: "2.36-9+deb12u10", Arch: "amd64", Source: "glibc"},
		{Name: "runc", Version: "1.1.5+ds1-1+deb12u1", Arch: "amd64"},
	}, rec.Inventory.Packages)
	assert.Equal(t, "deb", rec.Inventory.PackageType)
	assert.Equal(t, "1.3.0", rec.Facts.Runc)
	assert.Regexp(t, `^[0-9a-f]{64}$`, rec.ConfigSHA256)

	config["kubernetes_version"] = "v1.35.4"
	var other Provisioner
	require.NoError(t, other.Prepare(config))
	assert.NotEqual(t, rec.ConfigSHA256, other.config.configSHA256, "another configuration, another digest")
}

// keep_build_account is Linux's: a Windows build refuses it by name.
func TestKeepBuildAccountIsLinuxOnly(t *testing.T) {
	var c Config
	err := c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": "windows", "keep_build_account": true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "keep_build_account: ")
	var linux Config
	require.NoError(t, linux.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "guest_os_type": "linux", "keep_build_account": true}))
	assert.True(t, linux.KeepBuildAccount)
}

// Provision on Windows: the guest's build picks the Windows row, artifacts come
// from artifacts_dir, and what was baked reaches kubenode-export.
func TestProvisionWindowsFromArtifactsDir(t *testing.T) {
	win, err := versions.LookupWindows("")
	require.NoError(t, err)
	dir := t.TempDir()
	var p Provisioner
	require.NoError(t, p.Prepare(map[string]any{
		"guest_os_type": "windows", "artifacts_dir": dir, "download_cache_dir": t.TempDir(),
		"packer_build_name": "win", "node_labels": map[string]string{"example.com/pool": "win"},
	}))
	plan, arts, err := p.config.windowsPlan(win)
	require.NoError(t, err)
	for _, a := range arts {
		require.NoError(t, os.WriteFile(filepath.Join(dir, a.FileName), []byte("local "+a.Name), 0o644))
	}
	t.Setenv("PACKER_RUN_UUID", "test-"+t.Name())
	g := guesttest.NewWindows()
	g.Build = fmt.Sprint(win.Build)
	// The builder says where the guest reaches this machine: the guest
	// downloads the artifacts from the bake's server over real HTTP.
	require.NoError(t, p.Provision(context.Background(), guesttest.NewUI(), g, map[string]interface{}{"PackerHTTPIP": "127.0.0.1"}))
	assert.Equal(t, []string{"mkdir", "fetch-artifacts", "verify-artifacts", "automatic-updates", "containers-feature", "registry", "time-sync", "containerd", "cni", "kubelet", "crictl", "defender", "joiner", "permissions", "self-check", "cleanup", "mkdir", "sysprep"}, g.Steps())
	rec, err := baked.Take("win")
	require.NoError(t, err)
	require.NotNil(t, rec)
	facts := rec.Facts
	assert.Equal(t, baked.GuestOS{ID: "windows", Version: win.Version, Name: "Windows Server 2022 Datacenter", Build: fmt.Sprint(win.Build)}, rec.OS, "what the guest reported")
	assert.Equal(t, plan.Kubernetes.Version, facts.Kubernetes)
	assert.Equal(t, plan.Containerd.Version, facts.Containerd)
	assert.Equal(t, plan.PauseImage, facts.PauseImage)
	assert.Equal(t, "v0.9.1", facts.Joiner)
	assert.Equal(t, "joiner", facts.Bootstrap, "the default bootstrap, recorded for the manifest")
	sum := sha256.Sum256([]byte("local " + versions.ArtifactKubelet))
	assert.Equal(t, hex.EncodeToString(sum[:]), facts.Checksums[versions.ArtifactKubelet])
	// The SBOM's inventory: each artifact with its release and source, the
	// guest's features and the sha256 of the binaries it installed.
	inv := rec.Inventory
	assert.Contains(t, inv.Artifacts, baked.Artifact{Name: versions.ArtifactKubelet, Version: plan.Kubernetes.Version,
		URL: "https://dl.k8s.io/release/" + plan.Kubernetes.Version + "/bin/windows/amd64/kubelet.exe", SHA256: hex.EncodeToString(sum[:])})
	assert.Contains(t, inv.Artifacts, baked.Artifact{Name: versions.ArtifactJoiner, Version: "v0.9.1", SHA256: facts.Checksums[versions.ArtifactJoiner]},
		"the joiner's version as the installed binary reports it")
	assert.Len(t, inv.Artifacts, len(arts))
	assert.Contains(t, inv.Features, "Containers", "installed by the bake before the inventory")
	assert.Contains(t, inv.Files, baked.File{Path: `C:\k\kubelet.exe`, SHA256: hex.EncodeToString(sum[:])}, "the installed kubelet as the guest hashed it")
	assert.Empty(t, inv.Packages, "Windows has no package database")
	assert.Regexp(t, `^[0-9a-f]{64}$`, rec.ConfigSHA256)

	g = guesttest.NewWindows()
	g.Build = "9200"
	err = p.Provision(context.Background(), guesttest.NewUI(), g, nil)
	require.ErrorContains(t, err, "windows_version: the guest runs Windows build 9200, which is not in kubenode-bake's version table")
	assert.Empty(t, g.Files, "nothing is uploaded to an unknown release")
}

// A Windows bake for Cluster API (bootstrap = "cluster-api") installs
// cloudbase-init from its MSI artifact instead of the joiner, answers the
// clone's specialize pass with cloudbase-init's unattend run, and records
// its bootstrap for the manifest.
func TestProvisionWindowsClusterAPI(t *testing.T) {
	win, err := versions.LookupWindows("")
	require.NoError(t, err)
	dir := t.TempDir()
	var p Provisioner
	require.NoError(t, p.Prepare(map[string]any{
		"guest_os_type": "windows", "artifacts_dir": dir, "download_cache_dir": t.TempDir(),
		"packer_build_name": "win-capi", "bootstrap": "cluster-api",
		"cloudbase_init_metadata_services": []string{windows.CloudbaseInitNoCloud},
	}))
	assert.Empty(t, p.config.CloudInitDatasources, "no cloud-init datasources for a Windows guest")
	plan, arts, err := p.config.windowsPlan(win)
	require.NoError(t, err)
	assert.True(t, plan.ClusterAPI)
	assert.False(t, plan.InstallJoiner)
	assert.Equal(t, []string{windows.CloudbaseInitNoCloud}, plan.CloudbaseInitMetadataServices)
	assert.Contains(t, string(plan.FirstBoot), windows.CloudbaseInitUnattendCommand[1:20], "specialize runs cloudbase-init's unattend configuration")
	assert.NotContains(t, string(plan.FirstBoot), "kubenode-joiner")
	var names []string
	for _, a := range arts {
		names = append(names, a.Name)
		require.NoError(t, os.WriteFile(filepath.Join(dir, a.FileName), []byte("local "+a.Name), 0o644))
	}
	assert.Contains(t, names, versions.ArtifactCloudbaseInit)
	assert.NotContains(t, names, versions.ArtifactJoiner)
	t.Setenv("PACKER_RUN_UUID", "test-"+t.Name())
	g := guesttest.NewWindows()
	g.Build = fmt.Sprint(win.Build)
	require.NoError(t, p.Provision(context.Background(), guesttest.NewUI(), g, map[string]interface{}{"PackerHTTPIP": "127.0.0.1"}))
	assert.Equal(t, []string{"mkdir", "fetch-artifacts", "verify-artifacts", "automatic-updates", "containers-feature", "registry", "time-sync", "containerd", "cni", "kubelet", "crictl", "defender", "cloudbase-init", "permissions", "self-check", "cleanup", "mkdir", "sysprep"}, g.Steps())
	rec, err := baked.Take("win-capi")
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, "cluster-api", rec.Facts.Bootstrap, "recorded for the manifest")
	assert.Empty(t, rec.Facts.Joiner)
}

// With allow_unlisted_version, a bake of a Kubernetes minor the table lacks
// warns in the UI, naming the version and the row whose facts it takes,
// installs the version asked for, and records the warning for the manifest.
func TestProvisionWarnsOfAnUnlistedVersion(t *testing.T) {
	win, err := versions.LookupWindows("")
	require.NoError(t, err)
	newest := versions.KubernetesMinors[len(versions.KubernetesMinors)-1]
	dir := t.TempDir()
	var p Provisioner
	require.NoError(t, p.Prepare(map[string]any{
		"guest_os_type": "windows", "artifacts_dir": dir, "download_cache_dir": t.TempDir(),
		"packer_build_name": "win-unlisted", "kubernetes_version": "v1.99.2", "allow_unlisted_version": true,
	}))
	_, arts, err := p.config.windowsPlan(win)
	require.NoError(t, err)
	for _, a := range arts {
		require.NoError(t, os.WriteFile(filepath.Join(dir, a.FileName), []byte("local "+a.Name), 0o644))
	}
	t.Setenv("PACKER_RUN_UUID", "test-"+t.Name())
	g := guesttest.NewWindows()
	g.Build = fmt.Sprint(win.Build)
	ui := guesttest.NewUI()
	require.NoError(t, p.Provision(context.Background(), ui, g, map[string]interface{}{"PackerHTTPIP": "127.0.0.1"}))
	warning := "kubernetes_version v1.99.2: v1.99 is not in kubenode-bake's version table; using " + newest.Minor + "'s facts (pause image "
	assert.Contains(t, ui.Err.String(), "kubenode-bake: warning: "+warning)
	rec, err := baked.Take("win-unlisted")
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, "v1.99.2", rec.Facts.Kubernetes)
	require.NotEmpty(t, rec.Facts.Unlisted)
	assert.Contains(t, rec.Facts.Unlisted[0], warning)
}

// A Windows Server 2019 guest with a Kubernetes minor whose Windows page
// no longer lists 2019 bakes, with a warning naming the page; a 2022
// guest bakes without one.
func TestProvisionWarnsOfAWindowsReleaseKubernetesNoLongerSupports(t *testing.T) {
	for _, tc := range []struct{ windows, warn string }{
		{"2019", `kubenode-bake: warning: kubernetes_version ` + versions.Defaults.Kubernetes + ` on Windows Server 2019: Kubernetes' page "Windows containers in Kubernetes"`},
		{"2022", ""},
	} {
		win, err := versions.LookupWindows(tc.windows)
		require.NoError(t, err)
		dir := t.TempDir()
		var p Provisioner
		require.NoError(t, p.Prepare(map[string]any{
			"guest_os_type": "windows", "artifacts_dir": dir, "download_cache_dir": t.TempDir(), "packer_build_name": "win-" + tc.windows,
		}))
		_, arts, err := p.config.windowsPlan(win)
		require.NoError(t, err)
		for _, a := range arts {
			require.NoError(t, os.WriteFile(filepath.Join(dir, a.FileName), []byte("local "+a.Name), 0o644))
		}
		t.Setenv("PACKER_RUN_UUID", "test-"+t.Name()+tc.windows)
		g := guesttest.NewWindows()
		g.Build = fmt.Sprint(win.Build)
		ui := guesttest.NewUI()
		require.NoError(t, p.Provision(context.Background(), ui, g, map[string]interface{}{"PackerHTTPIP": "127.0.0.1"}))
		_, err = baked.Take("win-" + tc.windows)
		require.NoError(t, err)
		if tc.warn == "" {
			assert.NotContains(t, ui.Err.String(), "Kubernetes' page", tc.windows)
			continue
		}
		assert.Contains(t, ui.Err.String(), tc.warn)
		assert.Contains(t, ui.Err.String(), versions.WindowsSupportURL)
	}
}

// hostname_prefix: checked as the start of a DNS label and named in every
// refusal; Linux's joiner images with generalize only; it reaches the
// plan, and the default is the Linux package's.
func TestHostnamePrefix(t *testing.T) {
	prepare := func(extra map[string]any) (Config, error) {
		var c Config
		raw := map[string]any{"download_cache_dir": t.TempDir()}
		for k, v := range extra {
			raw[k] = v
		}
		err := c.Prepare(raw)
		return c, err
	}
	c, err := prepare(map[string]any{"guest_os_type": "linux", "hostname_prefix": "lab-"})
	require.NoError(t, err)
	plan, _, err := c.linuxPlan()
	require.NoError(t, err)
	assert.Equal(t, "lab-", plan.HostnamePrefix)

	c, err = prepare(nil)
	require.NoError(t, err)
	plan, _, err = c.linuxPlan()
	require.NoError(t, err)
	assert.Empty(t, plan.HostnamePrefix, "the Linux package's default, kubenode-")

	for name, c := range map[string]struct {
		raw  map[string]any
		want string
	}{
		"uppercase":   {map[string]any{"hostname_prefix": "Lab-"}, `hostname_prefix: "Lab-" holds 'L'`},
		"a dot":       {map[string]any{"hostname_prefix": "lab.example-"}, `hostname_prefix: "lab.example-" holds '.'`},
		"leading -":   {map[string]any{"hostname_prefix": "-lab"}, `hostname_prefix: "-lab" starts with '-'`},
		"too long":    {map[string]any{"hostname_prefix": strings.Repeat("n", 52)}, "hostname_prefix: \"" + strings.Repeat("n", 52) + "\" is 52 characters; at most 51"},
		"windows":     {map[string]any{"hostname_prefix": "lab-", "guest_os_type": "windows"}, "hostname_prefix: Linux's clone naming"},
		"generalize":  {map[string]any{"hostname_prefix": "lab-", "generalize": false}, "hostname_prefix: only used with generalize"},
		"cluster-api": {map[string]any{"hostname_prefix": "lab-", "bootstrap": "cluster-api", "install_joiner": false}, `hostname_prefix: bootstrap = "cluster-api" images take each VM's name from its datasource`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := prepare(c.raw)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
