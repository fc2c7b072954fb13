//go:build pwsh

package windows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kubenode/packer-plugin-kubenode/internal/pwsh"
)

// The step's script and the worker it writes (a here-string, so parsed
// on its own too) are valid PowerShell.
func TestWindowsUpdateScriptParses(t *testing.T) {
	assert.NoError(t, pwsh.Check(windowsUpdateScript(`C:\Windows\Temp\kubenode`, time.Hour)))
	assert.NoError(t, pwsh.Check([]byte(windowsUpdateWorker(`C:\Windows\Temp\kubenode\windows-update\worker.log`))))
}
