// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build release

package main

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/packer-plugin-sdk/plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/packerinit"

	"github.com/kubenode/packer-plugin-kubenode/version"
)

// The tests in this file check what `make release` built (goreleaser's
// snapshot in KUBENODE_RELEASE_DIR) the way a user's packer takes it:
// checksums, the archive packer init would pick, the binary in it,
// installed with `packer plugins install --path` and used by `packer
// validate` on an example; and the joiner's archives.

func releaseDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KUBENODE_RELEASE_DIR")
	require.NotEmpty(t, dir, "KUBENODE_RELEASE_DIR: goreleaser's output directory (make release sets it)")
	return dir
}

// releaseVersion is what make release stamps: version.Version, with no
// pre-release suffix (GORELEASER_CURRENT_TAG=v<version.Version>).
func releaseVersion() string { return version.Version }

// sha256Sums reads <prefix>v<version>_SHA256SUMS: "<hex>  <file>" lines.
func sha256Sums(t *testing.T, dir string) map[string]string {
	t.Helper()
	name := "packer-plugin-" + pluginName + "_v" + releaseVersion() + "_SHA256SUMS"
	f, err := os.Open(filepath.Join(dir, name))
	require.NoError(t, err, "the checksum file packer init fetches")
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		require.True(t, ok, "%s: line %q is not <sha256>  <file>", name, sc.Text())
		sums[file] = sum
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, sums, name)
	return sums
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(t, err)
	return hex.EncodeToString(h.Sum(nil))
}

// TestReleaseChecksumsListEveryArchive: the checksum file names one zip
// per plugin target and one archive per joiner target, each with the
// sha256 of the file beside it.
func TestReleaseChecksumsListEveryArchive(t *testing.T) {
	dir, c := releaseDir(t), readGoreleaser(t)
	sums := sha256Sums(t, dir)
	for file, sum := range sums {
		assert.Equal(t, sum, fileSHA256(t, filepath.Join(dir, file)), "sha256 of %s", file)
	}
	for _, tg := range c.targets(t, "plugin") {
		var picked []string
		for file := range sums {
			if _, ok := getterEntry(file, releaseVersion(), tg); ok {
				picked = append(picked, file)
			}
		}
		assert.Len(t, picked, 1, "packer on %s/%s picks exactly one archive: %v", tg.os, tg.arch, picked)
	}
	for _, tg := range c.targets(t, "joiner") {
		ext := ".tar.gz"
		if tg.os == "windows" {
			ext = ".zip"
		}
		name := "kubenode-joiner_v" + releaseVersion() + "_" + tg.os + "_" + tg.arch + ext
		assert.Contains(t, sums, name, "the joiner for %s/%s", tg.os, tg.arch)
	}
}

// pluginFromArchive extracts, from the zip packer would pick for this
// machine, the binary packer looks for in it, and returns its path.
func pluginFromArchive(t *testing.T) (path, protocol string) {
	t.Helper()
	dir := releaseDir(t)
	host := target{runtime.GOOS, runtime.GOARCH}
	var archive, binary string
	for file := range sha256Sums(t, dir) {
		if b, ok := getterEntry(file, releaseVersion(), host); ok {
			archive, binary = file, b
		}
	}
	require.NotEmpty(t, archive, "no archive packer on %s/%s would pick", host.os, host.arch)
	zr, err := zip.OpenReader(filepath.Join(dir, archive))
	require.NoError(t, err, "packer unpacks the plugin's archive as a zip")
	defer zr.Close()
	require.Len(t, zr.File, 1, "%s holds the plugin binary alone", archive)
	zf := zr.File[0]
	require.Equal(t, binary, zf.Name, "the file packer extracts from %s", archive)
	rc, err := zf.Open()
	require.NoError(t, err)
	defer rc.Close()
	path = filepath.Join(t.TempDir(), binary)
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, rc)
	require.NoError(t, err)
	require.NoError(t, out.Close())
	return path, strings.Split(binary, "_")[2]
}

// TestReleasePluginDescribesItsName: packer runs `describe` on the binary
// and refuses it unless the version and API version it reports are the
// ones in its file name.
func TestReleasePluginDescribesItsName(t *testing.T) {
	bin, protocol := pluginFromArchive(t)
	out, err := exec.Command(bin, "describe").Output()
	require.NoError(t, err, "%s describe", bin)
	var desc struct {
		Version    string `json:"version"`
		APIVersion string `json:"api_version"`
		Builders   []string
	}
	require.NoError(t, json.Unmarshal(out, &desc), "%s", out)
	assert.Equal(t, releaseVersion(), desc.Version, "describe: version (no pre-release suffix)")
	assert.Equal(t, protocol, desc.APIVersion, "describe: api_version is the file name's")
	assert.Equal(t, "x"+plugin.APIVersionMajor+"."+plugin.APIVersionMinor, desc.APIVersion)
}

// TestReleasePluginPassesPluginCheck: packer-sdc's conformance check of
// the binary packer would install (make plugin-check checks the
// development build).
func TestReleasePluginPassesPluginCheck(t *testing.T) {
	sdc := os.Getenv("KUBENODE_PACKER_SDC")
	require.NotEmpty(t, sdc, "KUBENODE_PACKER_SDC (scripts/setup.sh env)")
	bin, _ := pluginFromArchive(t)
	cmd := exec.Command(sdc, "plugin-check", filepath.Base(bin))
	cmd.Dir = filepath.Dir(bin)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "packer-sdc plugin-check %s:\n%s", filepath.Base(bin), out)
}

// packerRun runs packer with a plugin directory of the test's own.
func packerRun(t *testing.T, packer, pluginDir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(packer, args...)
	cmd.Dir = "."
	cmd.Env = append(os.Environ(), "PACKER_PLUGIN_PATH="+pluginDir, "PACKER_CHECKPOINT_DISABLE=1", "PACKER_LOG=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", packer, strings.Join(args, " "), out)
	return string(out)
}

// validateArgs is `packer validate` of examples/debian-12.pkr.hcl with a
// stand-in for its base disk (validation checks that it exists).
func validateArgs(t *testing.T) []string {
	disk := filepath.Join(t.TempDir(), "base.qcow2")
	require.NoError(t, os.WriteFile(disk, nil, 0o644))
	return []string{"validate", "-var", "base_disk=" + disk, "examples/debian-12.pkr.hcl"}
}

// TestReleasePluginInstallsAndValidates: the binary from the archive,
// installed with `packer plugins install --path`, satisfies the examples'
// required_plugins (packer init has nothing to fetch) and validates one.
func TestReleasePluginInstallsAndValidates(t *testing.T) {
	packer := os.Getenv("KUBENODE_PACKER")
	require.NotEmpty(t, packer, "KUBENODE_PACKER (scripts/setup.sh env)")
	bin, protocol := pluginFromArchive(t)
	plugins := t.TempDir()
	packerRun(t, packer, plugins, "plugins", "install", "--path", bin, "github.com/kubenode/kubenode")
	installed := packerRun(t, packer, plugins, "plugins", "installed")
	want := filepath.Join(plugins, "github.com", "kubenode", "kubenode",
		"packer-plugin-"+pluginName+"_v"+releaseVersion()+"_"+protocol+"_"+runtime.GOOS+"_"+runtime.GOARCH)
	assert.Equal(t, want, strings.TrimSpace(installed), "packer plugins installed")
	packerRun(t, packer, plugins, "init", "examples/debian-12.pkr.hcl")
	packerRun(t, packer, plugins, validateArgs(t)...)
}

// TestReleasePluginValidatesWithPackerMPL: Packer 1.9.4 (the last
// MPL-licensed line) has no `plugins install --path`; the binary goes
// where `packer init` would put it, beside its _SHA256SUM file, and
// validates the example.
func TestReleasePluginValidatesWithPackerMPL(t *testing.T) {
	packer := os.Getenv("KUBENODE_PACKER_MPL")
	require.NotEmpty(t, packer, "KUBENODE_PACKER_MPL (scripts/setup.sh env)")
	bin, _ := pluginFromArchive(t)
	plugins := t.TempDir()
	dst, err := packerinit.Install(plugins, bin, runtime.GOOS, runtime.GOARCH)
	require.NoError(t, err)
	assert.Equal(t, filepath.Base(bin), filepath.Base(dst), "the archive names the binary as packer init installs it")
	packerRun(t, packer, plugins, "init", "examples/debian-12.pkr.hcl")
	packerRun(t, packer, plugins, validateArgs(t)...)
}

// TestReleaseJoinerArchives: each joiner archive holds the binary for its
// system; the Linux one reports the release's version.
func TestReleaseJoinerArchives(t *testing.T) {
	dir, v := releaseDir(t), releaseVersion()

	f, err := os.Open(filepath.Join(dir, "kubenode-joiner_v"+v+"_linux_amd64.tar.gz"))
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	var names []string
	linux := filepath.Join(t.TempDir(), "kubenode-joiner")
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		names = append(names, h.Name)
		if h.Name == "kubenode-joiner" {
			out, err := os.OpenFile(linux, os.O_CREATE|os.O_WRONLY, 0o755)
			require.NoError(t, err)
			_, err = io.Copy(out, tr)
			require.NoError(t, err)
			require.NoError(t, out.Close())
		}
	}
	require.Equal(t, []string{"kubenode-joiner"}, names, "the Linux joiner archive")
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		out, err := exec.Command(linux, "version").Output()
		require.NoError(t, err)
		assert.Equal(t, "joiner "+v+"\n", string(out))
	}

	zr, err := zip.OpenReader(filepath.Join(dir, "kubenode-joiner_v"+v+"_windows_amd64.zip"))
	require.NoError(t, err)
	defer zr.Close()
	require.Len(t, zr.File, 1, "the Windows joiner archive holds the joiner alone")
	assert.Equal(t, "kubenode-joiner.exe", zr.File[0].Name)
	rc, err := zr.File[0].Open()
	require.NoError(t, err)
	defer rc.Close()
	magic := make([]byte, 2)
	_, err = io.ReadFull(rc, magic)
	require.NoError(t, err)
	assert.Equal(t, "MZ", string(magic), "kubenode-joiner.exe is a Windows executable")
}
