package bake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/golden"
)

// linuxBasicsCases are the Linux scripts of the basics and the self-check:
// tarball containerd with crictl, the bridge CNI and preloaded images; the
// distribution's containerd without crictl, joiner or images.
func linuxBasicsCases() map[string][]byte {
	full := testPlan()
	pkg := testPlan()
	pkg.ContainerdSource, pkg.ContainerdVersion, pkg.CrictlVersion, pkg.CrictlTarball = "package", "", "", ""
	pkg.CNI, pkg.JoinerConfig, pkg.CheckImages, pkg.Proxy = "none", nil, nil, Proxy{}
	return map[string][]byte{
		"linux/node-basics.sh":        linuxNodeBasics(full),
		"linux/crictl.sh":             linuxCrictl(full),
		"linux/self-check.sh":         LinuxSelfCheck(full.selfCheck()),
		"linux/self-check-package.sh": LinuxSelfCheck(pkg.selfCheck()),
		"linux/kubenode-growroot":     []byte(LinuxGrowrootScript),
	}
}

func TestLinuxBasicsGolden(t *testing.T) {
	for name, got := range linuxBasicsCases() {
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
	full := string(LinuxSelfCheck(testPlan().selfCheck()))
	for _, want := range []string{
		"enabled 'kubenode-joiner'", "active containerd", "module br_netfilter", "sysctl_is net.bridge.bridge-nf-call-iptables 1",
		"version_is kubectl 'v1.33.13' kubectl version --client", "crictl info", "'v2.1.4'", "for p in bridge host-local loopback",
		"'registry.k8s.io/pause:3.10' 'docker.io/library/busybox:latest'", "ctr -n k8s.io images ls -q", "cloudinit_grows_root",
		linuxGrowrootUnit,
	} {
		assert.Contains(t, full, want)
	}
	assert.NotContains(t, full, "ctr version")
	p := testPlan()
	p.ContainerdVersion, p.CrictlVersion, p.CNI, p.JoinerConfig, p.CheckImages = "", "", "none", nil, nil
	bare := string(LinuxSelfCheck(p.selfCheck()))
	assert.Contains(t, bare, "ctr version")
	for _, absent := range []string{"crictl info", "crictl --version", "containerd --version", "host-local", "kubenode-joiner", "images ls"} {
		assert.NotContains(t, bare, absent)
	}
}

func TestNormalizeImageRef(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                      "docker.io/library/busybox:latest",
		"busybox:1.36":                 "docker.io/library/busybox:1.36",
		"example/app":                  "docker.io/example/app:latest",
		"registry.k8s.io/pause:3.10":   "registry.k8s.io/pause:3.10",
		"localhost/app":                "localhost/app:latest",
		"mirror.example:5000/a/b":      "mirror.example:5000/a/b:latest",
		"mirror.example:5000/a/b:v2":   "mirror.example:5000/a/b:v2",
		"quay.io/x/y@sha256:" + sha0(): "quay.io/x/y@sha256:" + sha0(),
	} {
		assert.Equal(t, want, normalizeImageRef(in), in)
	}
}

func sha0() string { return strings.Repeat("0", 64) }

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
	require.NoError(t, os.WriteFile(script, LinuxSelfCheck(testPlan().selfCheck()), 0o644))
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

// linuxGuest is a communicator double for a Linux guest on which every
// step succeeds except those in fail (step name -> output), which exit 1.
type linuxGuest struct {
	mu    sync.Mutex
	fail  map[string]string
	steps []string
}

var linuxStepScript = regexp.MustCompile(`sh '/var/tmp/kubenode-bake/\d\d-([a-z-]+)\.sh'$`)

func (g *linuxGuest) Start(_ context.Context, cmd *packersdk.RemoteCmd) error {
	g.mu.Lock()
	out, code := "", 0
	switch m := linuxStepScript.FindStringSubmatch(cmd.Command); {
	case cmd.Command == "id -u":
		out = "0\n"
	case m != nil:
		g.steps = append(g.steps, m[1])
		if o, ok := g.fail[m[1]]; ok {
			out, code = o, 1
		} else {
			out = "ok: " + m[1] + "\n"
		}
	}
	g.mu.Unlock()
	go func() {
		_, _ = io.WriteString(cmd.Stdout, out)
		cmd.SetExited(code)
	}()
	return nil
}

func (g *linuxGuest) Upload(string, io.Reader, *os.FileInfo) error { return nil }
func (g *linuxGuest) UploadDir(string, string, []string) error     { return nil }
func (g *linuxGuest) Download(string, io.Writer) error             { return nil }
func (g *linuxGuest) DownloadDir(string, string, []string) error   { return nil }

// A failing self-check fails the build with every problem it printed,
// and nothing runs after it.
func TestProvisionLinuxSelfCheckFailureListsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"kubelet", "kubeadm", "kubectl"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(f), 0o755))
	}
	var p Provisioner
	require.NoError(t, p.Prepare(map[string]any{
		"guest_os_type": "linux", "containerd_source": "package", "artifacts_dir": dir, "download_cache_dir": t.TempDir(),
		"install_joiner": false, "generalize": false, "install_crictl": false,
	}))
	g := &linuxGuest{fail: map[string]string{stepSelfCheck: "ok: containerd enabled\n" +
		"problem: kubelet is not enabled to start at boot (systemctl is-enabled: disabled)\n" +
		"problem: image docker.io/library/busybox:latest is not in containerd (ctr -n k8s.io images ls)\n" +
		"self-check: 2 problems\n"}}
	ui := newTestUI()
	err := p.Provision(context.Background(), ui, g, nil)
	require.Error(t, err)
	var sc *SelfCheckError
	require.True(t, errors.As(err, &sc), "%v", err)
	assert.Equal(t, []string{
		"kubelet is not enabled to start at boot (systemctl is-enabled: disabled)",
		"image docker.io/library/busybox:latest is not in containerd (ctr -n k8s.io images ls)",
	}, sc.Problems)
	assert.Contains(t, err.Error(), "self-check: the baked guest is not ready to become a node; 2 problems:\n"+
		"  - kubelet is not enabled to start at boot (systemctl is-enabled: disabled)\n  - image docker.io/library/busybox:latest")
	var se *StepError
	require.True(t, errors.As(err, &se), "the step's own failure stays reachable")
	assert.Equal(t, stepSelfCheck, se.Step)
	assert.Equal(t, []string{"settle", "prerequisites", "node-basics", "kernel", "containerd", "cni", "kubernetes", "self-check"}, g.steps, "nothing runs after the self-check fails")
	assert.Contains(t, ui.out.String(), "install_crictl = false: crictl is not installed; the self-check asks containerd with `ctr version`")

	// Another step's failure is not a self-check's.
	g = &linuxGuest{fail: map[string]string{"kernel": "problem: looks like one\n"}}
	err = p.Provision(context.Background(), newTestUI(), g, nil)
	require.Error(t, err)
	assert.False(t, errors.As(err, &sc))
}

// crictl is an artifact like the others: by default the table's release
// for the Kubernetes minor, from its official URL; install_crictl = false
// leaves it out; crictl_version picks another release.
func TestCrictlArtifactAndVersion(t *testing.T) {
	for _, r := range kubernetesMinors {
		k, err := LookupKubernetes(r.Minor + ".0")
		require.NoError(t, err)
		cr, err := LookupCrictl("", k)
		require.NoError(t, err, r.Minor)
		assert.True(t, strings.HasPrefix(cr.Version, r.Minor+"."), "Kubernetes %s installs crictl %s of its own minor", r.Minor, cr.Version)
		base := "https://github.com/kubernetes-sigs/cri-tools/releases/download/" + cr.Version + "/crictl-" + cr.Version
		assert.Equal(t, artifactFor(ArtifactCrictl, "crictl-"+cr.Version+"-linux-amd64.tar.gz", base+"-linux-amd64.tar.gz", ".sha256"), cr.LinuxArtifact())
		assert.Equal(t, artifactFor(ArtifactCrictl, "crictl-"+cr.Version+"-windows-amd64.tar.gz", base+"-windows-amd64.tar.gz", ".sha256"), cr.WindowsArtifact())
	}
	assert.Len(t, crictlRows, len(kubernetesMinors), "a crictl row for every Kubernetes minor")

	prepare := func(extra map[string]any) (Config, error) {
		var c Config
		raw := map[string]any{"guest_os_type": "linux", "download_cache_dir": t.TempDir()}
		for k, v := range extra {
			raw[k] = v
		}
		return c, c.Prepare(raw)
	}
	c, err := prepare(nil)
	require.NoError(t, err)
	require.True(t, *c.InstallCrictl, "default true")
	plan, arts, err := c.linuxPlan()
	require.NoError(t, err)
	k, _ := LookupKubernetes("")
	want, _ := LookupCrictl("", k)
	assert.Equal(t, want.Version, plan.CrictlVersion)
	assert.Contains(t, arts, want.LinuxArtifact())
	assert.Equal(t, "v"+plan.ContainerdVersion, "v"+defaultVersions.Containerd, "tarball: the self-check compares containerd's version")

	other := crictlRows[0].Minor + ".7"
	c, err = prepare(map[string]any{"crictl_version": other})
	require.NoError(t, err)
	plan, _, err = c.linuxPlan()
	require.NoError(t, err)
	assert.Equal(t, other, plan.CrictlVersion)

	c, err = prepare(map[string]any{"install_crictl": false})
	require.NoError(t, err)
	plan, arts, err = c.linuxPlan()
	require.NoError(t, err)
	assert.Empty(t, plan.CrictlVersion)
	for _, a := range arts {
		assert.NotEqual(t, ArtifactCrictl, a.Name)
	}
	for _, s := range LinuxSteps(plan) {
		assert.NotEqual(t, stepCrictl, s.Name)
	}

	_, err = prepare(map[string]any{"crictl_version": "v0.1.0"})
	assert.ErrorContains(t, err, "crictl_version: v0.1.0 is a release of v0.1, which is not in kubenode-bake's version table")
	_, err = prepare(map[string]any{"artifacts": map[string]string{"crictl": filepath.Join(t.TempDir(), "missing")}})
	assert.ErrorContains(t, err, "artifacts.crictl: ")
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
	script := strings.ReplaceAll(string(linuxCrictl(p)), linuxBinDir+"/crictl", bin+"/crictl")
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

// On Windows too, a failing self-check fails the bake with its list, before
// cleanup and sysprep.
func TestRunWindowsSelfCheckFailureListsEveryProblem(t *testing.T) {
	g := newFakeWindows()
	g.exit[stepSelfCheck] = 1
	g.output[stepSelfCheck] = "ok: service containerd starts Automatic\n" +
		"problem: service W32Time starts Manual, want Automatic\n" +
		"problem: the Containers feature is not installed\n" +
		"self-check: 2 problems\n"
	p := basePlan(t)
	err := RunWindows(context.Background(), newTestUI(), g, p, realUploads(t, p))
	var sc *SelfCheckError
	require.True(t, errors.As(err, &sc), "%v", err)
	assert.Equal(t, []string{"service W32Time starts Manual, want Automatic", "the Containers feature is not installed"}, sc.Problems)
	steps := g.steps()
	assert.Equal(t, stepSelfCheck, steps[len(steps)-1], "neither cleanup nor sysprep runs after it")
}
