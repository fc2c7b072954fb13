// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package packerinit_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/packer-plugin-sdk/plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/packerinit"
)

// TestInstalledName: the path packer init installs a release binary at,
// under the plugin directory: the source's path, then
// packer-plugin-<name>_v<version>_<api>_<os>_<arch>, with .exe on Windows
// (packer's plugin-getter lists exactly these; its own init tests name
// packer-plugin-comment_v0.2.18_x5.0_linux_amd64).
func TestInstalledName(t *testing.T) {
	d := plugin.SetDescription{Version: "0.1.0", APIVersion: "x5.0"}
	for platform, want := range map[string]string{
		"linux/amd64":   "github.com/kubenode/kubenode/packer-plugin-kubenode_v0.1.0_x5.0_linux_amd64",
		"darwin/arm64":  "github.com/kubenode/kubenode/packer-plugin-kubenode_v0.1.0_x5.0_darwin_arm64",
		"windows/amd64": "github.com/kubenode/kubenode/packer-plugin-kubenode_v0.1.0_x5.0_windows_amd64.exe",
	} {
		goos, goarch, _ := strings.Cut(platform, "/")
		assert.Equal(t, filepath.FromSlash(want), packerinit.InstalledName(d, goos, goarch), platform)
	}
	d.Version, d.APIVersion = "1.2.3", "x5.1"
	assert.Equal(t, filepath.FromSlash("github.com/kubenode/kubenode/packer-plugin-kubenode_v1.2.3_x5.1_linux_amd64"), packerinit.InstalledName(d, "linux", "amd64"))
}

// fakePlugin writes a plugin stand-in that answers `describe` as the SDK
// does, reporting version.
func fakePlugin(t *testing.T, version string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "packer-plugin-kubenode")
	script := "#!/bin/sh\n[ \"$1\" = describe ] || exit 2\n" +
		`echo '{"version":"` + version + `","sdk_version":"0.6.10","api_version":"x5.0","builders":["libvirt"],"post_processors":["export"],"provisioners":["bake"],"datasources":[],"protocol_version":"v2"}'` + "\n"
	require.NoError(t, os.WriteFile(bin, []byte(script), 0o755))
	return bin
}

// TestInstall: a release build (build metadata allowed) goes where packer 1.9 looks for
// the template's required_plugins, executable, beside a _SHA256SUM file
// holding its sha256 in hex and nothing else (packer reads exactly the
// hash's hex digits and refuses the binary when they differ).
func TestInstall(t *testing.T) {
	bin := fakePlugin(t, "0.1.0")
	plugins := t.TempDir()
	got, err := packerinit.Install(plugins, bin, "linux", "amd64")
	require.NoError(t, err)
	want := filepath.Join(plugins, "github.com", "kubenode", "kubenode", "packer-plugin-kubenode_v0.1.0_x5.0_linux_amd64")
	assert.Equal(t, want, got)

	entries, err := os.ReadDir(filepath.Dir(want))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{filepath.Base(want), filepath.Base(want) + "_SHA256SUM"}, names)

	orig, err := os.ReadFile(bin)
	require.NoError(t, err)
	copied, err := os.ReadFile(want)
	require.NoError(t, err)
	assert.Equal(t, orig, copied)
	fi, err := os.Stat(want)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&0o100, "the installed plugin is executable")
	sum, err := os.ReadFile(want + "_SHA256SUM")
	require.NoError(t, err)
	h := sha256.Sum256(orig)
	assert.Equal(t, hex.EncodeToString(h[:]), string(sum))
}

// TestInstallRefusesADevelopmentBuild: packer 1.9 would not
// take 0.1.0-dev for ">= 0.1.0"; Install says so instead of leaving a
// plugin packer skips without a word.
func TestInstallRefusesADevelopmentBuild(t *testing.T) {
	for _, v := range []string{"0.1.0-dev", "0.1.0-rc.1+abc"} {
		plugins := t.TempDir()
		_, err := packerinit.Install(plugins, fakePlugin(t, v), "linux", "amd64")
		require.Error(t, err, v)
		assert.Contains(t, err.Error(), "version.VersionPrerelease=", v)
		entries, _ := os.ReadDir(plugins)
		assert.Empty(t, entries, "%s: nothing installed", v)
	}
	// Build metadata is no pre-release.
	got, err := packerinit.Install(t.TempDir(), fakePlugin(t, "0.1.0+abc"), "linux", "amd64")
	require.NoError(t, err)
	assert.Equal(t, "packer-plugin-kubenode_v0.1.0+abc_x5.0_linux_amd64", filepath.Base(got))
}
