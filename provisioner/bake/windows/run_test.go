// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/hashicorp/packer-plugin-sdk/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/deliver"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

// realUploads writes each artifact to a local file and uploads it with its
// real sha256.
func realUploads(t *testing.T, p Plan) []Upload {
	dir := t.TempDir()
	ups := testUploads(p)
	for i := range ups {
		data := []byte("contents of " + ups[i].Name)
		ups[i].Local = filepath.Join(dir, path.Base(remote.UploadPath(ups[i].Remote)))
		require.NoError(t, os.WriteFile(ups[i].Local, data, 0o644))
		sum := sha256.Sum256(data)
		ups[i].SHA256 = hex.EncodeToString(sum[:])
	}
	return ups
}

// fastRestart shrinks the restart wait for a test.
func fastRestart(t *testing.T) {
	backoff, attempt, settle := restartBackoff, restartAttempt, settleBackoff
	restartBackoff = retry.Backoff{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Multiplier: 2}
	settleBackoff = retry.Backoff{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Multiplier: 2}
	restartAttempt = time.Second
	t.Cleanup(func() { restartBackoff, restartAttempt, settleBackoff = backoff, attempt, settle })
}

// stepsWithRestart is the whole flow of basePlan on a guest that restarts
// for the Containers feature.
var stepsWithRestart = []string{"mkdir", "verify-artifacts", "automatic-updates", "containers-feature", "restart",
	"registry", "time-sync", "containerd", "cni", "kubelet", "crictl", "defender", "joiner", "permissions", "self-check", "cleanup", "mkdir", "sysprep"}

// runWithRestart runs basePlan on g, which restarts for the Containers feature.
func runWithRestart(t *testing.T, g *guesttest.Windows) (guesttest.UI, Plan, []Upload) {
	t.Helper()
	g.NeedsRestart = true
	ui := guesttest.NewUI()
	p := basePlan(t)
	ups := realUploads(t, p)
	require.NoError(t, runErr(g, ui, p, ups))
	assert.Equal(t, stepsWithRestart, g.Steps())
	return ui, p, ups
}

func TestRunWindowsOrderAndRestart(t *testing.T) {
	fastRestart(t)
	g := guesttest.NewWindows()
	g.Lingering, g.DownFor, g.Servicing = 2, 3, 2
	ui, p, ups := runWithRestart(t, g)
	// Every artifact is on the guest before the check, the check before any install.
	_, log, _ := g.Snapshot()
	verify := slices.Index(log, "verify-artifacts")
	for _, u := range ups {
		i := slices.Index(log, "upload "+remote.UploadPath(u.Remote))
		require.GreaterOrEqual(t, i, 0, "%s uploaded", u.Name)
		assert.Less(t, i, verify)
	}
	// Each step ran the script rendered for it, uploaded just before.
	steps, err := Steps(p)
	require.NoError(t, err)
	for i, s := range steps {
		guestPath := fmt.Sprintf("C:/Windows/Temp/kubenode/%02d-%s.ps1", i+1, s.Name)
		if s.Name == stepSysprep {
			guestPath = remote.UploadPath(sysprepScript)
		}
		assert.Equal(t, s.Script, g.Files[guestPath], guestPath)
		assert.Less(t, slices.Index(g.Log, "upload "+guestPath), slices.Index(g.Log, s.Name))
	}
	// The wait saw the old boot, refused connections and servicing, then the new boot.
	assert.Equal(t, 3, g.Refused)
	out := ui.Out.String()
	for _, want := range []string{
		"still waiting: Windows has not restarted yet",
		"still waiting: no answer yet: dial tcp 192.0.2.10:5985: connect: connection refused",
		"still waiting: Windows is still configuring the features it installed",
		"Windows is back, booted at 2026-11-22T10:01:00.0000000Z",
		"kubenode-bake [registry]",
		"changed: did cleanup",
		// The steps, containerd's key, the joiner's folder and the 9 folders of the permissions step.
		"Windows baked, 24 changes; sysprep generalizes it and powers it off",
		"changed: did sysprep",
	} {
		assert.Contains(t, out, want)
	}
	assert.Empty(t, ui.Err.String())
}

func TestRunWindowsWithoutRestart(t *testing.T) {
	g := guesttest.NewWindows()
	p := basePlan(t)
	p.DefenderExclusions, p.InstallJoiner, p.Generalize = false, false, false
	ui := guesttest.NewUI()
	require.NoError(t, runErr(g, ui, p, realUploads(t, p)))
	assert.Equal(t, []string{"mkdir", "verify-artifacts", "automatic-updates", "containers-feature", "registry", "time-sync", "containerd", "cni", "kubelet", "crictl", "permissions", "self-check", "cleanup"}, g.Steps())
	commands, log, _ := g.Snapshot()
	for _, c := range commands {
		assert.NotContains(t, c, "shutdown")
	}
	assert.NotContains(t, log, "boot-check")
}

func TestRunWindowsFailedStepNamesItWithExitCodeAndOutputTail(t *testing.T) {
	g := guesttest.NewWindows()
	var lines []string
	for i := 1; i <= 40; i++ {
		lines = append(lines, fmt.Sprintf("containerd line %d", i))
	}
	g.Output["containerd"] = strings.Join(lines, "\r\n") + "\r\n"
	g.Exit["containerd"] = 3
	ui := guesttest.NewUI()
	p := basePlan(t)
	err := runErr(g, ui, p, realUploads(t, p))
	require.Error(t, err)
	var se *remote.StepError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "containerd", se.Step)
	assert.Equal(t, 3, se.ExitCode)
	assert.Equal(t, `powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "C:\Windows\Temp\kubenode\05-containerd.ps1"`, se.Command)
	assert.Contains(t, err.Error(), "step containerd: `powershell.exe")
	assert.Contains(t, err.Error(), "exited with code 3")
	assert.Contains(t, se.Tail, "containerd line 40")
	assert.Contains(t, se.Tail, "containerd line 16")
	assert.NotContains(t, se.Tail, "containerd line 15", "only the last 25 lines")
	assert.Contains(t, ui.Err.String(), "step containerd:", "the failure is shown in the UI")
	assert.Equal(t, []string{"mkdir", "verify-artifacts", "automatic-updates", "containers-feature", "registry", "time-sync", "containerd"}, g.Steps(), "nothing runs after a failed step")
}

func TestRunWindowsChecksumMismatchStopsBeforeInstalling(t *testing.T) {
	g := guesttest.NewWindows()
	p := basePlan(t)
	ups := realUploads(t, p)
	var ctr Upload
	for _, u := range ups {
		if u.Name == versions.ArtifactContainerd {
			ctr = u
		}
	}
	g.Corrupt = remote.UploadPath(ctr.Remote)
	ui := guesttest.NewUI()
	err := runErr(g, ui, p, ups)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nothing was installed")
	assert.Contains(t, err.Error(), "mismatch: artifact containerd: "+ctr.Remote+" has sha256 ")
	assert.Contains(t, err.Error(), "want "+ctr.SHA256)
	assert.NotContains(t, err.Error(), "artifact kubelet", "good artifacts are not blamed")
	assert.Equal(t, []string{"mkdir", "verify-artifacts"}, g.Steps())
}

// bakeOverHTTP bakes with the artifacts served by a real artifact server:
// the guest double downloads them over HTTP, as the fetch script does.
func bakeOverHTTP(t *testing.T, g *guesttest.Windows, tamper string) ([]versions.Artifact, *deliver.Server, error) {
	t.Helper()
	p := basePlan(t)
	arts := testArtifacts(t, p)
	srv, err := deliver.Start("127.0.0.1", 0, "127.0.0.1", arts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	for _, a := range arts {
		if a.Name == tamper {
			require.NoError(t, os.WriteFile(a.Local, []byte("not what was checked"), 0o644))
		}
	}
	_, err = bakePlan(context.Background(), &remote.Remote{Comm: g, UI: guesttest.NewUI()}, p, arts, srv)
	return arts, srv, err
}

func TestBakeWindowsDownloadsTheArtifactsOverHTTP(t *testing.T) {
	g := guesttest.NewWindows()
	arts, srv, err := bakeOverHTTP(t, g, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"mkdir", "fetch-artifacts", "verify-artifacts"}, g.Steps()[:3])
	requests, _ := srv.Served()
	assert.Equal(t, int64(len(arts)), requests, "each artifact downloaded once")
	_, logged, _ := g.Snapshot()
	// The clones' first-boot files travel as uploads too, like the scripts.
	firstBoot := map[string]bool{}
	for _, f := range firstBootPaths(basePlan(t)) {
		firstBoot["upload "+remote.UploadPath(f)] = true
	}
	for _, entry := range logged {
		assert.False(t, strings.HasPrefix(entry, "upload ") && !strings.HasSuffix(entry, ".ps1") && !firstBoot[entry], "only scripts and first-boot files go through WinRM: %s", entry)
	}
	_, err = http.Get(srv.URL(arts[0]))
	assert.Error(t, err, "the server is closed once the guest has the artifacts")
}

// The server hands out a file that is not the one checked on this machine:
// the guest's check names it and nothing is installed.
func TestBakeWindowsTamperedDownloadStopsBeforeInstalling(t *testing.T) {
	g := guesttest.NewWindows()
	_, _, err := bakeOverHTTP(t, g, versions.ArtifactKubelet)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nothing was installed")
	assert.Contains(t, err.Error(), `mismatch: artifact kubelet: C:\Windows\Temp\kubenode\kubelet.exe has sha256 `)
	assert.NotContains(t, err.Error(), "artifact kubeadm", "good artifacts are not blamed")
	assert.Equal(t, []string{"mkdir", "fetch-artifacts", "verify-artifacts"}, g.Steps())
}

func TestRunWindowsFailedDownloadNamesTheArtifact(t *testing.T) {
	g := guesttest.NewWindows()
	p := basePlan(t)
	ups := fetchUploads(realUploads(t, p))
	srv, err := deliver.Start("127.0.0.1", 0, "127.0.0.1", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	for i := range ups {
		ups[i].URL = srv.Origin() + "/0123/" + path.Base(remote.UploadPath(ups[i].Remote))
	}
	err = runErr(g, guesttest.NewUI(), p, ups)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the guest could not download the artifacts, so nothing was installed")
	assert.Contains(t, err.Error(), "download failed: artifact kubelet from http://192.168.122.1:41234/.../kubelet.exe: The remote server returned an error: (404) Not Found")
	assert.Equal(t, []string{"mkdir", "fetch-artifacts"}, g.Steps())
}

// HTTP chosen by default (Fallback): a guest that cannot reach the server
// (here the URLs name 127.0.0.2, where nothing listens on the server's
// port) gets the artifacts through the communicator, with a warning.
func TestBakeWindowsFallsBackToTheCommunicatorWhenTheServerIsUnreachable(t *testing.T) {
	g := guesttest.NewWindows()
	p := basePlan(t)
	arts := testArtifacts(t, p)
	srv, err := deliver.Start("127.0.0.1", 0, "127.0.0.2", arts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	srv.Fallback = true
	ui := guesttest.NewUI()
	_, err = bakePlan(context.Background(), &remote.Remote{Comm: g, UI: ui}, p, arts, srv)
	require.NoError(t, err)
	assert.Contains(t, ui.Err.String(), fmt.Sprintf("kubenode-bake: warning: the guest could not download %d artifacts", len(arts)))
	assert.Equal(t, []string{"mkdir", "fetch-artifacts", "verify-artifacts"}, g.Steps()[:3])
	_, logged, _ := g.Snapshot()
	uploaded := 0
	for _, entry := range logged {
		if strings.HasPrefix(entry, "upload ") && !strings.HasSuffix(entry, ".ps1") && strings.Contains(entry, "kubenode/") {
			uploaded++
		}
	}
	assert.Equal(t, len(arts), uploaded, "every artifact uploaded once the download failed")

	// Asked for explicitly, the same failure stops the bake.
	g = guesttest.NewWindows()
	srv2, err := deliver.Start("127.0.0.1", 0, "127.0.0.2", arts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv2.Close() })
	_, err = bakePlan(context.Background(), &remote.Remote{Comm: g, UI: guesttest.NewUI()}, p, arts, srv2)
	assert.ErrorContains(t, err, "the guest could not download the artifacts, so nothing was installed")
}

func TestRunWindowsRestartTimeout(t *testing.T) {
	fastRestart(t)
	g := guesttest.NewWindows()
	g.NeedsRestart, g.NeverBack = true, true
	p := basePlan(t)
	p.RestartTimeout = 50 * time.Millisecond
	ui := guesttest.NewUI()
	began := time.Now()
	err := runErr(g, ui, p, realUploads(t, p))
	require.Error(t, err)
	assert.Less(t, time.Since(began), 5*time.Second)
	assert.Contains(t, err.Error(), "restart: Windows did not come back within restart_timeout (50ms) after the restart for the Containers feature")
	assert.Contains(t, err.Error(), "last check: no answer yet: ")
	assert.Contains(t, err.Error(), "longer restart_timeout")
	assert.Contains(t, ui.Err.String(), "did not come back")
	assert.Equal(t, []string{"mkdir", "verify-artifacts", "automatic-updates", "containers-feature", "restart"}, g.Steps())
	_, _, refused := g.Snapshot()
	assert.Positive(t, refused)
}

func TestRunWindowsRefusesABadPlanBeforeTouchingTheGuest(t *testing.T) {
	g := guesttest.NewWindows()
	p := basePlan(t)
	p.HyperV = "sometimes"
	err := runErr(g, guesttest.NewUI(), p, realUploads(t, p))
	require.ErrorContains(t, err, `hyperv: "sometimes" is not auto, on or off`)
	commands, _, _ := g.Snapshot()
	assert.Empty(t, commands)
	assert.Empty(t, g.Files)
}

func TestPowershellEncodedRoundTripsAndFitsTheCommandLine(t *testing.T) {
	cmd := powershellEncoded(bootCheck)
	m := guesttest.EncodedRE.FindStringSubmatch(cmd)
	require.NotNil(t, m)
	script, err := guesttest.DecodeEncoded(m[1])
	require.NoError(t, err)
	assert.Equal(t, bootCheck, script)
	assert.Less(t, len(cmd), 8191, "cmd.exe's command-line limit")
}

// WinRM can answer the restart's boot check, then drop the next
// connection: the first command after a restart is tried again within a
// bounded budget.
func TestFirstCommandAfterRestartIsRetried(t *testing.T) {
	fastRestart(t)
	g := guesttest.NewWindows()
	g.Lingering, g.DownFor, g.ResetAfterBack = 1, 1, 3
	ui, p, _ := runWithRestart(t, g)
	assert.Equal(t, 3, g.Resets)
	assert.Contains(t, ui.Out.String(), "connection reset by peer")

	// Within a budget: a guest that keeps resetting fails the build.
	budget := settleBudget
	settleBudget = 50 * time.Millisecond
	t.Cleanup(func() { settleBudget = budget })
	g = guesttest.NewWindows()
	g.NeedsRestart, g.ResetAfterBack = true, 1<<30
	began := time.Now()
	err := runErr(g, guesttest.NewUI(), p, realUploads(t, p))
	require.ErrorContains(t, err, "step 03-registry: uploading its script")
	require.ErrorContains(t, err, "connection reset by peer")
	assert.Less(t, time.Since(began), 5*time.Second)
}

// runErr runs the plan on the guest double, its error only.
func runErr(g packersdk.Communicator, ui packersdk.Ui, p Plan, uploads []Upload) error {
	_, err := run(context.Background(), &remote.Remote{Comm: g, UI: ui}, p, uploads, nil)
	return err
}
