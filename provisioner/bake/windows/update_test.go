// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/golden"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

func TestWindowsUpdateScriptGolden(t *testing.T) {
	golden.Assert(t, "windows-update.ps1", windowsUpdateScript(`C:\Windows\Temp\kubenode`, 2*time.Hour))
}

// The update agent refuses to download or install from a WinRM session:
// the work runs as a SYSTEM task, bounded by the timeout, and a restart it
// needs is asked for with the marker the flow reads.
func TestWindowsUpdateScript(t *testing.T) {
	script := string(windowsUpdateScript(`C:\Windows\Temp\kubenode`, 90*time.Minute+time.Second))
	for _, want := range []string{
		"New-Object -ComObject 'Microsoft.Update.Session'",
		".Search('BrowseOnly=0 and IsInstalled=0 and Type=''Software'' and IsHidden=0')",
		"if ($update.Title -like '*Preview*') {",
		"$startBy = (Get-Date).AddSeconds(60)",
		"if ($info.LastTaskResult -ne 267011 -or (Get-Date) -gt $startBy) {",
		"$session.CreateUpdateDownloader()",
		"$session.CreateUpdateInstaller()",
		"Write-KubenodeLog '" + restartMarker + "'",
		"-User 'SYSTEM' -RunLevel Highest",
		"-ExecutionTimeLimit (New-TimeSpan -Minutes 91)",
		"$deadline = (Get-Date).AddMinutes(91)",
		"Stop-ScheduledTask -TaskName $task",
		"raise windows_update_timeout, or set windows_update = false",
		`Write-KubenodeLog "changed: installed $title"`,
	} {
		assert.Contains(t, script, want)
	}
	assert.Less(t, strings.Index(script, "Stop-ScheduledTask"), strings.Index(script, "throw 'Windows Update was still running"),
		"the task is stopped before the step fails")
	worker := windowsUpdateWorker(`C:\x\worker.log`)
	for _, l := range strings.Split(worker, "\n") {
		assert.False(t, strings.HasPrefix(l, "'@"), "a worker line would close the here-string: %q", l)
	}
}

// windows-update comes first, before the Containers feature, and only
// when asked for.
func TestWindowsStepsWindowsUpdateFirst(t *testing.T) {
	p := basePlan(t)
	steps, err := Steps(p)
	require.NoError(t, err)
	assert.Equal(t, stepAutomaticUpdates, steps[0].Name, "automatic updates off first")
	assert.Equal(t, stepContainersFeature, steps[1].Name, "no windows-update unless windows_update")

	p.WindowsUpdate, p.WindowsUpdateTimeout = true, 90*time.Minute
	steps, err = Steps(p)
	require.NoError(t, err)
	assert.Equal(t, stepAutomaticUpdates, steps[0].Name, "automatic updates off before the bake's own updates")
	assert.Equal(t, stepWindowsUpdate, steps[1].Name)
	assert.Equal(t, stepContainersFeature, steps[2].Name)
	assert.Equal(t, windowsUpdateScript(defaultStaging, 90*time.Minute), steps[1].Script)

	p.WindowsUpdateTimeout = -time.Minute
	_, err = Steps(p)
	assert.ErrorContains(t, err, "windows_update_timeout: -1m0s is negative")
}

func updatePlan(t *testing.T) Plan {
	p := basePlan(t)
	p.WindowsUpdate, p.DefenderExclusions, p.InstallJoiner, p.Generalize = true, false, false, false
	return p
}

// updateRound is a round's relayed log: n updates installed, and the
// restart marker when restart.
func updateRound(n int, restart bool) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "found: KB50%02d\r\n", i)
	}
	for i := range n {
		fmt.Fprintf(&b, "changed: installed KB50%02d\r\n", i)
	}
	if restart {
		b.WriteString(restartMarker + "\r\n")
	} else {
		b.WriteString("ok: no restart needed\r\n")
	}
	return b.String()
}

// Rounds until one finds nothing: a restart after each round that asks for
// it, another search after one that installed without a restart.
func TestRunWindowsUpdateRounds(t *testing.T) {
	fastRestart(t)
	g := guesttest.NewWindows()
	g.Updates = []string{updateRound(3, true), updateRound(2, true), updateRound(1, false)}
	g.Lingering = 1
	ui := guesttest.NewUI()
	p := updatePlan(t)
	require.NoError(t, runErr(g, ui, p, realUploads(t, p)))

	assert.Equal(t, []string{"mkdir", "verify-artifacts", "automatic-updates",
		"windows-update", "restart", "windows-update", "restart", "windows-update", "windows-update",
		"containers-feature", "registry", "time-sync", "containerd", "cni", "kubelet", "crictl", "permissions", "self-check", "cleanup"}, g.Steps())
	out := ui.Out.String()
	for _, want := range []string{
		"Windows Update round 1: 3 updates installed, restarting",
		"kubenode-bake [restart]: Windows restarts to finish installing Windows updates",
		"Windows Update round 2: 2 updates installed, restarting",
		"Windows Update round 3: 1 updates installed, searching again",
		"Windows Update round 4: nothing left to install; 6 updates installed in all",
		"changed: installed KB5002",
		"kubenode-bake [windows-update] round 2",
		"Windows baked, 27 changes", // 6 updates, the steps, containerd's key and 9 locked folders
	} {
		assert.Contains(t, out, want)
	}
	assert.Empty(t, ui.Err.String())
	commands, _, _ := g.Snapshot()
	assert.Contains(t, commands, `shutdown /r /t 5 /c "kubenode-bake: Windows updates"`)
	// Later rounds stop themselves within what is left of the timeout.
	last := string(g.Files["C:/Windows/Temp/kubenode/02-windows-update.ps1"])
	assert.Contains(t, last, "$deadline = (Get-Date).AddMinutes(120)")
}

func TestRunWindowsUpdateFailsAfterTheRoundsLimit(t *testing.T) {
	fastRestart(t)
	g := guesttest.NewWindows()
	for range windowsUpdateMaxRounds + 1 {
		g.Updates = append(g.Updates, updateRound(1, true))
	}
	ui := guesttest.NewUI()
	p := updatePlan(t)
	err := runErr(g, ui, p, realUploads(t, p))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "windows_update: Windows Update still installed updates or asked for a restart in round 5 of 5")
	assert.Contains(t, err.Error(), "set windows_update = false")
	assert.Contains(t, ui.Err.String(), "round 5 of 5")
	steps := g.Steps()
	assert.Equal(t, windowsUpdateMaxRounds, strings.Count(strings.Join(steps, " "), "windows-update"))
	assert.Equal(t, windowsUpdateMaxRounds-1, strings.Count(strings.Join(steps, " "), "restart"), "no restart after the last round")
	assert.NotContains(t, steps, stepContainersFeature, "nothing is installed after a failed update phase")
}

// windows_update_timeout bounds the whole phase, also a restart whose
// restart_timeout is longer.
func TestRunWindowsUpdateTimeout(t *testing.T) {
	fastRestart(t)
	g := guesttest.NewWindows()
	g.Updates = []string{updateRound(2, true)}
	g.NeverBack = true
	ui := guesttest.NewUI()
	p := updatePlan(t)
	p.WindowsUpdateTimeout = 50 * time.Millisecond
	began := time.Now()
	err := runErr(g, ui, p, realUploads(t, p))
	require.Error(t, err)
	assert.Less(t, time.Since(began), 5*time.Second, "not restart_timeout's 15m")
	assert.Contains(t, err.Error(), "windows_update_timeout: Windows Update ran out of its 50ms after round 1")
	assert.Contains(t, err.Error(), "raise windows_update_timeout, or set windows_update = false")
	assert.Contains(t, ui.Err.String(), "ran out of its 50ms")
	assert.Equal(t, []string{"mkdir", "verify-artifacts", "automatic-updates", "windows-update", "restart"}, g.Steps())
}

// A round whose script fails (the task's own stop after the timeout, or an
// update that failed) fails the build with the step's output.
func TestRunWindowsUpdateRoundFails(t *testing.T) {
	g := guesttest.NewWindows()
	g.Updates = []string{"failed: KB5001 (result code 4, HRESULT -2145124329)\r\nWindows Update failed (the task exited with 1): see the lines above\r\n"}
	g.Exit[stepWindowsUpdate] = 1
	p := updatePlan(t)
	err := runErr(g, guesttest.NewUI(), p, realUploads(t, p))
	var se *remote.StepError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, stepWindowsUpdate, se.Step)
	assert.Contains(t, se.Tail, "failed: KB5001")
	assert.Equal(t, []string{"mkdir", "verify-artifacts", "automatic-updates", "windows-update"}, g.Steps())
}

// A task the Task Scheduler never starts ends the step at once, naming
// the task, instead of waiting out windows_update_timeout.
func TestRunWindowsUpdateTaskNeverStartsFailsFast(t *testing.T) {
	g := guesttest.NewWindows()
	g.UpdateTaskNeverStarts = true
	ui := guesttest.NewUI()
	p := updatePlan(t)
	err := runErr(g, ui, p, realUploads(t, p))
	var se *remote.StepError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, stepWindowsUpdate, se.Step)
	assert.Less(t, g.UpdateWaited, 2*time.Minute, "the step waits for the task to start, not for windows_update_timeout")
	assert.Contains(t, se.Tail, "The Windows Update task kubenode-windows-update did not start")
	assert.Contains(t, se.Tail, "state Ready, last result 0x00041303")
	assert.NotContains(t, se.Tail, "still running")
	assert.Equal(t, []string{"mkdir", "verify-artifacts", "automatic-updates", "windows-update"}, g.Steps(), "nothing after a failed update phase")
}

// Automatic updates are off on the nodes unless windows_automatic_updates:
// the policy image-builder's systemprep role sets first.
func TestAutomaticUpdatesOffByPolicyFirst(t *testing.T) {
	p := basePlan(t)
	steps, err := Steps(p)
	require.NoError(t, err)
	require.Equal(t, stepAutomaticUpdates, steps[0].Name)
	script := string(steps[0].Script)
	assert.Contains(t, script, `Set-KubenodeDword -Key 'SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate\AU' -Name 'NoAutoUpdate' -Value 1`)

	p.AutomaticUpdates = true
	steps, err = Steps(p)
	require.NoError(t, err)
	for _, s := range steps {
		assert.NotEqual(t, stepAutomaticUpdates, s.Name, "windows_automatic_updates = true leaves the policy alone")
		assert.NotContains(t, string(s.Script), "NoAutoUpdate", s.Name)
	}
}
