// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build pwsh

package autounattend

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/psparse"
)

// TestGeneratedPowerShellParses parses every script this package generates,
// and the PowerShell inside the first-logon command line. Quoting itself is
// tested (and fuzzed) in internal/psquote.
func TestGeneratedPowerShellParses(t *testing.T) {
	scripts := map[string][]byte{"first-logon locator": []byte(bootstrapLocator)}
	for name, w := range bootstrapCases() {
		out, err := RenderWindowsBootstrap(w)
		require.NoError(t, err)
		scripts[name] = out
	}
	for name, src := range scripts {
		t.Run(name, func(t *testing.T) {
			assert.NoError(t, psparse.Check(src))
		})
	}
	assert.NotContains(t, bootstrapLocator, `"`, "the locator is passed inside -Command \"...\"")
}

// TestPowerShellCheckFindsErrors makes sure the checker can fail.
func TestPowerShellCheckFindsErrors(t *testing.T) {
	for _, bad := range []string{"if ($x {\r\n}", "$a = 'unterminated", "function F {\r\n"} {
		assert.Error(t, psparse.Check([]byte(bad)), bad)
	}
}
