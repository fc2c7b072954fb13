// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/golden"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
)

// The clone-naming script, its unit and the joiner's generalize (which
// installs them) are golden files; the scripts are valid POSIX shell.
func TestCloneHostnameGolden(t *testing.T) {
	for name, got := range map[string][]byte{
		"linux/kubenode-hostname":         []byte(HostnameScript(DefaultHostnamePrefix)),
		"linux/kubenode-hostname.service": []byte(hostnameUnitFile),
		"linux/generalize.sh":             generalize(testPlan()),
	} {
		t.Run(name, func(t *testing.T) {
			golden.Assert(t, name, got)
			if strings.HasSuffix(name, ".service") {
				return
			}
			path := filepath.Join(t.TempDir(), "s.sh")
			require.NoError(t, os.WriteFile(path, got, 0o644))
			out, err := exec.Command("sh", "-n", path).CombinedOutput()
			assert.NoError(t, err, "sh -n: %s", out)
		})
	}
}

// generalize installs the unit with the plan's prefix (the default when
// none); Cluster API's removes what an earlier bake left instead; without
// generalize there is none.
func TestGeneralizeInstallsCloneHostname(t *testing.T) {
	p := testPlan()
	g := string(generalize(p))
	assert.Contains(t, g, "put '"+hostnameScriptPath+"' 0755 ")
	assert.Contains(t, g, "put '"+hostnameUnitPath+"' 0644 ")
	assert.Contains(t, g, "systemctl enable -q "+hostnameUnit)
	assert.Contains(t, g, "prefix='kubenode-'\n")
	p.HostnamePrefix = "lab-"
	assert.Contains(t, string(generalize(p)), "prefix='lab-'\n")

	capi := string(generalize(clusterAPIPlan()))
	assert.NotContains(t, capi, "put '"+hostnameScriptPath+"'")
	assert.Contains(t, capi, "rm -f "+hostnameUnitPath+" "+hostnameScriptPath+" "+BuildHostnamesFile)

	p.Generalize = false
	for _, s := range Steps(p) {
		assert.NotContains(t, string(s.Script), hostnameScriptPath, s.Name)
		assert.NotContains(t, string(s.Script), "put '"+hostnameUnitPath+"'", s.Name)
	}
}

// The unit runs after cloud-init's stages that name a VM and after the
// machine ID exists, before the joiner and the kubelet; the joiner's unit
// orders itself after it too. systemd-analyze reads both when installed.
func TestCloneHostnameUnitOrdering(t *testing.T) {
	unit := hostnameUnitFile
	field := func(unit, key string) []string {
		var out []string
		for _, l := range strings.Split(unit, "\n") {
			if v, ok := strings.CutPrefix(l, key+"="); ok {
				out = append(out, strings.Fields(v)...)
			}
		}
		return out
	}
	after, before := field(unit, "After"), field(unit, "Before")
	for _, u := range []string{"cloud-init-local.service", "cloud-init.service", "cloud-init-network.service", "systemd-machine-id-commit.service", "local-fs.target"} {
		assert.Contains(t, after, u)
	}
	assert.Contains(t, before, units.JoinerServiceName+".service")
	assert.Contains(t, before, "kubelet.service")
	assert.NotContains(t, unit, "DefaultDependencies=no", "after sysinit.target: the machine ID exists and cloud-init's early stages are done")
	assert.NotContains(t, unit, "Wants=", "it pulls in nothing")
	assert.Equal(t, []string{"multi-user.target"}, field(unit, "WantedBy"))
	assert.Equal(t, units.LinuxHostnameServiceName+".service", hostnameUnit)

	joiner := units.SystemdUnit(kubeletConf)
	assert.Contains(t, field(joiner, "After"), hostnameUnit, "the joiner reads the VM's own name")
	assert.NotContains(t, field(joiner, "Wants"), hostnameUnit, "After= alone: an image without the unit is fine")
	assert.Contains(t, field(string(kubernetes(testPlan())), "After"), "network-online.target")

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "kubenode-hostname")
	require.NoError(t, os.WriteFile(script, []byte(HostnameScript(DefaultHostnamePrefix)), 0o755))
	path := filepath.Join(dir, hostnameUnit)
	require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(unit, hostnameScriptPath, script)), 0o644))
	cmd := exec.Command(analyze, "verify", "--man=no", path)
	cmd.Env = append(os.Environ(), "SYSTEMD_UNIT_PATH="+dir+":")
	out, err := cmd.CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		assert.NotContains(t, l, hostnameUnit+":", "systemd-analyze on the unit: %s", l)
	}
	_ = err // verify also fails on units of this host that the unit names but the sandbox lacks
}

func TestCheckHostnamePrefix(t *testing.T) {
	for _, ok := range []string{"kubenode-", "node", "lab-1-", "0a", strings.Repeat("a", 51)} {
		assert.Empty(t, CheckHostnamePrefix(ok), ok)
	}
	for bad, want := range map[string]string{
		"Kubenode-":             `holds 'K'`,
		"-node":                 "starts with '-'",
		"node.":                 `holds '.'`,
		"node_":                 `holds '_'`,
		"nöde":                  `holds 'ö'`,
		"a b":                   `holds ' '`,
		strings.Repeat("a", 52): "52 characters; at most 51",
	} {
		assert.Contains(t, CheckHostnamePrefix(bad), want, bad)
	}
}

// The script, run against a temporary /etc with fake hostname and
// hostnamectl: a VM called by the build's name is renamed to prefix +
// machine ID and its name resolves; a second run changes nothing; a name
// cloud-init gave stays; hostname(1) does it where hostnamectl fails.
func TestHostnameScriptRenamesOnlyUnnamedVMs(t *testing.T) {
	const mid = "3f2a9c01be4711e0a3c5d2b4c6e8f001"
	type result struct{ out, name, etcHostname, hosts, calls string }
	run := func(t *testing.T, dir string) result {
		t.Helper()
		etc, bin := filepath.Join(dir, "etc"), filepath.Join(dir, "bin")
		state, calls := filepath.Join(dir, "kernel-hostname"), filepath.Join(dir, "calls")
		script := strings.NewReplacer("/etc/", etc+"/", kernelHostname, state).Replace(HostnameScript("lab-"))
		require.NotContains(t, script, " /etc/", "every path was redirected")
		require.NotContains(t, script, "/proc/", "every path was redirected")
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "STATE="+state, "CALLS="+calls, "ETC="+etc)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		read := func(f string) string { data, _ := os.ReadFile(f); return string(data) }
		return result{strings.ReplaceAll(string(out), etc+"/", "/etc/"), strings.TrimSuffix(read(state), "\n"), read(etc + "/hostname"), read(etc + "/hosts"), read(calls)}
	}
	setup := func(t *testing.T, kernelName, hostnamectl string) string {
		dir := t.TempDir()
		etc, bin := filepath.Join(dir, "etc"), filepath.Join(dir, "bin")
		require.NoError(t, os.MkdirAll(etc+"/kubenode", 0o755))
		require.NoError(t, os.MkdirAll(bin, 0o755))
		for f, content := range map[string]string{
			etc + "/machine-id":              mid + "\n",
			etc + "/hostname":                "debian-build\n",
			etc + "/hosts":                   "127.0.0.1\tlocalhost\n127.0.1.1\tdebian-build.example.com debian-build\n::1 localhost ip6-localhost\n",
			etc + "/kubenode/build-hostname": "debian-build\n",
			dir + "/kernel-hostname":         kernelName + "\n",
		} {
			require.NoError(t, os.WriteFile(f, []byte(content), 0o644))
		}
		fakes := map[string]string{
			// hostname(1) NAME: sets the kernel's name (the script reads
			// it from /proc/sys/kernel/hostname, here $STATE).
			"hostname": `echo "hostname $*" >> "$CALLS"; printf '%s\n' "$1" > "$STATE"`,
			// hostnamectl set-hostname: the kernel's name and /etc/hostname.
			"hostnamectl": hostnamectl,
		}
		for name, body := range fakes {
			require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
		}
		return dir
	}
	const working = `echo "hostnamectl $*" >> "$CALLS"; printf '%s\n' "$2" > "$STATE"; printf '%s\n' "$2" > "$ETC/hostname"`

	t.Run("the build's name", func(t *testing.T) {
		dir := setup(t, "debian-build", working)
		r := run(t, dir)
		assert.Equal(t, "lab-3f2a9c01be47", r.name)
		assert.Equal(t, "lab-3f2a9c01be47\n", r.etcHostname)
		assert.Equal(t, "hostnamectl set-hostname lab-3f2a9c01be47\n", r.calls)
		assert.Equal(t, "127.0.0.1\tlocalhost\n127.0.1.1 lab-3f2a9c01be47\n::1 localhost ip6-localhost\n", r.hosts)
		assert.Contains(t, r.out, "kubenode-hostname: debian-build -> lab-3f2a9c01be47")
		assert.Contains(t, r.out, "kubenode-hostname: /etc/hosts: 127.0.1.1 lab-3f2a9c01be47")

		again := run(t, dir)
		assert.Equal(t, r.name, again.name)
		assert.Equal(t, r.hosts, again.hosts)
		assert.Equal(t, r.calls, again.calls, "a second boot calls nothing")
		assert.Equal(t, "kubenode-hostname: lab-3f2a9c01be47: this VM's name already\n", again.out)
	})
	for _, name := range []string{"localhost", ""} {
		t.Run("unnamed: "+name, func(t *testing.T) {
			r := run(t, setup(t, name, working))
			assert.Equal(t, "lab-3f2a9c01be47", r.name)
		})
	}
	t.Run("named by cloud-init", func(t *testing.T) {
		dir := setup(t, "worker-7", working)
		r := run(t, dir)
		assert.Equal(t, "worker-7", r.name)
		assert.Equal(t, "debian-build\n", r.etcHostname, "untouched")
		assert.Empty(t, r.calls)
		assert.Contains(t, r.hosts, "127.0.1.1\tdebian-build.example.com debian-build\n", "untouched")
		assert.Equal(t, "kubenode-hostname: worker-7: named by cloud-init or the user; left as it is\n", r.out)
	})
	t.Run("no hostnamectl", func(t *testing.T) {
		dir := setup(t, "debian-build", `echo 'Failed to connect to bus' >&2; exit 1`)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "etc", "hosts"), []byte("127.0.0.1 localhost\n"), 0o644))
		r := run(t, dir)
		assert.Equal(t, "lab-3f2a9c01be47", r.name)
		assert.Equal(t, "lab-3f2a9c01be47\n", r.etcHostname)
		assert.Equal(t, "hostname lab-3f2a9c01be47\n", r.calls)
		assert.Equal(t, "127.0.0.1 localhost\n127.0.1.1 lab-3f2a9c01be47\n", r.hosts, "a hosts file without 127.0.1.1 gets one")
	})
	t.Run("no machine ID yet", func(t *testing.T) {
		dir := setup(t, "debian-build", working)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "etc", "machine-id"), nil, 0o644))
		r := run(t, dir)
		assert.Equal(t, "debian-build", r.name)
		assert.Empty(t, r.calls)
		assert.Contains(t, r.out, "/etc/machine-id holds no machine ID yet")
	})
}

// generalize's part, run twice against a temporary /etc with stub
// hostname and systemctl: the build's names recorded once, the unit
// enabled once; the second run reports no change.
func TestCloneHostnameInstallIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	etc, bin, root := filepath.Join(dir, "etc"), filepath.Join(dir, "bin"), filepath.Join(dir, "root")
	require.NoError(t, os.MkdirAll(etc, 0o755))
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(etc+"/hostname", []byte("debian-build\n"), 0o644))
	enabled, kernel := filepath.Join(dir, "enabled"), filepath.Join(dir, "kernel-hostname")
	require.NoError(t, os.WriteFile(kernel, []byte("debian-build\n"), 0o644))
	systemctl := `case "$1" in is-enabled) [ -f ` + q(enabled) + ` ];; enable) touch ` + q(enabled) + `;; esac`
	require.NoError(t, os.WriteFile(filepath.Join(bin, "systemctl"), []byte("#!/bin/sh\n"+systemctl+"\n"), 0o755))
	script := strings.NewReplacer("/etc/", etc+"/", "/usr/local/sbin/", root+"/", kernelHostname, kernel).Replace(string(piece("clone-hostname", "kubenode-")))
	require.NotContains(t, script, "/proc/", "every path was redirected")
	run := func() string {
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	first := run()
	assert.Contains(t, first, "changed: "+etc+"/kubenode/build-hostname: debian-build")
	assert.Contains(t, first, "changed: "+hostnameUnit+" enabled")
	data, err := os.ReadFile(etc + "/kubenode/build-hostname")
	require.NoError(t, err)
	assert.Equal(t, "debian-build\n", string(data))
	assert.FileExists(t, root+"/kubenode-hostname")
	second := run()
	assert.NotContains(t, second, "changed: ", "a second bake reports 0 changes")
}
