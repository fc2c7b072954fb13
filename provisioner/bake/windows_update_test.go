package bake

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kubenode/packer-plugin-kubenode/internal/golden"
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
		".Search('IsInstalled=0 and Type=''Software'' and IsHidden=0')",
		"$session.CreateUpdateDownloader()",
		"$session.CreateUpdateInstaller()",
		"Write-KubenodeLog '" + windowsRestartMarker + "'",
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
