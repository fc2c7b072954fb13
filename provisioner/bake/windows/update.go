// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"time"
)

// Windows Update through the Windows Update Agent API
// (Microsoft.Update.Session): search, download, install. The agent refuses
// to download or install from a WinRM session, so the step's script runs
// the work as a SYSTEM scheduled task and relays its log, as
// rgl/packer-plugin-windows-update does with its elevated task.

const (
	stepWindowsUpdate = "windows-update"
	// windowsUpdateCriteria: every software update not installed or hidden.
	// BrowseOnly=0 leaves out the optional updates Settings only offers
	// ("optional quality updates"), as rgl/packer-plugin-windows-update's
	// default search does.
	windowsUpdateCriteria = "BrowseOnly=0 and IsInstalled=0 and Type='Software' and IsHidden=0"
	// windowsUpdateSkipTitle: updates whose title has it are left out (the
	// monthly "Preview" cumulative updates), as
	// rgl/packer-plugin-windows-update's common filter does.
	windowsUpdateSkipTitle = "Preview"
	windowsUpdateTask      = "kubenode-windows-update"
	// windowsUpdatePoll is how often the relay reads the task's log.
	windowsUpdatePoll = 5 * time.Second
	// windowsUpdateStartGrace is how long the task may stay unstarted
	// (Ready, no log yet, last result 0x41303 "has not yet run") before
	// the step fails naming it, instead of waiting out
	// windows_update_timeout.
	windowsUpdateStartGrace = 60 * time.Second
	// schedTaskHasNotRun is SCHED_S_TASK_HAS_NOT_RUN (0x41303), the last
	// result of a task that has never run.
	schedTaskHasNotRun = 0x41303
)

// The automatic-updates step: Windows' automatic updates off by policy,
// first, as image-builder's systemprep role does before it installs
// updates, so that Windows Update neither restarts the guest during the
// bake nor the nodes made from the image.
const (
	stepAutomaticUpdates = "automatic-updates"
	autoUpdatePolicyKey  = `SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate\AU`
)

// automaticUpdatesOff sets the policy's NoAutoUpdate.
func automaticUpdatesOff() []byte {
	return templates.Render("automatic-updates.ps1.tmpl", struct{ PolicyKey string }{autoUpdatePolicyKey})
}

// Result codes of the agent's IUpdateDownloadResult, IInstallationResult
// and IUpdateInstallationResult (OperationResultCode).
const (
	wuaSucceeded           = 2
	wuaSucceededWithErrors = 3
)

// windowsUpdateInput is what windows-update.ps1.tmpl prints.
type windowsUpdateInput struct {
	Dir, Worker, Log, Task string
	// Minutes is windows_update_timeout, rounded up.
	Minutes                        int
	StartGraceSeconds, PollSeconds int
	HasNotRun                      int
	Criteria, SkipTitle            string
	Succeeded, SucceededWithErrors int
	RestartMarker                  string
}

func newWindowsUpdateInput(staging string, timeout time.Duration) windowsUpdateInput {
	dir := staging + `\windows-update`
	return windowsUpdateInput{
		Dir: dir, Worker: dir + `\worker.ps1`, Log: dir + `\worker.log`, Task: windowsUpdateTask,
		Minutes:           int((timeout + time.Minute - 1) / time.Minute),
		StartGraceSeconds: int(windowsUpdateStartGrace / time.Second),
		PollSeconds:       int(windowsUpdatePoll / time.Second),
		HasNotRun:         schedTaskHasNotRun,
		Criteria:          windowsUpdateCriteria, SkipTitle: windowsUpdateSkipTitle,
		Succeeded: wuaSucceeded, SucceededWithErrors: wuaSucceededWithErrors,
		RestartMarker: restartMarker,
	}
}

// windowsUpdateScript renders the windows-update step: one round of
// search, download and install, stopped after timeout. It prints
// restartMarker when Windows needs a restart to finish; the flow
// restarts and runs it again until it finds nothing left to do. The
// worker the SYSTEM task runs goes in a here-string.
func windowsUpdateScript(staging string, timeout time.Duration) []byte {
	return templates.Render("windows-update.ps1.tmpl", newWindowsUpdateInput(staging, timeout))
}

// windowsUpdateWorker is the script the SYSTEM task runs, logging to log;
// every line it logs is relayed to the Packer UI.
func windowsUpdateWorker(log string) string {
	in := newWindowsUpdateInput("", 0)
	in.Log = log
	return templates.RenderString("windows-update-worker", in)
}
