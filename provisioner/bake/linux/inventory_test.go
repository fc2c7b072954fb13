// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
)

// The package list keeps installed packages, from dpkg or rpm, sorted,
// each with its source package when that has another name.
func TestParsePackages(t *testing.T) {
	dpkg := "Welcome to the guest\n" +
		"kubenode-package\tdeb\tii \tzlib1g\t1:1.2.13.dfsg-1\tamd64\tzlib\n" +
		"kubenode-package\tdeb\tii \tlibc6\t2.36-9+deb12u10\tamd64\tglibc\n" +
		"kubenode-package\tdeb\trc \tlinux-image-6.1.0-1-amd64\t6.1.4-1\tamd64\tlinux-signed-amd64\n" +
		"kubenode-package\tdeb\thi \tcontainerd\t1.6.20~ds1-1+b1\tamd64\tcontainerd\n" +
		"kubenode-package\tdeb\tii \tadduser\t3.134\tall\tadduser\r\n"
	typ, pkgs := parsePackages(dpkg)
	assert.Equal(t, "deb", typ)
	assert.Equal(t, []baked.Package{
		{Name: "adduser", Version: "3.134", Arch: "all"},
		{Name: "containerd", Version: "1.6.20~ds1-1+b1", Arch: "amd64"},
		{Name: "libc6", Version: "2.36-9+deb12u10", Arch: "amd64", Source: "glibc"},
		{Name: "zlib1g", Version: "1:1.2.13.dfsg-1", Arch: "amd64", Source: "zlib"},
	}, pkgs, "installed and held packages; not one removed with its configuration kept")

	rpm := "kubenode-package\trpm\tii\tbash\t5.1.8-9.el9\tx86_64\tbash-5.1.8-9.el9.src.rpm\n" +
		"kubenode-package\trpm\tii\tgpg-pubkey\t350d275d-6279464b\t(none)\t(none)\n" +
		"kubenode-package\trpm\tii\tshadow-utils\t2:4.9-9.el9\tx86_64\tshadow-utils-4.9-9.el9.src.rpm\n" +
		"kubenode-package\trpm\tii\tpython3-libs\t3.9.18-3.el9\tx86_64\tpython3.9-3.9.18-3.el9.src.rpm\n"
	typ, pkgs = parsePackages(rpm)
	assert.Equal(t, "rpm", typ)
	assert.Equal(t, []baked.Package{
		{Name: "bash", Version: "5.1.8-9.el9", Arch: "x86_64"},
		{Name: "python3-libs", Version: "3.9.18-3.el9", Arch: "x86_64", Source: "python3.9"},
		{Name: "shadow-utils", Version: "2:4.9-9.el9", Arch: "x86_64"},
	}, pkgs, "not the signing keys rpm lists as gpg-pubkey")
	typ, pkgs = parsePackages("dpkg-query: command not found\n")
	assert.Empty(t, typ)
	assert.Empty(t, pkgs)
}

// packagesCommand, run as the guest runs it, lists this Debian machine's
// packages: dpkg itself among them, with the version dpkg reports.
func TestPackagesCommandOnThisMachine(t *testing.T) {
	if _, err := exec.LookPath("dpkg-query"); err != nil {
		t.Fatalf("dpkg-query is not installed (this test reads a real dpkg database): %v", err)
	}
	out, err := exec.Command("sh", "-c", packagesCommand).CombinedOutput()
	require.NoError(t, err, "%s", out)
	typ, pkgs := parsePackages(string(out))
	assert.Equal(t, "deb", typ)
	require.NotEmpty(t, pkgs)
	v, err := exec.Command("dpkg-query", "-W", "-f=${Version} ${Architecture}", "dpkg").Output()
	require.NoError(t, err)
	version, arch, _ := strings.Cut(string(v), " ")
	i := slices.IndexFunc(pkgs, func(p baked.Package) bool { return p.Name == "dpkg" })
	require.NotEqual(t, -1, i, "dpkg is listed: %v", pkgs)
	assert.Equal(t, baked.Package{Name: "dpkg", Version: version, Arch: arch}, pkgs[i])
}
