// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/golden"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// basicsCases are the Linux scripts of the basics and the self-check:
// tarball containerd with crictl, the bridge CNI and preloaded images; the
// distribution's containerd without crictl, joiner or images.
func basicsCases() map[string][]byte {
	full := testPlan()
	pkg := testPlan()
	pkg.ContainerdSource, pkg.ContainerdVersion, pkg.CrictlVersion, pkg.CrictlTarball = "package", "", "", ""
	pkg.CNI, pkg.JoinerConfig, pkg.CheckImages, pkg.Proxy = "none", nil, nil, node.Proxy{}
	return map[string][]byte{
		"linux/node-basics.sh":         nodeBasics(full),
		"linux/crictl.sh":              crictl(full),
		"linux/self-check.sh":          SelfCheck(full.selfCheck()),
		"linux/self-check-package.sh":  SelfCheck(pkg.selfCheck()),
		"linux/kubenode-growroot":      []byte(GrowrootScript()),
		"linux/00-fetch-artifacts.sh":  TransferScript(Staging, goldenArtifacts, goldenURL, "http://10.0.2.2:41234"),
		"linux/00-verify-artifacts.sh": TransferScript(Staging, goldenArtifacts, nil, ""),
	}
}

// goldenArtifacts are two artifacts as a bake transfers them.
var goldenArtifacts = []versions.Artifact{
	{Name: "kubelet", FileName: "kubelet", SHA256: strings.Repeat("ab", 32)},
	{Name: "containerd", FileName: "containerd-2.1.4-linux-amd64.tar.gz", SHA256: strings.Repeat("CD", 32)},
}

// goldenURL is where a fixed artifact server serves a.
func goldenURL(a versions.Artifact) string {
	return "http://10.0.2.2:41234/00112233445566778899aabbccddeeff/" + a.FileName
}

func TestLinuxBasicsGolden(t *testing.T) {
	for name, got := range basicsCases() {
		t.Run(name, func(t *testing.T) {
			golden.Assert(t, name, got)
			path := filepath.Join(t.TempDir(), "s.sh")
			require.NoError(t, os.WriteFile(path, got, 0o644))
			out, err := exec.Command("sh", "-n", path).CombinedOutput()
			assert.NoError(t, err, "sh -n: %s", out)
			if strings.Contains(name, "self-check") || strings.Contains(name, "growroot") {
				assert.NotContains(t, string(got), "changed: ", "%s: a second bake must still report 0 changes", name)
			}
		})
	}
}

// The self-check follows the plan: crictl or ctr, the containerd version
// only for the tarball, the bridge plugins only for cni = bridge, the
// joiner's unit only when installed, images as containerd names them.
func TestLinuxSelfCheckFollowsThePlan(t *testing.T) {
	full := string(SelfCheck(testPlan().selfCheck()))
	for _, want := range []string{
		"enabled 'kubenode-joiner'", "active containerd", "module br_netfilter", "sysctl_is net.bridge.bridge-nf-call-iptables 1",
		"version_is kubectl 'v1.33.13' kubectl version --client", "crictl info", "'v2.1.4'", "for p in bridge host-local loopback",
		"'registry.k8s.io/pause:3.10' 'docker.io/library/busybox:latest'", "ctr -n k8s.io images ls -q", "cloudinit_grows_root",
		growrootUnit,
	} {
		assert.Contains(t, full, want)
	}
	assert.NotContains(t, full, "ctr version")
	p := testPlan()
	p.ContainerdVersion, p.CrictlVersion, p.CNI, p.JoinerConfig, p.CheckImages = "", "", "none", nil, nil
	bare := string(SelfCheck(p.selfCheck()))
	assert.Contains(t, bare, "ctr version")
	for _, absent := range []string{"crictl info", "crictl --version", "containerd --version", "host-local", "kubenode-joiner", "images ls"} {
		assert.NotContains(t, bare, absent)
	}
}

// The rendered self-check runs against fake commands: every check runs,
// each failing one is printed as a problem, the script fails, and the count
// matches the list. (Kernel, swap and root-growth checks read this host's
// files and are not asserted.)
func TestLinuxSelfCheckCollectsEveryProblem(t *testing.T) {
	bin := t.TempDir()
	fakes := map[string]string{
		"systemctl":  `case "$1" in is-enabled) echo disabled; exit 1;; is-active) echo inactive; exit 3;; esac; exit 1`,
		"kubelet":    `echo 'Kubernetes v1.32.9'`,
		"kubeadm":    `echo v1.33.13`,
		"kubectl":    `echo 'Client Version: v1.33.13'; echo 'Kustomize Version: v5.6.0'`,
		"containerd": `echo 'containerd github.com/containerd/containerd/v2 v2.0.7 abcdef'`,
		"crictl":     `if [ "$1" = --version ]; then echo 'crictl version v1.33.0'; exit 0; fi; echo 'connect: connection refused' >&2; exit 1`,
		"ctr":        `echo 'registry.k8s.io/pause:3.10'`,
		"sysctl":     `echo 1`,
	}
	for name, body := range fakes {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	}
	script := filepath.Join(t.TempDir(), "self-check.sh")
	require.NoError(t, os.WriteFile(script, SelfCheck(testPlan().selfCheck()), 0o644))
	cmd := exec.Command("sh", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+":/usr/bin:/bin")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the self-check fails: %v\n%s", err, out)
	assert.Equal(t, 1, exit.ExitCode())
	got := string(out)
	for _, want := range []string{
		"problem: containerd is not enabled to start at boot (systemctl is-enabled: disabled)",
		"problem: kubelet is not enabled to start at boot",
		"problem: kubenode-joiner is not enabled to start at boot",
		"problem: containerd is not running (systemctl is-active: inactive",
		"problem: kubelet reports v1.32.9 (kubelet --version), want v1.33.13",
		"ok: kubeadm v1.33.13", "ok: kubectl v1.33.13", "ok: crictl v1.33.0",
		"problem: containerd reports v2.0.7, want 2.1.4",
		"problem: containerd does not answer crictl info: connect: connection refused",
		"problem: no time sync service is enabled",
		"ok: image registry.k8s.io/pause:3.10",
		"problem: image docker.io/library/busybox:latest is not in containerd",
	} {
		assert.Contains(t, got, want)
	}
	problems := regexp.MustCompile(`(?m)^problem: `).FindAllString(got, -1)
	assert.Contains(t, got, fmt.Sprintf("self-check: %d problems", len(problems)), "the count is the list's")
	assert.Less(t, strings.Index(got, "problem: containerd is not enabled"), strings.Index(got, "problem: image docker.io"), "it goes on after the first problem")
}

// The crictl step installs the binary from the tarball once, then reports
// it unchanged, and fails naming both versions when the tarball holds
// another release.
func TestLinuxCrictlStep(t *testing.T) {
	dir := t.TempDir()
	staging, bin := filepath.Join(dir, "staging"), filepath.Join(dir, "bin")
	require.NoError(t, os.MkdirAll(staging, 0o755))
	require.NoError(t, os.MkdirAll(bin, 0o755))
	mk := func(version string) {
		src := filepath.Join(dir, "src")
		require.NoError(t, os.MkdirAll(src, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(src, "crictl"), []byte("#!/bin/sh\necho 'crictl version "+version+"'\n"), 0o755))
		out, err := exec.Command("tar", "-C", src, "-czf", filepath.Join(staging, "crictl.tar.gz"), "crictl").CombinedOutput()
		require.NoError(t, err, string(out))
	}
	p := testPlan()
	p.Staging = staging
	script := strings.ReplaceAll(string(crictl(p)), binDir+"/crictl", bin+"/crictl")
	run := func() (string, error) {
		out, err := exec.Command("sh", "-c", script).CombinedOutput()
		return string(out), err
	}
	mk(p.CrictlVersion)
	out, err := run()
	require.NoError(t, err, out)
	assert.Contains(t, out, "changed: crictl installed")
	out, err = run()
	require.NoError(t, err, out)
	assert.NotContains(t, out, "changed: ")
	assert.Contains(t, out, "ok: crictl is "+p.CrictlVersion)
	mk("v1.0.0")
	out, err = run()
	require.Error(t, err)
	assert.Contains(t, out, "crictl_version is "+p.CrictlVersion+" but the crictl from crictl.tar.gz reports v1.0.0: give the crictl of")
}
