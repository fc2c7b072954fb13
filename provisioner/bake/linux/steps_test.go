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

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

func testPlan() Plan {
	return Plan{
		KubernetesVersion: "v1.33.13", PauseImage: "registry.k8s.io/pause:3.10",
		ContainerdSource: "tarball", ContainerdTarball: "containerd.tar.gz", RuncBinary: "runc.amd64", CNITarball: "cni.tgz",
		CNI: "bridge", BridgeSubnet: "10.85.0.0/16", CgroupDriver: "systemd",
		Proxy:        node.Proxy{HTTP: "http://proxy:3128", No: "10.0.0.0/8,'quoted'"},
		JoinerConfig: []byte("apiVersion: joiner.kubenode.io/v1alpha1\nkind: JoinerConfiguration\n"),
		Generalize:   true, Staging: "/var/tmp/kubenode-bake",
		CrictlVersion: "v1.33.0", CrictlTarball: "crictl.tar.gz", ContainerdVersion: "2.1.4",
		CheckImages: []string{"registry.k8s.io/pause:3.10", "busybox"},
	}
}

// piece is a piece of the scripts (a template they share) as a script of
// its own: the header, then the piece.
func piece(name string, data any) []byte {
	return []byte(string(render("header", "test")) + "\n" + string(render(name, data)) + "\n")
}

// Every generated script is valid POSIX shell (checked by the real sh).
func TestLinuxScriptsParse(t *testing.T) {
	for _, source := range []string{"tarball", "package"} {
		p := testPlan()
		p.ContainerdSource = source
		steps := Steps(p)
		names := []string{}
		for _, s := range steps {
			names = append(names, s.Name)
			path := filepath.Join(t.TempDir(), s.Name+".sh")
			require.NoError(t, os.WriteFile(path, s.Script, 0o644))
			out, err := exec.Command("sh", "-n", path).CombinedOutput()
			assert.NoError(t, err, "%s (%s): %s", s.Name, source, out)
		}
		assert.Equal(t, []string{"settle", "prerequisites", "node-basics", "kernel", "containerd", "cni", "kubernetes", "crictl", "joiner", "self-check", "generalize", "cleanup"}, names)
	}
	bad := filepath.Join(t.TempDir(), "bad.sh")
	require.NoError(t, os.WriteFile(bad, []byte("if true; then\n"), 0o644))
	assert.Error(t, exec.Command("sh", "-n", bad).Run(), "the check can fail")
}

// The put helper writes a file once, then reports it unchanged: a second
// run of a script changes nothing.
func TestPutIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "etc", "x.conf")
	put := string(render("put", heredocFile{target, 0o640, "a = 'b'\nKUBENODE_EOF\n"}))
	script := filepath.Join(dir, "s.sh")
	require.NoError(t, os.WriteFile(script, []byte(string(render("header", "test"))+"\nif "+put+"\nthen echo reloaded; fi\n"), 0o644))
	first, err := exec.Command("sh", script).CombinedOutput()
	require.NoError(t, err, string(first))
	assert.Equal(t, "changed: "+target+"\nreloaded\n", string(first))
	data, _ := os.ReadFile(target)
	assert.Equal(t, "a = 'b'\nKUBENODE_EOF\n", string(data), "content with the delimiter survives")
	fi, _ := os.Stat(target)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	second, err := exec.Command("sh", script).CombinedOutput()
	require.NoError(t, err, string(second))
	assert.Equal(t, "ok: "+target+"\n", string(second))
	// Same content, wrong mode (an earlier bake's 0644): written again.
	require.NoError(t, os.Chmod(target, 0o644))
	third, err := exec.Command("sh", script).CombinedOutput()
	require.NoError(t, err, string(third))
	assert.Equal(t, "changed: "+target+"\nreloaded\n", string(third))
	fi, _ = os.Stat(target)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
}

// The bake's last step removes the staging directory (artifacts and
// scripts), with or without generalize, and changes nothing else.
func TestStagingRemovedWithoutGeneralize(t *testing.T) {
	for _, generalize := range []bool{true, false} {
		p := testPlan()
		p.Generalize = generalize
		p.Staging = filepath.Join(t.TempDir(), "kubenode-bake")
		require.NoError(t, os.MkdirAll(p.Staging, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(p.Staging, "06-joiner.sh"), []byte("echo"), 0o600))
		steps := Steps(p)
		last := steps[len(steps)-1]
		require.Equal(t, "cleanup", last.Name, "generalize = %t", generalize)
		script := filepath.Join(p.Staging, "99-"+last.Name+".sh")
		require.NoError(t, os.WriteFile(script, last.Script, 0o600))
		out, err := exec.Command("sh", script).CombinedOutput()
		require.NoError(t, err, string(out))
		assert.NoDirExists(t, p.Staging, "generalize = %t", generalize)
		assert.NotContains(t, string(out), "changed: ", "a second bake still reports 0 changes")
	}
}

// A proxy URL's password may be percent-encoded and hold quotes or
// backslashes: systemd must read back exactly the value given.
func TestProxyDropInEscaping(t *testing.T) {
	p := node.Proxy{HTTP: `http://user:p%40ss%25w0rd@proxy:3128`, HTTPS: `http://u:a"b\c$HOME%h@proxy:3128`, No: "10.0.0.0/8,'quoted'"}
	assert.Equal(t, `[Service]
Environment="HTTP_PROXY=http://user:p%%40ss%%25w0rd@proxy:3128"
Environment="http_proxy=http://user:p%%40ss%%25w0rd@proxy:3128"
Environment="HTTPS_PROXY=http://u:a\"b\\c$HOME%%h@proxy:3128"
Environment="https_proxy=http://u:a\"b\\c$HOME%%h@proxy:3128"
Environment="NO_PROXY=10.0.0.0/8,'quoted'"
Environment="no_proxy=10.0.0.0/8,'quoted'"
`, ProxyDropIn(p))
	assert.Equal(t, `"a\x0ab"`, systemdQuote("a\nb"), "a newline cannot start a new line of the unit")
	assert.Empty(t, ProxyDropIn(node.Proxy{}))

	script := string(containerd(Plan{Proxy: p, Staging: "/var/tmp/kubenode-bake"}))
	assert.Contains(t, script, "put '/etc/systemd/system/containerd.service.d/http-proxy.conf' 0600 ", "the drop-in may hold a password: root only")
}

// systemd itself reads the drop-in back: each variable as given, no
// specifier warnings. Needs systemd-analyze (Debian: systemd).
func TestProxyDropInAsSystemdReadsIt(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (apt-get install systemd)")
	}
	p := node.Proxy{HTTP: `http://user:p%40ss%25w0rd@proxy:3128`, HTTPS: `http://u:a"b\c$HOME%h@proxy:3128`, No: "10.0.0.0/8,'quoted'"}
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "containerd.service.d"), 0o755))
	unit := filepath.Join(dir, "containerd.service")
	require.NoError(t, os.WriteFile(unit, []byte("[Unit]\nDescription=test\n[Service]\nExecStart=/bin/true\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "containerd.service.d", "http-proxy.conf"), []byte(ProxyDropIn(p)), 0o600))
	cmd := exec.Command(analyze, "verify", "--man=no", unit)
	// At debug level verify prints the unit as loaded, its Environment too.
	cmd.Env = append(os.Environ(), "SYSTEMD_UNIT_PATH="+dir+":", "SYSTEMD_LOG_LEVEL=debug")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	var env []string
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Environment: "); ok {
			env = append(env, v)
		}
		assert.NotContains(t, line, "specifier", "systemd-analyze: %s", line)
	}
	assert.Equal(t, proxyEnv(p), env, "systemd-analyze verify:\n%s", out)
}

func TestContainerdConfigMatchesTheKubelet(t *testing.T) {
	v2 := ContainerdConfig(2, "registry.k8s.io/pause:3.10", "systemd", "/opt/cni/bin")
	assert.Contains(t, v2, "version = 2\n")
	assert.Contains(t, v2, `sandbox_image = "registry.k8s.io/pause:3.10"`)
	assert.Contains(t, v2, "SystemdCgroup = true")
	assert.Contains(t, v2, `bin_dir = "/opt/cni/bin"`)
	v3 := ContainerdConfig(3, "registry.k8s.io/pause:3.10", "cgroupfs", "/opt/cni/bin")
	assert.Contains(t, v3, "version = 3\n")
	assert.Contains(t, v3, "[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"registry.k8s.io/pause:3.10\"")
	assert.Contains(t, v3, "SystemdCgroup = false")
	assert.Contains(t, v3, `bin_dirs = ["/opt/cni/bin"]`)
}

func TestShellQuoting(t *testing.T) {
	out, err := exec.Command("sh", "-c", "printf %s "+q(`it's "$HOME" $(id)`)).Output()
	require.NoError(t, err)
	assert.Equal(t, `it's "$HOME" $(id)`, string(out))
	assert.True(t, strings.HasPrefix(string(Steps(testPlan())[0].Script), "#!/bin/sh\n"))
}

// The guest's OS comes from os-release as the shell reads it (quoted or
// not), with /usr/lib/os-release when /etc/os-release is missing.
func TestOSReleaseCommand(t *testing.T) {
	dir := t.TempDir()
	etc, lib := filepath.Join(dir, "etc-os-release"), filepath.Join(dir, "lib-os-release")
	require.NoError(t, os.WriteFile(lib, []byte(`PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
ID=debian
`), 0o644))
	command := strings.NewReplacer("/etc/os-release", etc, "/usr/lib/os-release", lib).Replace(osReleaseCommand)
	out, err := exec.Command("sh", "-c", command).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, baked.GuestOS{ID: "debian", Version: "12", Name: "Debian GNU/Linux 12 (bookworm)"}, parseOSRelease(string(out)))

	require.NoError(t, os.WriteFile(etc, []byte("ID=rocky\nVERSION_ID='9.5'\n"), 0o644))
	out, err = exec.Command("sh", "-c", command).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, baked.GuestOS{ID: "rocky", Version: "9.5"}, parseOSRelease(string(out)))
}

// generalize leaves the build account's lock for the first boot of every
// VM from the image; with the account kept it leaves none and removes an
// earlier bake's.
func TestGeneralizeLocksOrKeepsTheBuildAccount(t *testing.T) {
	p := testPlan()
	p.LockAccount = "kubenode"
	locked := string(generalize(p))
	assert.Contains(t, locked, "put '"+lockScriptPath+"' 0700 ")
	assert.Contains(t, locked, "put '/etc/systemd/system/"+lockUnit+"' 0644 ")
	assert.Contains(t, locked, "systemctl enable -q "+lockUnit)
	assert.Contains(t, locked, "user='kubenode'\n")
	assert.Contains(t, locked, "WantedBy=sysinit.target\n")
	assert.Contains(t, locked, "Before=sysinit.target cloud-init-local.service cloud-init.service ssh.service sshd.service", "locked before anyone logs in and before the VM's own seed")

	p.LockAccount = ""
	kept := string(generalize(p))
	assert.NotContains(t, kept, "put '"+lockScriptPath+"'")
	assert.NotContains(t, kept, "systemctl enable -q "+lockUnit)
	assert.Contains(t, kept, "rm -f /etc/systemd/system/"+lockUnit+" "+lockScriptPath)

	// Only generalize locks.
	p.LockAccount, p.Generalize = "kubenode", false
	for _, s := range Steps(p) {
		assert.NotContains(t, string(s.Script), lockUnit, s.Name)
	}
}

// The lock script, run against a copy of /etc and a home directory with
// usermod, gpasswd and systemctl recorded: the build password and keys
// open nothing afterwards, other accounts' rules stay.
func TestLinuxLockScript(t *testing.T) {
	dir := t.TempDir()
	etc, home, bin := filepath.Join(dir, "etc"), filepath.Join(dir, "home", "kube'node"), filepath.Join(dir, "bin")
	calls := filepath.Join(dir, "calls")
	for _, d := range []string{etc + "/sudoers.d", etc + "/ssh/sshd_config.d", home + "/.ssh", bin} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	files := map[string]string{
		etc + "/sudoers.d/90-kubenode-kube'node":      "kube'node ALL=(ALL) NOPASSWD:ALL\n",
		etc + "/sudoers.d/90-kubenode-other":          "other ALL=(ALL) NOPASSWD:ALL\n",
		etc + "/sudoers.d/90-cloud-init-users":        "# User rules for kube'node\nkube'node ALL=(ALL) NOPASSWD:ALL\n# User rules for debian\ndebian ALL=(ALL) NOPASSWD:ALL\n",
		etc + "/ssh/sshd_config":                      "Include /etc/ssh/sshd_config.d/*.conf\n#PasswordAuthentication yes\nKbdInteractiveAuthentication no\n",
		etc + "/ssh/sshd_config.d/50-cloud-init.conf": "PasswordAuthentication yes\n",
		home + "/.ssh/authorized_keys":                "ssh-ed25519 AAAA build\n",
		home + "/.ssh/authorized_keys2":               "ssh-ed25519 AAAA build\n",
		home + "/.profile":                            "# stays\n",
	}
	for f, content := range files {
		require.NoError(t, os.WriteFile(f, []byte(content), 0o644))
	}
	stubs := map[string]string{
		"usermod":   `echo "usermod $*" >> ` + q(calls),
		"gpasswd":   `echo "gpasswd $*" >> ` + q(calls),
		"systemctl": `echo "systemctl $*" >> ` + q(calls),
		"getent":    `[ "$1 $2" = "passwd kube'node" ] && echo "kube'node:x:1000:1000::` + home + `:/bin/bash"`,
		"id":        `[ "$1 $2" = "-nG kube'node" ] && echo "kube'node adm sudo users"`,
	}
	for name, body := range stubs {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	}
	script := strings.ReplaceAll(LockScript("kube'node"), "/etc/", etc+"/")
	require.NotContains(t, script, " /etc/", "every path was redirected")
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))

	recorded, err := os.ReadFile(calls)
	require.NoError(t, err)
	assert.Equal(t, "usermod -L kube'node\ngpasswd -d kube'node sudo\nsystemctl disable -q "+lockUnit+"\n", string(recorded))
	assert.NoFileExists(t, home+"/.ssh/authorized_keys")
	assert.NoFileExists(t, home+"/.ssh/authorized_keys2")
	assert.FileExists(t, home+"/.profile")
	assert.NoFileExists(t, etc+"/sudoers.d/90-kubenode-kube'node")
	assert.FileExists(t, etc+"/sudoers.d/90-kubenode-other", "another account's rule stays")
	read := func(f string) string { data, err := os.ReadFile(f); require.NoError(t, err); return string(data) }
	assert.Equal(t, "# User rules for kube'node\n# User rules for debian\ndebian ALL=(ALL) NOPASSWD:ALL\n", read(etc+"/sudoers.d/90-cloud-init-users"))
	assert.Equal(t, "PasswordAuthentication no\n", read(etc+"/ssh/sshd_config.d/50-cloud-init.conf"))
	assert.Equal(t, files[etc+"/ssh/sshd_config"], read(etc+"/ssh/sshd_config"), "a comment is not a setting")
}

// The kubernetes step fails, naming both versions and the binary, when a
// local kubelet or kubeadm is not the release kubernetes_version asks for.
func TestLinuxKubeVersionCheck(t *testing.T) {
	fake := func(t *testing.T, kubelet, kubeadm string) string {
		dir := t.TempDir()
		for name, out := range map[string]string{"kubelet": kubelet, "kubeadm": kubeadm} {
			script := "#!/bin/sh\necho " + q(out) + "\n"
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755))
		}
		return dir
	}
	run := func(dir, want string) (string, error) {
		out, err := exec.Command("sh", "-c", string(piece("check-kube-versions", kubeVersionCheck{dir, want}))).CombinedOutput()
		return string(out), err
	}
	dir := fake(t, "Kubernetes v1.32.9", "v1.32.9")
	out, err := run(dir, "v1.32.9")
	require.NoError(t, err, out)
	assert.Equal(t, "ok: kubelet and kubeadm are v1.32.9\n", out)

	out, err = run(dir, "v1.33.13")
	require.Error(t, err)
	assert.Contains(t, out, "kubernetes_version is v1.33.13 but the kubelet at "+dir+"/kubelet reports v1.32.9: "+
		"give the kubelet of v1.33.13 (artifacts.kubelet or artifacts_dir), or set kubernetes_version to the version of the binaries you give")

	dir = fake(t, "Kubernetes v1.33.13", "v1.32.9")
	out, err = run(dir, "v1.33.13")
	require.Error(t, err)
	assert.Contains(t, out, "kubernetes_version is v1.33.13 but the kubeadm at "+dir+"/kubeadm reports v1.32.9: ")

	out, err = run(t.TempDir(), "v1.33.13")
	require.Error(t, err)
	assert.Contains(t, out, "/kubelet reports no version: ", "a missing binary")

	// The kubernetes step runs the check on the installed binaries.
	assert.Contains(t, string(kubernetes(testPlan())), "'/usr/bin/kubelet' --version")
	assert.Contains(t, string(kubernetes(testPlan())), "'/usr/bin/kubeadm' version -o short")
}

// generalize removes the proxy the OS installer wrote into apt's
// configuration, run against a temporary /etc: curtin's and cloud-init's
// drop-ins go, apt.conf loses only its Acquire::http(s)::Proxy lines (and
// goes when nothing else is left); each removal is printed.
func TestGeneralizeRemovesTheInstallerProxy(t *testing.T) {
	const proxy = `"http://user:secret@proxy.example.com:3128/";`
	for name, c := range map[string]struct {
		files   map[string]string // under /etc/apt, before
		want    map[string]string // after; a file not named here is gone
		printed []string
	}{
		"autoinstall": {
			files:   map[string]string{"apt.conf.d/90curtin-aptproxy": "Acquire::http::Proxy " + proxy + "\nAcquire::https::Proxy " + proxy + "\n", "apt.conf.d/50other": "APT::Install-Recommends \"0\";\n"},
			want:    map[string]string{"apt.conf.d/50other": "APT::Install-Recommends \"0\";\n"},
			printed: []string{"changed: /etc/apt/apt.conf.d/90curtin-aptproxy removed (the installer's proxy)"},
		},
		"cloud-init": {
			files:   map[string]string{"apt.conf.d/90cloud-init-aptproxy": "Acquire::http::Proxy " + proxy + "\n"},
			printed: []string{"changed: /etc/apt/apt.conf.d/90cloud-init-aptproxy removed (the installer's proxy)"},
		},
		"preseed, apt.conf with other settings": {
			files:   map[string]string{"apt.conf": "APT::Get::Assume-Yes \"true\";\nAcquire::http::Proxy " + proxy + "\n  acquire::HTTPS::proxy " + proxy + "\nAcquire::http::Proxy::deb.example.com \"DIRECT\";\nAcquire::http::Timeout \"30\";\n"},
			want:    map[string]string{"apt.conf": "APT::Get::Assume-Yes \"true\";\nAcquire::http::Timeout \"30\";\n"},
			printed: []string{"changed: Acquire::http(s)::Proxy removed from /etc/apt/apt.conf (the installer's proxy)"},
		},
		"preseed, apt.conf with the proxy only": {
			files:   map[string]string{"apt.conf": "Acquire::http::Proxy " + proxy + "\n"},
			printed: []string{"changed: Acquire::http(s)::Proxy removed from /etc/apt/apt.conf", "changed: /etc/apt/apt.conf removed (empty)"},
		},
		"no proxy": {
			files: map[string]string{"apt.conf": "Acquire::http::ProxyAutoDetect \"/usr/bin/detect\";\n"},
			want:  map[string]string{"apt.conf": "Acquire::http::ProxyAutoDetect \"/usr/bin/detect\";\n"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			apt := filepath.Join(t.TempDir(), "etc", "apt")
			require.NoError(t, os.MkdirAll(filepath.Join(apt, "apt.conf.d"), 0o755))
			for f, data := range c.files {
				require.NoError(t, os.WriteFile(filepath.Join(apt, f), []byte(data), 0o644))
			}
			script := strings.ReplaceAll(string(piece("remove-installer-proxy", nil)), "/etc/apt/", apt+"/")
			require.NotContains(t, script, " /etc/", "every path was redirected")
			out, err := exec.Command("sh", "-c", script).CombinedOutput()
			require.NoError(t, err, string(out))
			got := map[string]string{}
			require.NoError(t, filepath.WalkDir(apt, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					data, _ := os.ReadFile(p)
					rel, _ := filepath.Rel(apt, p)
					got[rel] = string(data)
				}
				return err
			}))
			want := c.want
			if want == nil {
				want = map[string]string{}
			}
			assert.Equal(t, want, got)
			printed := strings.ReplaceAll(string(out), apt+"/", "/etc/apt/")
			for _, p := range c.printed {
				assert.Contains(t, printed, p)
			}
			if c.printed == nil {
				assert.NotContains(t, printed, "changed: ")
			}
			assert.NotContains(t, printed, "secret", "the credentials are not printed")
		})
	}
	assert.Contains(t, string(generalize(testPlan())), "rm -f "+curtinAptProxy, "generalize does it")
}
