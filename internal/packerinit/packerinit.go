// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package packerinit puts a release build of the plugin where `packer
// init` installs it, for packers without `packer plugins install --path`
// (Packer 1.9, the last MPL-2.0 line): the test harness, the release test
// and scripts/validate-examples.sh (through scripts/install-plugin) share
// it.
package packerinit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hashicorp/packer-plugin-sdk/plugin"
)

// Source is the source the templates' required_plugins name; packer keeps
// an installed plugin in a directory of the same path.
const Source = "github.com/kubenode/kubenode"

// InstalledName is the path, under a packer plugin directory, at which
// `packer init` installs the plugin binary a describe output d stands for,
// for goos/goarch:
// github.com/kubenode/kubenode/packer-plugin-kubenode_v<version>_<api>_<os>_<arch>[.exe].
// Packer reads the version and plugin API from that name, and takes the
// binary only with a sibling <name>_SHA256SUM file holding its sha256.
func InstalledName(d plugin.SetDescription, goos, goarch string) string {
	name := "packer-plugin-kubenode_v" + d.Version + "_" + d.APIVersion + "_" + goos + "_" + goarch
	if goos == "windows" {
		name += ".exe"
	}
	return filepath.Join(filepath.FromSlash(Source), name)
}

// Install copies the plugin binary bin into the plugin directory
// plugins as `packer init` installs a release: at InstalledName of what
// `bin describe` reports, beside its _SHA256SUM file (hex, no newline). It
// returns the installed binary. A development build is refused: packer
// 1.9 does not take a pre-release version for required_plugins' ">= 0.1.0".
func Install(plugins, bin, goos, goarch string) (string, error) {
	out, err := exec.Command(bin, "describe").Output()
	if err != nil {
		return "", fmt.Errorf("%s describe: %w", bin, err)
	}
	var d plugin.SetDescription
	if err := json.Unmarshal(out, &d); err != nil {
		return "", fmt.Errorf("%s describe: %w", bin, err)
	}
	if d.Version == "" || d.APIVersion == "" {
		return "", fmt.Errorf("%s describe: no version or api_version in %s", bin, out)
	}
	if release, _, _ := strings.Cut(d.Version, "+"); strings.Contains(release, "-") {
		return "", fmt.Errorf("%s reports version %s: packer before 1.10 takes only a release build (build it with -ldflags \"-X <module>/version.VersionPrerelease=\")", bin, d.Version)
	}
	dst := filepath.Join(plugins, InstalledName(d, goos, goarch))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	sum, err := copyExecutable(bin, dst)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(dst+"_SHA256SUM", []byte(sum), 0o644); err != nil {
		return "", err
	}
	return dst, nil
}

// copyExecutable copies src to dst (mode 0755) and returns its sha256 in hex.
func copyExecutable(src, dst string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(out, h), in); err != nil {
		out.Close()
		return "", err
	}
	if err := out.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
