// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build pwsh

package windows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kubenode/packer-plugin-kubenode/internal/psparse"
)

// The step's script and the worker it writes (a here-string, so parsed
// on its own too) are valid PowerShell.
func TestWindowsUpdateScriptParses(t *testing.T) {
	assert.NoError(t, psparse.Check(windowsUpdateScript(`C:\Windows\Temp\kubenode`, time.Hour)))
	assert.NoError(t, psparse.Check([]byte(windowsUpdateWorker(`C:\Windows\Temp\kubenode\windows-update\worker.log`))))
}
