// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/golden"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

func clusterAPIPlan() Plan {
	p := testPlan()
	p.Bootstrap, p.JoinerConfig, p.CloudInitDatasources = node.BootstrapClusterAPI, nil, DefaultCloudInitDatasources
	return p
}

// The Cluster API scripts: the cloud-init step, the self-check and
// generalize; each valid POSIX shell.
func TestClusterAPIGolden(t *testing.T) {
	p := clusterAPIPlan()
	for name, got := range map[string][]byte{
		"cluster-api/cluster-api.sh": clusterAPI(p),
		"cluster-api/self-check.sh":  SelfCheck(p.selfCheck()),
		"cluster-api/generalize.sh":  generalize(p),
	} {
		t.Run(name, func(t *testing.T) {
			golden.Assert(t, name, got)
			path := filepath.Join(t.TempDir(), "s.sh")
			require.NoError(t, os.WriteFile(path, got, 0o644))
			out, err := exec.Command("sh", "-n", path).CombinedOutput()
			assert.NoError(t, err, "sh -n: %s", out)
		})
	}
}

// bootstrap = "cluster-api" has a cluster-api step and no joiner step;
// generalize cleans cloud-init's seed too. The joiner's bake has neither.
func TestClusterAPISteps(t *testing.T) {
	names := func(p Plan) []string {
		var out []string
		for _, s := range Steps(p) {
			out = append(out, s.Name)
		}
		return out
	}
	capi := clusterAPIPlan()
	assert.Equal(t, []string{"settle", "prerequisites", "node-basics", "kernel", "containerd", "cni", "kubernetes", "crictl", "cluster-api", "self-check", "generalize", "cleanup"}, names(capi))
	assert.Contains(t, string(generalize(capi)), "cloud-init clean --logs --seed")
	assert.Contains(t, string(kubernetes(capi)), "systemctl enable -q kubelet", "the kubelet is enabled")
	assert.NotContains(t, string(kubernetes(capi)), "systemctl start", "and not started: kubeadm join starts it")

	joiner := testPlan()
	assert.NotContains(t, names(joiner), "cluster-api")
	assert.Contains(t, names(joiner), "joiner")
	assert.NotContains(t, string(generalize(joiner)), "--seed")
	assert.NotContains(t, string(SelfCheck(joiner.selfCheck())), "jinja2")
}

// fakeGuest is a temporary root for the Cluster API scripts: /etc, the
// joiner's and the Kubernetes binaries' paths redirected into it, and
// stubs for the package managers and systemctl (which keeps the enabled
// units in a file).
type fakeGuest struct{ root, bin, usrBin, etc, socket, calls string }

func newFakeGuest(t *testing.T) fakeGuest {
	root := t.TempDir()
	g := fakeGuest{root: root, bin: filepath.Join(root, "stubs"), usrBin: filepath.Join(root, "usr-bin"), etc: filepath.Join(root, "etc"),
		socket: filepath.Join(root, "containerd.sock"), calls: filepath.Join(root, "calls")}
	for _, d := range []string{g.bin, g.usrBin, g.etc + "/cloud/cloud.cfg.d", g.etc + "/systemd/system", g.etc + "/kubenode", root + "/local-bin"} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	enabled, masked := filepath.Join(root, "enabled"), filepath.Join(root, "masked")
	stubs := map[string]string{
		"apt-get":    `echo "apt-get $*" >> ` + q(g.calls),
		"dpkg-query": `echo 'install ok installed'`,
		// The host's own must not answer for the guest.
		"ctr": "exit 1", "crictl": "exit 1", "containerd": "exit 1", "kubelet": "exit 1", "kubeadm": "exit 1", "kubectl": "exit 1",
		"systemctl": `echo "systemctl $*" >> ` + q(g.calls) + `
case "$1" in
  cat) case "$2" in cloud-init-local.service|cloud-init.service|cloud-config.service|cloud-final.service|ssh.service) exit 0;; esac; exit 1;;
  is-enabled) [ "$2" = -q ] && shift; if grep -qx "$2" ` + q(masked) + ` 2>/dev/null; then echo masked; exit 1; fi; if grep -qx "$2" ` + q(enabled) + ` 2>/dev/null; then echo enabled; exit 0; fi; echo disabled; exit 1;;
  unmask) [ "$2" = -q ] && shift; grep -vx "$2" ` + q(masked) + ` > ` + q(masked) + `.new; mv ` + q(masked) + `.new ` + q(masked) + `;;
  enable) [ "$2" = -q ] && shift; if grep -qx "$2" ` + q(masked) + ` 2>/dev/null; then echo "Failed to enable unit: Unit file $2 is masked." >&2; exit 1; fi; echo "$2" >> ` + q(enabled) + `;;
esac
exit 0`,
	}
	for name, body := range stubs {
		require.NoError(t, os.WriteFile(filepath.Join(g.bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	}
	return g
}

func (g fakeGuest) redirect(t *testing.T, script []byte) string {
	s := strings.NewReplacer(
		units.LinuxJoinerPath, g.root+"/local-bin/kubenode-joiner",
		growrootScriptPath, g.root+"/local-sbin/kubenode-growroot",
		"/etc/", g.etc+"/",
		"[ -x "+binDir+"/", "[ -x "+g.usrBin+"/",
		"[ -S "+containerdSocket+" ]", "[ -S "+g.socket+" ]",
	).Replace(string(script))
	require.NotContains(t, s, " /etc/", "every path was redirected")
	return s
}

func (g fakeGuest) run(t *testing.T, script string, extraPath ...string) (string, error) {
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+strings.Join(append(extraPath, g.bin), ":")+":/usr/bin:/bin")
	out, err := cmd.CombinedOutput()
	return strings.ReplaceAll(string(out), g.root, ""), err
}

func (g fakeGuest) write(t *testing.T, files map[string]string) {
	for f, content := range files {
		p := filepath.Join(g.root, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// The cluster-api step on a guest an installer and an earlier joiner bake
// left behind: the leftovers and the joiner go, the datasources are
// written after the distribution's and the base image's pins, cloud-init's
// installed units are enabled; a second run changes nothing; a file read
// after the bake's that pins datasource_list fails the step, named.
func TestClusterAPIStepOnAFakeGuest(t *testing.T) {
	g := newFakeGuest(t)
	leftovers := map[string]string{}
	for _, f := range cloudInitLeftovers {
		leftovers[strings.Replace(f, "/etc/", "etc/", 1)] = "datasource_list: [ None ]\n"
	}
	g.write(t, leftovers)
	g.write(t, map[string]string{
		"etc/cloud/cloud.cfg.d/90_dpkg.cfg":          "datasource_list: [ NoCloud, ConfigDrive, Ec2, None ]\n",
		"etc/cloud/cloud.cfg.d/90-kubenode.cfg":      "datasource_list: [ NoCloud, None ]\n",
		"etc/cloud/cloud.cfg.d/99-zz-growpart.cfg":   "growpart: {mode: auto}\n",
		"etc/systemd/system/kubenode-joiner.service": "[Unit]\n",
		"etc/kubenode/joiner.yaml":                   "kind: JoinerConfiguration\n",
		"local-bin/kubenode-joiner":                  "#!/bin/sh\n",
		// node-basics' unit, from a bake before cloud-init was installed.
		"etc/systemd/system/kubenode-growroot.service": "[Unit]\n",
		"local-sbin/kubenode-growroot":                 "#!/bin/sh\n",
		// cloud-final masked: enabling it would fail.
		"masked": "cloud-final.service\n",
	})
	p := clusterAPIPlan()
	p.Proxy = node.Proxy{}
	script := g.redirect(t, clusterAPI(p))
	out, err := g.run(t, script)
	require.NoError(t, err, out)
	for _, f := range cloudInitLeftovers {
		assert.NoFileExists(t, g.etc+strings.TrimPrefix(f, "/etc"))
		assert.Contains(t, out, "changed: "+f+" removed")
	}
	for _, f := range []string{"etc/systemd/system/kubenode-joiner.service", "etc/kubenode/joiner.yaml", "local-bin/kubenode-joiner",
		"etc/systemd/system/kubenode-growroot.service", "local-sbin/kubenode-growroot"} {
		assert.NoFileExists(t, filepath.Join(g.root, f))
	}
	assert.Contains(t, out, "changed: kubenode-growroot.service removed (cloud-init grows the root)")
	assert.Contains(t, out, "changed: cloud-final.service unmasked")
	data, err := os.ReadFile(g.etc + "/cloud/cloud.cfg.d/99-kubenode-datasources.cfg")
	require.NoError(t, err)
	assert.Contains(t, string(data), "\ndatasource_list: [ NoCloud, ConfigDrive, OpenStack, None ]\n")
	calls, _ := os.ReadFile(g.calls)
	for _, u := range []string{"cloud-init-local.service", "cloud-init.service", "cloud-config.service", "cloud-final.service"} {
		assert.Contains(t, string(calls), "systemctl enable -q "+u+"\n")
	}
	assert.NotContains(t, string(calls), "enable -q cloud-init-network.service", "a unit this cloud-init does not have")
	assert.NotContains(t, string(calls), "apt-get", "the packages are installed")
	assert.Contains(t, string(calls), "systemctl disable -q kubenode-growroot.service\n")
	unmask := strings.Index(string(calls), "systemctl unmask -q cloud-final.service\n")
	require.GreaterOrEqual(t, unmask, 0, "cloud-final.service unmasked")
	assert.Less(t, unmask, strings.Index(string(calls), "systemctl enable -q cloud-final.service\n"), "before it is enabled")

	out, err = g.run(t, script)
	require.NoError(t, err, out)
	assert.NotContains(t, out, "changed: ", "a second bake reports 0 changes")

	// cloud-init reads 99_zz.cfg ('_' > '-') after the bake's file.
	g.write(t, map[string]string{"etc/cloud/cloud.cfg.d/99_zz.cfg": "datasource_list:\n  - Ec2\n"})
	out, err = g.run(t, script)
	require.Error(t, err)
	assert.Contains(t, out, "/etc/cloud/cloud.cfg.d/99_zz.cfg set datasource_list and cloud-init reads them after /etc/cloud/cloud.cfg.d/99-kubenode-datasources.cfg")
	assert.NotContains(t, out, "99-zz-growpart.cfg set", "a later file without datasource_list")
}

// The self-check's Cluster API part against a fake guest: all in place, no
// problem of its own; each missing or extra piece a problem that says it.
func TestClusterAPISelfCheckOnAFakeGuest(t *testing.T) {
	p := clusterAPIPlan()
	p.CheckImages = nil
	check := func(t *testing.T, g fakeGuest, extraPath ...string) string {
		out, err := g.run(t, g.redirect(t, SelfCheck(p.selfCheck())), extraPath...)
		require.Error(t, err, "the fake guest has no kernel modules or time sync: the self-check fails anyway")
		var own []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "problem: ") && !slices.ContainsFunc([]string{"module", "sysctl", "swap", "time sync", "growpart", "the root", "reports", "answer", "image ", "enabled to start at boot", "is not running", "CNI plugin"}, func(s string) bool { return strings.Contains(l, s) }) {
				own = append(own, l)
			}
		}
		return strings.Join(own, "\n")
	}
	good := newFakeGuest(t)
	good.write(t, map[string]string{
		"etc/cloud/cloud.cfg.d/90_dpkg.cfg":                 "datasource_list: [ NoCloud, Ec2, None ]\n",
		"etc/cloud/cloud.cfg.d/99-kubenode-datasources.cfg": CloudInitDatasourcesConfig(DefaultCloudInitDatasources),
		"usr-bin/kubeadm":                                   "", "usr-bin/kubelet": "", "usr-bin/kubectl": "",
	})
	for _, b := range []string{"kubeadm", "kubelet", "kubectl"} {
		require.NoError(t, os.Chmod(filepath.Join(good.usrBin, b), 0o755))
	}
	l, err := net.Listen("unix", good.socket)
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, os.WriteFile(filepath.Join(good.root, "enabled"), []byte("cloud-init-local.service\ncloud-init.service\ncloud-config.service\ncloud-final.service\nssh.service\n"), 0o644))
	pyOK := filepath.Join(good.root, "py-ok")
	require.NoError(t, os.MkdirAll(pyOK, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pyOK, "python3"), []byte("#!/bin/sh\n[ \"$*\" = \"-c import jinja2\" ]\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pyOK, "cloud-init"), []byte("#!/bin/sh\n"), 0o755))
	assert.Empty(t, check(t, good, pyOK))

	bad := newFakeGuest(t)
	bad.write(t, map[string]string{
		"etc/cloud/cloud.cfg.d/99-kubenode-datasources.cfg": CloudInitDatasourcesConfig([]string{"NoCloud", "None"}),
		"etc/cloud/cloud.cfg.d/99_zz.cfg":                   "datasource_list: [ Ec2 ]\n",
		"etc/cloud/ds-identify.cfg":                         "policy: enabled\n",
		"etc/systemd/system/kubenode-joiner.service":        "[Unit]\n",
	})
	pyBad := filepath.Join(bad.root, "py-bad")
	require.NoError(t, os.MkdirAll(pyBad, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pyBad, "python3"), []byte("#!/bin/sh\nexit 1\n"), 0o755))
	got := check(t, bad, pyBad)
	for _, want := range []string{
		"problem: python3 cannot import jinja2",
		"problem: cloud-init-local.service is not enabled",
		"problem: cloud-final.service is not enabled: cloud-init does not run that stage at boot",
		"problem: /etc/cloud/cloud.cfg.d/99-kubenode-datasources.cfg does not hold the bake's datasource_list: [ NoCloud, ConfigDrive, OpenStack, None ]",
		"problem: /etc/cloud/cloud.cfg.d/99_zz.cfg sets datasource_list and is read after",
		"problem: /etc/cloud/ds-identify.cfg is there",
		"problem: the joiner's unit kubenode-joiner.service is installed",
		"problem: /usr/bin/kubeadm is missing", "problem: /usr/bin/kubectl is missing",
		"problem: containerd's socket /run/containerd/containerd.sock is missing",
		"problem: no SSH server is enabled",
	} {
		assert.Contains(t, strings.ReplaceAll(got, bad.usrBin, "/usr/bin"), want)
	}
}

// Generalize in cluster-api mode leaves a clone to take its network and
// name from its datasource: the installer's netplan and curtin's sources
// switch removed, /etc/hostname empty, /etc/hosts localhost only; a second
// run changes nothing. The joiner's generalize keeps them.
func TestClusterAPIGeneralizeResetsTheNetwork(t *testing.T) {
	g := newFakeGuest(t)
	installer := map[string]string{
		"etc/hostname":                      "build-vm\n",
		"etc/hosts":                         "127.0.0.1 localhost\n127.0.1.1 build-vm\n",
		"etc/netplan/01-kubenode-keep.yaml": "network: {version: 2}\n",
	}
	for _, f := range installerNetwork {
		installer[strings.TrimPrefix(f, "/")] = "network: {version: 2, ethernets: {enp1s0: {dhcp4: true}}}\n"
	}
	g.write(t, installer)
	script := g.redirect(t, piece("reset-network", nil))
	out, err := g.run(t, script)
	require.NoError(t, err, out)
	for _, f := range installerNetwork {
		assert.NoFileExists(t, g.etc+strings.TrimPrefix(f, "/etc"))
		assert.Contains(t, out, "changed: "+f+" removed")
	}
	assert.FileExists(t, g.etc+"/netplan/01-kubenode-keep.yaml", "netplan files the installer did not write stay")
	hostname, err := os.ReadFile(g.etc + "/hostname")
	require.NoError(t, err)
	assert.Empty(t, hostname)
	hosts, err := os.ReadFile(g.etc + "/hosts")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n", string(hosts))

	out, err = g.run(t, script)
	require.NoError(t, err, out)
	assert.NotContains(t, out, "changed: ", "a second run reports 0 changes")

	p := clusterAPIPlan()
	assert.Contains(t, string(generalize(p)), "/etc/netplan/00-installer-config.yaml")
	joiner := string(generalize(testPlan()))
	for _, f := range installerNetwork {
		assert.NotContains(t, joiner, f, "bootstrap = joiner keeps it")
	}
	// The joiner's image keeps the build's names; only a clone's boot
	// renames it (kubenode-hostname, hostname.go) when nothing named it.
	assert.NotContains(t, joiner, ": > /etc/hostname", "bootstrap = joiner keeps /etc/hostname")
	assert.NotContains(t, joiner, "put '/etc/hosts'", "bootstrap = joiner keeps /etc/hosts")
}

// Generalize in joiner mode leaves a clone, whose NIC has a new MAC and
// which has no datasource, a network: cloud-init's fallback netplan that
// matched the build VM's NIC by MAC (with set-name) goes, a DHCP-on-any-
// Ethernet file takes its place (root-only, as netplan wants), a file
// that matches by name stays; a second run changes nothing. Without MAC
// matches nothing is written.
func TestJoinerGeneralizeGivesClonesANetwork(t *testing.T) {
	g := newFakeGuest(t)
	require.NoError(t, os.MkdirAll(g.etc+"/netplan", 0o755))
	script := g.redirect(t, piece("clone-network", nil))

	out, err := g.run(t, script)
	require.NoError(t, err, out)
	assert.Contains(t, out, "ok: no netplan file matches a NIC by MAC address")
	assert.NoFileExists(t, g.etc+"/netplan/60-kubenode-clone.yaml")

	g.write(t, map[string]string{
		"etc/netplan/50-cloud-init.yaml": "network:\n  version: 2\n  ethernets:\n    enp1s0:\n      match:\n        macaddress: \"52:54:00:12:34:56\"\n      dhcp4: true\n      set-name: \"enp1s0\"\n",
		"etc/netplan/01-by-name.yaml":    "network: {version: 2, ethernets: {enp2s0: {dhcp4: true}}}\n",
	})
	out, err = g.run(t, script)
	require.NoError(t, err, out)
	assert.Contains(t, out, "changed: /etc/netplan/50-cloud-init.yaml removed (it matched the build VM's NIC by MAC address)")
	assert.NoFileExists(t, g.etc+"/netplan/50-cloud-init.yaml")
	assert.FileExists(t, g.etc+"/netplan/01-by-name.yaml", "a file that matches by name stays")
	written, err := os.ReadFile(g.etc + "/netplan/60-kubenode-clone.yaml")
	require.NoError(t, err)
	assert.Equal(t, cloneNetplanFile, string(written))
	assert.NotContains(t, string(written), "macaddress")
	info, err := os.Stat(g.etc + "/netplan/60-kubenode-clone.yaml")
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	out, err = g.run(t, script)
	require.NoError(t, err, out)
	assert.NotContains(t, out, "changed: ", "a second run reports 0 changes")

	assert.Contains(t, string(generalize(testPlan())), "60-kubenode-clone.yaml", "bootstrap = joiner resets MAC matches")
	assert.NotContains(t, string(generalize(clusterAPIPlan())), "60-kubenode-clone.yaml", "cluster-api: cloud-init writes each VM's network from its datasource")
}
