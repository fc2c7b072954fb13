package bake

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/hashicorp/packer-plugin-sdk/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
)

// fakeWindows is a communicator double for a Windows guest. It records
// uploads and commands, checks artifacts the way the verify script does
// (it reads the uploaded script), answers the boot check, and simulates the
// restart: after the shutdown command it first still answers with the old
// boot time, then refuses connections, then reports servicing, then the
// new boot.
type fakeWindows struct {
	mu       sync.Mutex
	files    map[string][]byte
	log      []string // "upload <path>", "mkdir", "<step>", "restart", "boot-check"
	commands []string

	exit         map[string]int    // step -> exit code
	output       map[string]string // step -> output
	needsRestart bool
	// updates is each windows-update round's output; after them a round
	// finds nothing.
	updates []string
	corrupt string // upload path whose bytes arrive damaged

	boot      int
	lingering int // boot checks after the shutdown that still see the old boot
	downFor   int // Start calls refused after that
	servicing int // boot checks after that which report servicing
	neverBack bool
	refused   int

	build string // what the guest reports as its Windows build
}

func newFakeWindows() *fakeWindows {
	return &fakeWindows{files: map[string][]byte{}, exit: map[string]int{}, output: map[string]string{}}
}

var (
	fileArg   = regexp.MustCompile(`-File "([^"]+)"$`)
	encodedRE = regexp.MustCompile(`-EncodedCommand ([A-Za-z0-9+/=]+)$`)
	artifact  = regexp.MustCompile(`Test-KubenodeArtifact -Name '([^']+)' -Path '([^']+)' -Want '([0-9a-f]+)'`)
)

// decodeEncoded undoes -EncodedCommand: base64 of UTF-16LE.
func decodeEncoded(b64 string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw)%2 != 0 {
		return "", fmt.Errorf("not base64 of UTF-16LE: %v", err)
	}
	u := make([]uint16, len(raw)/2)
	for i := range u {
		u[i] = uint16(raw[2*i]) | uint16(raw[2*i+1])<<8
	}
	return string(utf16.Decode(u)), nil
}

func (g *fakeWindows) Start(_ context.Context, cmd *packersdk.RemoteCmd) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.commands = append(g.commands, cmd.Command)
	if g.boot > 0 && g.lingering == 0 && (g.neverBack || g.downFor > 0) {
		g.downFor--
		g.refused++
		return errors.New("dial tcp 192.0.2.10:5985: connect: connection refused")
	}
	out, code := g.handle(cmd.Command)
	go func() {
		if cmd.Stdout != nil {
			_, _ = io.WriteString(cmd.Stdout, out)
		}
		cmd.SetExited(code)
	}()
	return nil
}

func (g *fakeWindows) handle(command string) (string, int) {
	switch {
	case strings.HasPrefix(command, "shutdown /r /t 5 "):
		g.log = append(g.log, "restart")
		g.boot++
		return "", 0
	case encodedRE.MatchString(command):
		script, err := decodeEncoded(encodedRE.FindStringSubmatch(command)[1])
		switch {
		case err != nil:
			return "Cannot process the command because the value specified with -EncodedCommand is not properly encoded", 1
		case strings.Contains(script, "kubenode-boot"):
			g.log = append(g.log, "boot-check")
			boot, servicing := g.boot, false
			if g.boot > 0 && g.lingering > 0 {
				g.lingering--
				boot--
			} else if g.boot > 0 && g.servicing > 0 {
				g.servicing--
				servicing = true
			}
			return fmt.Sprintf("kubenode-boot: 2026-11-22T10:%02d:00.0000000Z servicing=%t\r\n", boot, servicing), 0
		case strings.HasPrefix(script, "New-Item -ItemType Directory"):
			g.log = append(g.log, "mkdir")
			return "", 0
		case strings.Contains(script, "Win32_OperatingSystem).BuildNumber"):
			return g.build + "\r\n", 0
		case strings.Contains(script, "'kubenode-os: '"):
			return "kubenode-os: " + g.build + " Windows Server 2022 Datacenter\r\n", 0
		case strings.Contains(script, "kubenode-joiner.exe' version"):
			return "joiner v0.9.1\r\n", 0
		}
		return "unknown encoded command: " + script, 1
	case fileArg.MatchString(command):
		remote := fileArg.FindStringSubmatch(command)[1]
		script, ok := g.files[uploadPath(remote)]
		if !ok {
			return "The argument '" + remote + "' to the -File parameter does not exist.", 1
		}
		step := stepName(strings.TrimSuffix(path.Base(uploadPath(remote)), ".ps1"))
		g.log = append(g.log, step)
		if step == "verify-artifacts" {
			return g.verify(string(script))
		}
		if step == stepWindowsUpdate {
			round := 0
			for _, e := range g.log {
				if e == step {
					round++
				}
			}
			if round <= len(g.updates) {
				return g.updates[round-1], g.exit[step]
			}
			return "ok: no update to install\r\nok: no restart needed\r\n", g.exit[step]
		}
		out := "changed: did " + step + "\r\n" + g.output[step]
		if step == stepContainersFeature && g.needsRestart && g.boot == 0 {
			out += windowsRestartMarker + "\r\n"
		}
		return out, g.exit[step]
	}
	return "'" + command + "' is not recognized as an internal or external command", 1
}

// verify does what the verify script does, from its own lines.
func (g *fakeWindows) verify(script string) (string, int) {
	var out strings.Builder
	code := 0
	for _, m := range artifact.FindAllStringSubmatch(script, -1) {
		name, p, want := m[1], m[2], m[3]
		data, ok := g.files[uploadPath(p)]
		if !ok {
			fmt.Fprintf(&out, "missing: artifact %s: %s is not on the guest\r\n", name, p)
			code = 1
			continue
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != want {
			fmt.Fprintf(&out, "mismatch: artifact %s: %s has sha256 %s, want %s\r\n", name, p, got, want)
			code = 1
			continue
		}
		fmt.Fprintf(&out, "ok: artifact %s\r\n", name)
	}
	return out.String(), code
}

func (g *fakeWindows) Upload(p string, r io.Reader, _ *os.FileInfo) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if strings.Contains(p, `\`) {
		return fmt.Errorf("upload path %q: the SSH communicator needs forward slashes", p)
	}
	if p == g.corrupt {
		data = append(data, 0)
	}
	g.files[p] = data
	g.log = append(g.log, "upload "+p)
	return nil
}

func (g *fakeWindows) UploadDir(string, string, []string) error { return errors.New("not used") }
func (g *fakeWindows) Download(string, io.Writer) error         { return errors.New("not used") }
func (g *fakeWindows) DownloadDir(string, string, []string) error {
	return errors.New("not used")
}

// steps is the log without uploads and boot checks.
// snapshot returns the recorded commands, log and refusals under the lock:
// a Start the flow gave up waiting for may still be running.
func (g *fakeWindows) snapshot() (commands, log []string, refused int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.commands), slices.Clone(g.log), g.refused
}

func (g *fakeWindows) steps() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, e := range g.log {
		if !strings.HasPrefix(e, "upload ") && e != "boot-check" {
			out = append(out, e)
		}
	}
	return out
}

type testUI struct {
	packersdk.Ui
	out, err *bytes.Buffer
}

func newTestUI() testUI {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return testUI{Ui: &packersdk.BasicUi{Reader: &bytes.Buffer{}, Writer: out, ErrorWriter: errOut, PB: &packersdk.NoopProgressTracker{}}, out: out, err: errOut}
}

// realUploads writes each artifact to a local file and uploads it with its
// real sha256.
func realUploads(t *testing.T, p WindowsPlan) []Upload {
	dir := t.TempDir()
	ups := testUploads(p)
	for i := range ups {
		data := []byte("contents of " + ups[i].Name)
		ups[i].Local = filepath.Join(dir, path.Base(uploadPath(ups[i].Remote)))
		require.NoError(t, os.WriteFile(ups[i].Local, data, 0o644))
		sum := sha256.Sum256(data)
		ups[i].SHA256 = hex.EncodeToString(sum[:])
	}
	return ups
}

// fastRestart shrinks the restart wait for a test.
func fastRestart(t *testing.T) {
	backoff, attempt := windowsRestartBackoff, windowsRestartAttempt
	windowsRestartBackoff = retry.Backoff{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Multiplier: 2}
	windowsRestartAttempt = time.Second
	t.Cleanup(func() { windowsRestartBackoff, windowsRestartAttempt = backoff, attempt })
}

func TestRunWindowsOrderAndRestart(t *testing.T) {
	fastRestart(t)
	g := newFakeWindows()
	g.needsRestart, g.lingering, g.downFor, g.servicing = true, 2, 3, 2
	ui := newTestUI()
	p := basePlan(t)
	ups := realUploads(t, p)
	require.NoError(t, RunWindows(context.Background(), ui, g, p, ups))

	assert.Equal(t, []string{"mkdir", "verify-artifacts", "containers-feature", "restart",
		"registry", "time-sync", "containerd", "cni", "kubelet", "crictl", "defender", "joiner", "permissions", "self-check", "cleanup", "sysprep"}, g.steps())
	// Every artifact is on the guest before the check, the check before any install.
	_, log, _ := g.snapshot()
	verify := slices.Index(log, "verify-artifacts")
	for _, u := range ups {
		i := slices.Index(log, "upload "+uploadPath(u.Remote))
		require.GreaterOrEqual(t, i, 0, "%s uploaded", u.Name)
		assert.Less(t, i, verify)
	}
	// Each step ran the script rendered for it, uploaded just before.
	steps, err := WindowsSteps(p)
	require.NoError(t, err)
	for i, s := range steps {
		remote := fmt.Sprintf("C:/Windows/Temp/kubenode/%02d-%s.ps1", i+1, s.Name)
		if s.Name == stepSysprep {
			remote = uploadPath(windowsSysprepScript)
		}
		assert.Equal(t, s.Script, g.files[remote], remote)
		assert.Less(t, slices.Index(g.log, "upload "+remote), slices.Index(g.log, s.Name))
	}
	// The wait saw the old boot, refused connections and servicing, then the new boot.
	assert.Equal(t, 3, g.refused)
	out := ui.out.String()
	for _, want := range []string{
		"still waiting: Windows has not restarted yet",
		"still waiting: no answer yet: dial tcp 192.0.2.10:5985: connect: connection refused",
		"still waiting: Windows is still configuring the features it installed",
		"Windows is back, booted at 2026-11-22T10:01:00.0000000Z",
		"kubenode-bake [registry]",
		"changed: did cleanup",
		"Windows baked, 12 changes; sysprep generalizes it and powers it off",
		"changed: did sysprep",
	} {
		assert.Contains(t, out, want)
	}
	assert.Empty(t, ui.err.String())
}

func TestRunWindowsWithoutRestart(t *testing.T) {
	g := newFakeWindows()
	p := basePlan(t)
	p.DefenderExclusions, p.InstallJoiner, p.Generalize = false, false, false
	ui := newTestUI()
	require.NoError(t, RunWindows(context.Background(), ui, g, p, realUploads(t, p)))
	assert.Equal(t, []string{"mkdir", "verify-artifacts", "containers-feature", "registry", "time-sync", "containerd", "cni", "kubelet", "crictl", "permissions", "self-check", "cleanup"}, g.steps())
	commands, log, _ := g.snapshot()
	for _, c := range commands {
		assert.NotContains(t, c, "shutdown")
	}
	assert.NotContains(t, log, "boot-check")
}

func TestRunWindowsFailedStepNamesItWithExitCodeAndOutputTail(t *testing.T) {
	g := newFakeWindows()
	var lines []string
	for i := 1; i <= 40; i++ {
		lines = append(lines, fmt.Sprintf("containerd line %d", i))
	}
	g.output["containerd"] = strings.Join(lines, "\r\n") + "\r\n"
	g.exit["containerd"] = 3
	ui := newTestUI()
	p := basePlan(t)
	err := RunWindows(context.Background(), ui, g, p, realUploads(t, p))
	require.Error(t, err)
	var se *StepError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "containerd", se.Step)
	assert.Equal(t, 3, se.ExitCode)
	assert.Equal(t, `powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "C:\Windows\Temp\kubenode\04-containerd.ps1"`, se.Command)
	assert.Contains(t, err.Error(), "step containerd: `powershell.exe")
	assert.Contains(t, err.Error(), "exited with code 3")
	assert.Contains(t, se.Tail, "containerd line 40")
	assert.Contains(t, se.Tail, "containerd line 16")
	assert.NotContains(t, se.Tail, "containerd line 15", "only the last 25 lines")
	assert.Contains(t, ui.err.String(), "step containerd:", "the failure is shown in the UI")
	assert.Equal(t, []string{"mkdir", "verify-artifacts", "containers-feature", "registry", "time-sync", "containerd"}, g.steps(), "nothing runs after a failed step")
}

func TestRunWindowsChecksumMismatchStopsBeforeInstalling(t *testing.T) {
	g := newFakeWindows()
	p := basePlan(t)
	ups := realUploads(t, p)
	var ctr Upload
	for _, u := range ups {
		if u.Name == ArtifactContainerd {
			ctr = u
		}
	}
	g.corrupt = uploadPath(ctr.Remote)
	ui := newTestUI()
	err := RunWindows(context.Background(), ui, g, p, ups)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nothing was installed")
	assert.Contains(t, err.Error(), "mismatch: artifact containerd: "+ctr.Remote+" has sha256 ")
	assert.Contains(t, err.Error(), "want "+ctr.SHA256)
	assert.NotContains(t, err.Error(), "artifact kubelet", "good artifacts are not blamed")
	assert.Equal(t, []string{"mkdir", "verify-artifacts"}, g.steps())
}

func TestRunWindowsRestartTimeout(t *testing.T) {
	fastRestart(t)
	g := newFakeWindows()
	g.needsRestart, g.neverBack = true, true
	p := basePlan(t)
	p.RestartTimeout = 50 * time.Millisecond
	ui := newTestUI()
	began := time.Now()
	err := RunWindows(context.Background(), ui, g, p, realUploads(t, p))
	require.Error(t, err)
	assert.Less(t, time.Since(began), 5*time.Second)
	assert.Contains(t, err.Error(), "restart: Windows did not come back within restart_timeout (50ms) after the restart for the Containers feature")
	assert.Contains(t, err.Error(), "last check: no answer yet: ")
	assert.Contains(t, err.Error(), "longer restart_timeout")
	assert.Contains(t, ui.err.String(), "did not come back")
	assert.Equal(t, []string{"mkdir", "verify-artifacts", "containers-feature", "restart"}, g.steps())
	_, _, refused := g.snapshot()
	assert.Positive(t, refused)
}

func TestRunWindowsRefusesABadPlanBeforeTouchingTheGuest(t *testing.T) {
	g := newFakeWindows()
	p := basePlan(t)
	p.HyperV = "sometimes"
	err := RunWindows(context.Background(), newTestUI(), g, p, realUploads(t, p))
	require.ErrorContains(t, err, `hyperv: "sometimes" is not auto, on or off`)
	commands, _, _ := g.snapshot()
	assert.Empty(t, commands)
	assert.Empty(t, g.files)
}

func TestPowershellEncodedRoundTripsAndFitsTheCommandLine(t *testing.T) {
	cmd := powershellEncoded(windowsBootCheck)
	m := encodedRE.FindStringSubmatch(cmd)
	require.NotNil(t, m)
	script, err := decodeEncoded(m[1])
	require.NoError(t, err)
	assert.Equal(t, windowsBootCheck, script)
	assert.Less(t, len(cmd), 8191, "cmd.exe's command-line limit")
}

func TestWindowsPlanFromConfig(t *testing.T) {
	c := Config{HyperV: "auto", CNI: "none", ContainerdSource: "tarball"}
	win, err := LookupWindows("")
	require.NoError(t, err)
	plan, arts, err := c.windowsPlan(win)
	require.NoError(t, err)
	assert.Equal(t, WindowsPauseImage(plan.Kubernetes, win), plan.PauseImage)
	var names []string
	for _, a := range arts {
		names = append(names, a.Name)
	}
	assert.Equal(t, []string{ArtifactKubelet, ArtifactKubeadm, ArtifactKubectl, ArtifactKubeLogRunner, ArtifactContainerd, ArtifactCNIPlugins, ArtifactJoiner, ArtifactCrictl}, names)
	assert.Equal(t, arts[4].FileName, plan.Files.ContainerdTarball)

	c.CNI, c.ContainerdSource = "bridge", "tarball"
	_, _, err = c.windowsPlan(win)
	assert.ErrorContains(t, err, `cni: "bridge" is not available on Windows`)
	c.CNI, c.ContainerdSource = "none", "package"
	_, _, err = c.windowsPlan(win)
	assert.ErrorContains(t, err, `containerd_source: "package" is Linux-only`)
	c.ContainerdSource, c.KubernetesVersion = "tarball", "v0.0.0"
	_, _, err = c.windowsPlan(win)
	assert.ErrorContains(t, err, `kubernetes_version: v0.0.0 is a release of v0.0, which is not in kubenode-bake's version table`)
}

// provisionWindows: the guest's build picks the Windows row, artifacts come
// from artifacts_dir, and what was baked reaches kubenode-export.
func TestProvisionWindowsFromArtifactsDir(t *testing.T) {
	win, err := LookupWindows("")
	require.NoError(t, err)
	dir := t.TempDir()
	var p Provisioner
	require.NoError(t, p.Prepare(map[string]any{
		"guest_os_type": "windows", "artifacts_dir": dir, "download_cache_dir": t.TempDir(),
		"packer_build_name": "win", "node_labels": map[string]string{"example.com/pool": "win"},
	}))
	plan, arts, err := p.config.windowsPlan(win)
	require.NoError(t, err)
	for _, a := range arts {
		require.NoError(t, os.WriteFile(filepath.Join(dir, a.FileName), []byte("local "+a.Name), 0o644))
	}
	t.Setenv("PACKER_RUN_UUID", "test-"+t.Name())
	g := newFakeWindows()
	g.build = fmt.Sprint(win.Build)
	require.NoError(t, p.provisionWindows(context.Background(), newTestUI(), g))
	assert.Equal(t, []string{"mkdir", "verify-artifacts", "containers-feature", "registry", "time-sync", "containerd", "cni", "kubelet", "crictl", "defender", "joiner", "permissions", "self-check", "cleanup", "sysprep"}, g.steps())
	rec, err := baked.Take("win")
	require.NoError(t, err)
	require.NotNil(t, rec)
	facts := rec.Facts
	assert.Equal(t, baked.GuestOS{ID: "windows", Version: win.Version, Name: "Windows Server 2022 Datacenter", Build: fmt.Sprint(win.Build)}, rec.OS, "what the guest reported")
	assert.Equal(t, plan.Kubernetes.Version, facts.Kubernetes)
	assert.Equal(t, plan.Containerd.Version, facts.Containerd)
	assert.Equal(t, plan.PauseImage, facts.PauseImage)
	assert.Equal(t, "v0.9.1", facts.Joiner)
	sum := sha256.Sum256([]byte("local " + ArtifactKubelet))
	assert.Equal(t, hex.EncodeToString(sum[:]), facts.Checksums[ArtifactKubelet])

	g = newFakeWindows()
	g.build = "9200"
	err = p.provisionWindows(context.Background(), newTestUI(), g)
	require.ErrorContains(t, err, "windows_version: the guest runs Windows build 9200, which is not in kubenode-bake's version table")
	assert.Empty(t, g.files, "nothing is uploaded to an unknown release")
}
