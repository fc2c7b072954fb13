//go:build pwsh

package bake

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/pwsh"
)

// TestWindowsScriptsParse parses every generated Windows script (all golden
// cases, the artifact check and the flow's own commands) with the
// tree-sitter PowerShell grammar.
func TestWindowsScriptsParse(t *testing.T) {
	scripts := map[string][]byte{
		"boot check": []byte(windowsBootCheck),
		"OS query":   []byte(windowsOSQuery),
		// Run by the sysprep step as -EncodedCommand.
		"transport closer": []byte(windowsTransportCloser()),
	}
	for name, src := range renderedWindows(t) {
		if strings.HasSuffix(name, ".ps1") {
			scripts[name] = src
		}
	}
	require.Greater(t, len(scripts), 20)
	for name, src := range scripts {
		t.Run(name, func(t *testing.T) {
			assert.NoError(t, pwsh.Check(src))
		})
	}
}

// TestWindowsParseCheckCanFail: a script broken the way a generator bug
// would break it (an unbalanced brace, a quote a value failed to double)
// fails the check.
func TestWindowsParseCheckCanFail(t *testing.T) {
	steps, err := WindowsSteps(basePlan(t))
	require.NoError(t, err)
	good := string(steps[0].Script)
	for name, bad := range map[string]string{
		"unclosed if":          strings.Replace(good, "if ($restart) {", "if ($restart {", 1),
		"unbalanced brace":     strings.Replace(good, "\r\n}\r\n", "\r\n", 1),
		"undoubled quote":      good + "Write-Host 'it's'\r\n",
		"unterminated literal": good + "$x = 'open\r\n",
	} {
		assert.NotEqual(t, good, bad, name)
		assert.Error(t, pwsh.Check([]byte(bad)), name)
	}
}
