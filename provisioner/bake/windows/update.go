package windows

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/powershell"
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

func windowsAutomaticUpdatesOff() []byte {
	s := newWinScript("Windows automatic updates off by policy (windows_automatic_updates = false): nodes are updated by a newer image.", psDword)
	s.Line("Set-KubenodeDword -Key %s -Name 'NoAutoUpdate' -Value 1 -Why %s",
		powershell.Quote(autoUpdatePolicyKey), powershell.Quote("automatic updates off; windows_automatic_updates = true keeps them"))
	return s.Bytes()
}

// Result codes of the agent's IUpdateDownloadResult, IInstallationResult
// and IUpdateInstallationResult (OperationResultCode).
const (
	wuaSucceeded           = 2
	wuaSucceededWithErrors = 3
)

// windowsUpdateScript renders the windows-update step: one round of
// search, download and install, stopped after timeout. It prints
// windowsRestartMarker when Windows needs a restart to finish; the flow
// restarts and runs it again until it finds nothing left to do.
func windowsUpdateScript(staging string, timeout time.Duration) []byte {
	dir := staging + `\windows-update`
	worker := dir + `\worker.ps1`
	log := dir + `\worker.log`
	minutes := int((timeout + time.Minute - 1) / time.Minute)

	s := newWinScript(fmt.Sprintf("Windows Update (%s), as a SYSTEM task, stopped after %d minutes (windows_update_timeout). Windows restarts after it when an update asks for it.", windowsUpdateCriteria, minutes))
	s.Line("$dir = %s", powershell.Quote(dir))
	s.Line("$worker = %s", powershell.Quote(worker))
	s.Line("$log = %s", powershell.Quote(log))
	s.Line("$task = %s", powershell.Quote(windowsUpdateTask))
	s.Line("New-Item -ItemType Directory -Force -Path $dir | Out-Null")
	s.Line("Remove-Item -LiteralPath $log -Force -ErrorAction SilentlyContinue")
	s.Comment("The worker runs as SYSTEM: the update agent does not download or install from a WinRM session.")
	s.Line("$body = @'")
	for _, l := range strings.Split(windowsUpdateWorker(log), "\n") {
		s.Line("%s", l)
	}
	s.Line("'@")
	s.Line("[System.IO.File]::WriteAllText($worker, $body, (New-Object -TypeName System.Text.UTF8Encoding -ArgumentList $true))")
	s.Line("Unregister-ScheduledTask -TaskName $task -Confirm:$false -ErrorAction SilentlyContinue")
	s.Line("$action = New-ScheduledTaskAction -Execute 'powershell.exe' -Argument ('-NoProfile -ExecutionPolicy Bypass -File \"{0}\"' -f $worker)")
	s.Line("$settings = New-ScheduledTaskSettingsSet -AllowStartIfOnBatteries -DontStopIfGoingOnBatteries -ExecutionTimeLimit (New-TimeSpan -Minutes %d)", minutes)
	s.Line("Register-ScheduledTask -TaskName $task -Action $action -Settings $settings -User 'SYSTEM' -RunLevel Highest -Force | Out-Null")
	s.Line("Start-ScheduledTask -TaskName $task")
	s.Line("$deadline = (Get-Date).AddMinutes(%d)", minutes)
	s.Line("$startBy = (Get-Date).AddSeconds(%d)", int(windowsUpdateStartGrace/time.Second))
	s.Line("$seen = 0")
	s.Line("$running = $true")
	s.Line("while ($running) {")
	s.Line("    Start-Sleep -Seconds %d", int(windowsUpdatePoll/time.Second))
	s.Line("    $state = [string](Get-ScheduledTask -TaskName $task).State")
	s.Line("    $hasLog = Test-Path -LiteralPath $log")
	s.Line("    # The task may still be starting: wait for its log, then for its state to leave Running.")
	s.Line("    $running = ($state -eq 'Running') -or ($state -eq 'Queued') -or -not $hasLog")
	s.Line("    # A task neither running nor queued without its log has ended before its first line, or has")
	s.Line("    # not run (last result 0x%X) and gets %d s to start: fail now, not at windows_update_timeout.", schedTaskHasNotRun, int(windowsUpdateStartGrace/time.Second))
	s.Line("    if (-not $hasLog -and $state -ne 'Running' -and $state -ne 'Queued') {")
	s.Line("        $info = Get-ScheduledTaskInfo -TaskName $task")
	s.Line("        if ($info.LastTaskResult -ne %d -or (Get-Date) -gt $startBy) {", schedTaskHasNotRun)
	s.Line("            Unregister-ScheduledTask -TaskName $task -Confirm:$false -ErrorAction SilentlyContinue")
	s.Line("            throw (%s -f $state, $info.LastTaskResult, $info.LastRunTime)", powershell.Quote(
		"The Windows Update task "+windowsUpdateTask+" did not start, or ended before writing its log (state {0}, last result 0x{1:X8}, last run {2}): "+
			"the Task Scheduler log (Microsoft-Windows-TaskScheduler/Operational) says why; the build does not wait for windows_update_timeout"))
	s.Line("        }")
	s.Line("    }")
	s.Line("    if (Test-Path -LiteralPath $log) {")
	s.Line("        $lines = @(Get-Content -LiteralPath $log)")
	s.Line("        for ($i = $seen; $i -lt $lines.Count; $i++) {")
	s.Line("            Write-Host $lines[$i]")
	s.Line("        }")
	s.Line("        $seen = $lines.Count")
	s.Line("    }")
	s.Line("    if ($running -and (Get-Date) -gt $deadline) {")
	s.Line("        Stop-ScheduledTask -TaskName $task -ErrorAction SilentlyContinue")
	s.Line("        Unregister-ScheduledTask -TaskName $task -Confirm:$false -ErrorAction SilentlyContinue")
	s.Line("        throw %s", powershell.Quote(fmt.Sprintf("Windows Update was still running after %d minutes and was stopped: raise windows_update_timeout, or set windows_update = false", minutes)))
	s.Line("    }")
	s.Line("}")
	s.Line("$code = (Get-ScheduledTaskInfo -TaskName $task).LastTaskResult")
	s.Line("Unregister-ScheduledTask -TaskName $task -Confirm:$false")
	s.Line("if ($code -ne 0) {")
	s.Line(`    throw "Windows Update failed (the task exited with $code): see the lines above"`)
	s.Line("}")
	return s.Bytes()
}

// windowsUpdateWorker is the script the SYSTEM task runs; every line it
// logs is relayed to the Packer UI. It goes into a single-quoted
// here-string, so no line may start with '@.
func windowsUpdateWorker(log string) string {
	lines := []string{
		"$ErrorActionPreference = 'Stop'",
		"$log = " + powershell.Quote(log),
		"function Write-KubenodeLog {",
		"    param([string]$Line)",
		"    Add-Content -LiteralPath $log -Value $Line",
		"}",
		"try {",
		"    Write-KubenodeLog " + powershell.Quote("windows-update: searching ("+windowsUpdateCriteria+")"),
		"    $session = New-Object -ComObject 'Microsoft.Update.Session'",
		"    $session.ClientApplicationID = 'kubenode-bake'",
		"    $found = $session.CreateUpdateSearcher().Search(" + powershell.Quote(windowsUpdateCriteria) + ")",
		"    $updates = New-Object -ComObject 'Microsoft.Update.UpdateColl'",
		"    foreach ($update in $found.Updates) {",
		"        if ($update.Title -like " + powershell.Quote("*"+windowsUpdateSkipTitle+"*") + ") {",
		`            Write-KubenodeLog "skipped: $($update.Title) (a preview)"`,
		"            continue",
		"        }",
		"        if ($update.InstallationBehavior.CanRequestUserInput) {",
		`            Write-KubenodeLog "skipped: $($update.Title) (it asks for user input)"`,
		"            continue",
		"        }",
		"        if (-not $update.EulaAccepted) {",
		"            $update.AcceptEula()",
		"        }",
		"        $updates.Add($update) | Out-Null",
		`        Write-KubenodeLog "found: $($update.Title)"`,
		"    }",
		"    if ($updates.Count -eq 0) {",
		"        Write-KubenodeLog 'ok: no update to install'",
		"    } else {",
		`        Write-KubenodeLog "windows-update: downloading $($updates.Count) updates"`,
		"        $downloader = $session.CreateUpdateDownloader()",
		"        $downloader.Updates = $updates",
		"        $download = $downloader.Download()",
		fmt.Sprintf("        if ($download.ResultCode -ne %d -and $download.ResultCode -ne %d) {", wuaSucceeded, wuaSucceededWithErrors),
		`            throw "downloading the updates failed: result code $($download.ResultCode), HRESULT $($download.HResult)"`,
		"        }",
		`        Write-KubenodeLog "windows-update: installing $($updates.Count) updates"`,
		"        $installer = $session.CreateUpdateInstaller()",
		"        $installer.Updates = $updates",
		"        $install = $installer.Install()",
		"        $failed = 0",
		"        for ($i = 0; $i -lt $updates.Count; $i++) {",
		"            $result = $install.GetUpdateResult($i)",
		"            $title = $updates.Item($i).Title",
		fmt.Sprintf("            if ($result.ResultCode -eq %d -or $result.ResultCode -eq %d) {", wuaSucceeded, wuaSucceededWithErrors),
		`                Write-KubenodeLog "changed: installed $title"`,
		"            } else {",
		`                Write-KubenodeLog "failed: $title (result code $($result.ResultCode), HRESULT $($result.HResult))"`,
		"                $failed++",
		"            }",
		"        }",
		"        if ($failed -gt 0) {",
		`            throw "$failed of $($updates.Count) updates failed to install"`,
		"        }",
		"    }",
		"    if ((New-Object -ComObject 'Microsoft.Update.SystemInfo').RebootRequired) {",
		"        Write-KubenodeLog " + powershell.Quote(windowsRestartMarker),
		"    } else {",
		"        Write-KubenodeLog 'ok: no restart needed'",
		"    }",
		"    exit 0",
		"} catch {",
		`    Write-KubenodeLog "failed: $_"`,
		"    exit 1",
		"}",
	}
	return strings.Join(lines, "\n")
}
