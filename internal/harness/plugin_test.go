// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package harness_test

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

	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
)

// TestParsePackerVersion: the harness installs the plugin with `packer
// plugins install --path` from Packer 1.10.0 on, and as `packer init`
// would before (1.9.4, the last MPL-2.0 release, has no --path).
func TestParsePackerVersion(t *testing.T) {
	for _, tc := range []struct {
		out      string
		want     [3]int
		fromPath bool
	}{
		{"Packer v1.9.4\n", [3]int{1, 9, 4}, false},
		{"Packer v1.9.5\n\nYour version of Packer is out of date! The latest version\nis 1.16.0.\n", [3]int{1, 9, 5}, false},
		{"Packer v1.10.0\n", [3]int{1, 10, 0}, true},
		{"Packer v1.16.0\n", [3]int{1, 16, 0}, true},
		{"Packer v1.11.0-dev\n", [3]int{1, 11, 0}, true},
		{"Packer v2.0.0\n", [3]int{2, 0, 0}, true},
		{"Packer v0.12.3\n", [3]int{0, 12, 3}, false},
	} {
		v, err := harness.ParsePackerVersion(tc.out)
		require.NoError(t, err, "%q", tc.out)
		assert.Equal(t, tc.want, [3]int{v.Major, v.Minor, v.Patch}, "%q", tc.out)
		assert.Equal(t, tc.fromPath, v.InstallsFromPath(), "%q: has packer plugins install --path", tc.out)
		assert.Equal(t, strings.SplitN(tc.out, "\n", 2)[0], v.String())
	}
	for _, bad := range []string{"", "1.9.4", "Packer 1.9.4", "Packer v1.9", "Terraform v1.9.4", "Packer v1.9.4 (abc)"} {
		_, err := harness.ParsePackerVersion(bad)
		assert.Error(t, err, "%q", bad)
	}
}

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
		assert.Equal(t, filepath.FromSlash(want), harness.InstalledName(d, goos, goarch), platform)
	}
	d.Version, d.APIVersion = "1.2.3", "x5.1"
	assert.Equal(t, filepath.FromSlash("github.com/kubenode/kubenode/packer-plugin-kubenode_v1.2.3_x5.1_linux_amd64"), harness.InstalledName(d, "linux", "amd64"))
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

// TestInstallAsInitWould: a release build (build metadata allowed) goes where packer 1.9 looks for
// the template's required_plugins, executable, beside a _SHA256SUM file
// holding its sha256 in hex and nothing else (packer reads exactly the
// hash's hex digits and refuses the binary when they differ).
func TestInstallAsInitWould(t *testing.T) {
	bin := fakePlugin(t, "0.1.0")
	plugins := t.TempDir()
	got, err := harness.InstallAsInitWould(plugins, bin, "linux", "amd64")
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

// TestInstallAsInitWouldRefusesADevelopmentBuild: packer 1.9 would not
// take 0.1.0-dev for ">= 0.1.0"; the harness says so instead of leaving a
// plugin packer skips without a word.
func TestInstallAsInitWouldRefusesADevelopmentBuild(t *testing.T) {
	for _, v := range []string{"0.1.0-dev", "0.1.0-rc.1+abc"} {
		plugins := t.TempDir()
		_, err := harness.InstallAsInitWould(plugins, fakePlugin(t, v), "linux", "amd64")
		require.Error(t, err, v)
		assert.Contains(t, err.Error(), "version.VersionPrerelease=", v)
		entries, _ := os.ReadDir(plugins)
		assert.Empty(t, entries, "%s: nothing installed", v)
	}
	// Build metadata is no pre-release.
	got, err := harness.InstallAsInitWould(t.TempDir(), fakePlugin(t, "0.1.0+abc"), "linux", "amd64")
	require.NoError(t, err)
	assert.Equal(t, "packer-plugin-kubenode_v0.1.0+abc_x5.0_linux_amd64", filepath.Base(got))
}
