// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"

	"github.com/hashicorp/packer-plugin-sdk/plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/kubenode/packer-plugin-kubenode/version"
)

// The plugin's source address in templates: github.com/kubenode/kubenode.
// Packer's GitHub getter turns it into the repository
// github.com/kubenode/packer-plugin-kubenode and the file prefix below.
const pluginName = "kubenode"

// goreleaserConfig is the part of .goreleaser.yml these tests read.
type goreleaserConfig struct {
	Version     int      `yaml:"version"`
	ProjectName string   `yaml:"project_name"`
	Env         []string `yaml:"env"`
	Builds      []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Ldflags []string `yaml:"ldflags"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
		Ignore  []struct {
			Goos   string `yaml:"goos"`
			Goarch string `yaml:"goarch"`
		} `yaml:"ignore"`
	} `yaml:"builds"`
	Archives []struct {
		ID           string   `yaml:"id"`
		IDs          []string `yaml:"ids"`
		Formats      []string `yaml:"formats"`
		NameTemplate string   `yaml:"name_template"`
		Files        []string `yaml:"files"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
}

func readGoreleaser(t *testing.T) goreleaserConfig {
	t.Helper()
	data, err := os.ReadFile(".goreleaser.yml")
	require.NoError(t, err)
	var c goreleaserConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	require.NoError(t, dec.Decode(&c), ".goreleaser.yml")
	return c
}

// target is one os/arch a build produces.
type target struct{ os, arch string }

func (c goreleaserConfig) targets(t *testing.T, buildID string) []target {
	t.Helper()
	for _, b := range c.Builds {
		if b.ID != buildID {
			continue
		}
		var out []target
		for _, o := range b.Goos {
			for _, a := range b.Goarch {
				if !slices.ContainsFunc(b.Ignore, func(i struct {
					Goos   string `yaml:"goos"`
					Goarch string `yaml:"goarch"`
				}) bool {
					return i.Goos == o && i.Goarch == a
				}) {
					out = append(out, target{o, a})
				}
			}
		}
		return out
	}
	t.Fatalf(".goreleaser.yml has no build %q", buildID)
	return nil
}

// render fills a goreleaser name template. The templates here use plain
// fields only, which text/template renders as goreleaser does.
func (c goreleaserConfig) render(t *testing.T, tmpl string, tg target, releaseVersion string) string {
	t.Helper()
	env := map[string]string{}
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	tp, err := template.New("name").Option("missingkey=error").Parse(tmpl)
	require.NoError(t, err, tmpl)
	var b strings.Builder
	require.NoError(t, tp.Execute(&b, map[string]any{
		"ProjectName": c.ProjectName,
		"Version":     releaseVersion, // goreleaser: the tag without its leading v
		"Os":          tg.os,
		"Arch":        tg.arch,
		"ModulePath":  modulePath(t),
		"Env":         env,
	}), tmpl)
	return b.String()
}

func modulePath(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(data)
	require.NotNil(t, m, "go.mod has no module line")
	return string(m[1])
}

// getterEntry mirrors how packer v1.16.0 reads a release's checksum file
// entry (packer/plugin-getter/github/getter.go: Init, Validate and
// ExpectedFileName; plugins.go: Requirement.FilenamePrefix,
// InstallLatest). ok is false when packer would skip the file for this
// os/arch and version.
func getterEntry(fileName, wantVersion string, tg target) (binary string, ok bool) {
	prefix := "packer-plugin-" + pluginName + "_"
	rest := strings.TrimPrefix(fileName, prefix)
	ext := ""
	if i := strings.LastIndex(rest, "."); i >= 0 {
		ext = rest[i:]
	}
	parts := strings.Split(strings.TrimSuffix(rest, ext), "_")
	if len(parts) < 4 {
		return "", false
	}
	binVersion, protocol, goos, goarch := parts[0], parts[1], parts[2], parts[3]
	if binVersion != "v"+wantVersion || goos != tg.os || goarch != tg.arch {
		return "", false
	}
	// CheckProtocolVersion: same major, minor not above packer's.
	major, minor, found := strings.Cut(strings.TrimPrefix(protocol, "x"), ".")
	minorN, err := strconv.Atoi(minor)
	sdkMinor, _ := strconv.Atoi(plugin.APIVersionMinor)
	if !found || err != nil || major != plugin.APIVersionMajor || minorN > sdkMinor {
		return "", false
	}
	binary = strings.Join([]string{"packer-plugin-" + pluginName, binVersion, protocol, goos, goarch}, "_")
	if goos == "windows" {
		binary += ".exe"
	}
	return binary, true
}

// TestReleaseNamesAreWhatPackerInitLooksFor renders the release's file
// names for every plugin target and checks that packer's getter would pick
// each archive for its own os/arch, find the binary in it by name, and
// find the checksum file by name.
func TestReleaseNamesAreWhatPackerInitLooksFor(t *testing.T) {
	c := readGoreleaser(t)
	require.Equal(t, 2, c.Version, "goreleaser v2 configuration")
	require.Equal(t, "packer-plugin-"+pluginName, c.ProjectName)
	const release = "1.2.3"

	checksums := c.render(t, c.Checksum.NameTemplate, target{}, release)
	assert.Equal(t, "packer-plugin-"+pluginName+"_v"+release+"_SHA256SUMS", checksums,
		"packer fetches <prefix>v<version>_SHA256SUMS from the release")
	assert.Equal(t, "sha256", c.Checksum.Algorithm)

	var pluginArchive, pluginBuild = -1, -1
	for i, a := range c.Archives {
		if a.ID == "plugin" {
			pluginArchive = i
		}
	}
	for i, b := range c.Builds {
		if b.ID == "plugin" {
			pluginBuild = i
		}
	}
	require.GreaterOrEqual(t, pluginArchive, 0, "archive id plugin")
	require.GreaterOrEqual(t, pluginBuild, 0, "build id plugin")
	archive, build := c.Archives[pluginArchive], c.Builds[pluginBuild]
	assert.Equal(t, []string{"zip"}, archive.Formats, "packer unpacks zip files only")
	assert.Equal(t, []string{"plugin"}, archive.IDs)
	assert.Equal(t, ".", build.Main)

	targets := c.targets(t, "plugin")
	require.Contains(t, targets, target{"linux", "amd64"})
	for _, tg := range targets {
		zip := c.render(t, archive.NameTemplate, tg, release) + ".zip"
		wantBinary, ok := getterEntry(zip, release, tg)
		if !assert.True(t, ok, "packer on %s/%s would skip %s", tg.os, tg.arch, zip) {
			continue
		}
		binary := c.render(t, build.Binary, tg, release)
		if tg.os == "windows" {
			binary += ".exe" // goreleaser adds it
		}
		assert.Equal(t, wantBinary, binary, "the file packer extracts from %s", zip)
		// Packer groups installed plugins by this match of the file name.
		assert.Equal(t, "packer-plugin-"+pluginName, regexp.MustCompile("packer-plugin-[^_]+").FindString(binary))
		for _, other := range targets {
			if other != tg {
				_, picked := getterEntry(zip, release, other)
				assert.False(t, picked, "%s picked on %s/%s", zip, other.os, other.arch)
			}
		}
	}
}

// TestReleaseAPIVersionIsTheSDKs: the protocol in the file names must be
// the one the plugin reports in `describe` (api_version), or packer
// refuses the download or the binary.
func TestReleaseAPIVersionIsTheSDKs(t *testing.T) {
	c := readGoreleaser(t)
	assert.Contains(t, c.Env, "API_VERSION=x"+plugin.APIVersionMajor+"."+plugin.APIVersionMinor)
}

// TestReleaseStampsTheVersion: packer runs the downloaded binary's
// `describe` and refuses it unless it reports the release's version with no
// pre-release suffix, so the ldflags must set version.Version and clear
// version.VersionPrerelease (both must exist for -X to take effect). The
// joiner reports the same version (`joiner version`), so its build is
// stamped the same way.
func TestReleaseStampsTheVersion(t *testing.T) {
	_, _ = version.Version, version.VersionPrerelease // the variables -X sets
	c := readGoreleaser(t)
	mod := modulePath(t)
	stamped := map[string]bool{}
	for _, b := range c.Builds {
		flags := strings.Fields(c.render(t, strings.Join(b.Ldflags, " "), target{"linux", "amd64"}, "1.2.3"))
		assert.Contains(t, flags, mod+"/version.Version=1.2.3", "build id %s", b.ID)
		assert.Contains(t, flags, mod+"/version.VersionPrerelease=", "build id %s", b.ID)
		stamped[b.ID] = true
	}
	assert.True(t, stamped["plugin"], ".goreleaser.yml has no build id plugin")
	assert.True(t, stamped["joiner"], ".goreleaser.yml has no build id joiner")
}

// TestJoinerArchivesAreSeparateAndSkippedByPacker: the joiner ships for
// Linux and Windows in archives of its own, which packer's getter, reading
// the same checksum file, must pass over.
func TestJoinerArchivesAreSeparateAndSkippedByPacker(t *testing.T) {
	c := readGoreleaser(t)
	assert.ElementsMatch(t, []target{{"linux", "amd64"}, {"windows", "amd64"}}, c.targets(t, "joiner"))
	for _, b := range c.Builds {
		if b.ID == "joiner" {
			assert.Equal(t, "./cmd/joiner", b.Main)
			assert.Equal(t, "kubenode-joiner", b.Binary)
		}
	}
	found := false
	for _, a := range c.Archives {
		if a.ID != "joiner" {
			continue
		}
		found = true
		assert.Equal(t, []string{"joiner"}, a.IDs, "the joiner's archives hold the joiner only")
		for _, tg := range c.targets(t, "joiner") {
			name := c.render(t, a.NameTemplate, tg, "1.2.3")
			assert.Contains(t, name, tg.os)
			for _, pt := range c.targets(t, "plugin") {
				_, picked := getterEntry(name+".zip", "1.2.3", pt)
				assert.False(t, picked, "packer on %s/%s would take %s for the plugin", pt.os, pt.arch, name)
			}
		}
	}
	assert.True(t, found, "archive id joiner")
	for _, a := range c.Archives {
		if a.ID == "plugin" {
			assert.NotContains(t, a.IDs, "joiner")
		}
	}
}

// TestGetterEntryRejects shows the mirror of packer's getter refuses the
// names packer refuses, so the tests above can fail.
func TestGetterEntryRejects(t *testing.T) {
	linux := target{"linux", "amd64"}
	for _, name := range []string{
		"packer-plugin-kubenode_1.2.3_x5.0_linux_amd64.zip",   // no v
		"packer-plugin-kubenode_v1.2.4_x5.0_linux_amd64.zip",  // other version
		"packer-plugin-kubenode_v1.2.3_x5_linux_amd64.zip",    // no minor
		"packer-plugin-kubenode_v1.2.3_x4.0_linux_amd64.zip",  // other major
		"packer-plugin-kubenode_v1.2.3_x5.9_linux_amd64.zip",  // newer minor
		"packer-plugin-kubenode_v1.2.3_x5.0_darwin_amd64.zip", // other os
		"packer-plugin-kubenode_v1.2.3_linux_amd64.zip",       // no protocol
		"packer-plugin-other_v1.2.3_x5.0_linux_amd64.zip",     // other plugin
		"kubenode-joiner_v1.2.3_linux_amd64.tar.gz",           // not a plugin
	} {
		_, ok := getterEntry(name, "1.2.3", linux)
		assert.False(t, ok, name)
	}
	bin, ok := getterEntry("packer-plugin-kubenode_v1.2.3_x5.0_linux_amd64.zip", "1.2.3", linux)
	assert.True(t, ok)
	assert.Equal(t, "packer-plugin-kubenode_v1.2.3_x5.0_linux_amd64", bin)
}
