// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/kubenode/packer-plugin-kubenode/internal/packerinit"
)

// pluginSource is the source the templates' required_plugins name; packer
// keeps an installed plugin in a directory of the same path.
const pluginSource = packerinit.Source

// PluginDir builds this plugin and installs it into a fresh packer plugin
// directory for the pinned packer (KUBENODE_PACKER), which it returns (use
// it as PACKER_PLUGIN_PATH).
func PluginDir(t testing.TB) string {
	t.Helper()
	plugins, _ := pluginDirFor(t, Packer(t))
	return plugins
}

// PluginDirFor is PluginDir for the packer binary at packer, installed as
// that packer's version takes it (PackerVersion.InstallsFromPath).
func PluginDirFor(t testing.TB, packer string) string {
	t.Helper()
	plugins, _ := pluginDirFor(t, packer)
	return plugins
}

// pluginDirFor is PluginDirFor, and the plugin binary it installed.
//
// A packer that has `packer plugins install --path` gets the development
// build installed with it, as `make dev` does. An older one (Packer 1.9,
// the last MPL-2.0 line) gets what `packer init` would have installed: a
// build stamped as a release (no pre-release suffix, which a constraint
// like ">= 0.1.0" refuses there) put into the directory layout that packer
// lists (packerinit.Install).
func pluginDirFor(t testing.TB, packer string) (plugins, bin string) {
	t.Helper()
	pv := PackerVersionOf(t, packer)
	dir := t.TempDir()
	plugins = filepath.Join(dir, "plugins")
	if pv.InstallsFromPath() {
		bin = GoBuild(t, Root(), ".", filepath.Join(dir, "packer-plugin-kubenode"))
		install := exec.Command(packer, "plugins", "install", "--path", bin, pluginSource)
		install.Env = append(os.Environ(), "PACKER_PLUGIN_PATH="+plugins, "PACKER_CHECKPOINT_DISABLE=1")
		if out, err := install.CombinedOutput(); err != nil {
			t.Fatalf("packer plugins install: %v\n%s", err, out)
		}
		return plugins, bin
	}
	built := PluginReleaseStamped(t, filepath.Join(dir, "packer-plugin-kubenode"))
	bin, err := packerinit.Install(plugins, built, runtime.GOOS, runtime.GOARCH)
	if err != nil {
		t.Fatalf("installing the plugin for %s: %v", pv, err)
	}
	return plugins, bin
}

// PackerVersion is a packer release, as `packer version` reports it.
type PackerVersion struct {
	Major, Minor, Patch int
	Text                string // the first line of `packer version`, e.g. "Packer v1.9.4"
}

func (v PackerVersion) String() string { return v.Text }

// InstallsFromPath says whether this packer has `packer plugins install
// --path`, which Packer 1.10.0 added (hashicorp/packer pull request 12643).
func (v PackerVersion) InstallsFromPath() bool {
	return v.Major > 1 || v.Major == 1 && v.Minor >= 10
}

var packerVersionLine = regexp.MustCompile(`^Packer v(\d+)\.(\d+)\.(\d+)\S*$`)

// ParsePackerVersion reads the output of `packer version`.
func ParsePackerVersion(out string) (PackerVersion, error) {
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	line = strings.TrimSpace(line)
	m := packerVersionLine.FindStringSubmatch(line)
	if m == nil {
		return PackerVersion{}, fmt.Errorf("`packer version` printed %q, not \"Packer vX.Y.Z\"", line)
	}
	v := PackerVersion{Text: line}
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	v.Patch, _ = strconv.Atoi(m[3])
	return v, nil
}

// PackerVersionOf runs `packer version` of the packer binary at packer.
func PackerVersionOf(t testing.TB, packer string) PackerVersion {
	t.Helper()
	cmd := exec.Command(packer, "version")
	cmd.Env = append(os.Environ(), "PACKER_CHECKPOINT_DISABLE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s version: %v", packer, err)
	}
	v, err := ParsePackerVersion(string(out))
	if err != nil {
		t.Fatalf("%s: %v", packer, err)
	}
	return v
}
