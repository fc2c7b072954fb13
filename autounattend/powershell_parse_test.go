//go:build pwsh

package autounattend

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/pwsh"

	"github.com/kubenode/packer-plugin-kubenode/internal/powershell"
)

// TestGeneratedPowerShellParses parses every script this package generates,
// and the PowerShell inside the first-logon command line.
func TestGeneratedPowerShellParses(t *testing.T) {
	scripts := map[string][]byte{"first-logon locator": []byte(bootstrapLocator)}
	for name, w := range bootstrapCases() {
		out, err := RenderWindowsBootstrap(w)
		require.NoError(t, err)
		scripts[name] = out
	}
	for name, src := range scripts {
		t.Run(name, func(t *testing.T) {
			assert.NoError(t, pwsh.Check(src))
		})
	}
	assert.NotContains(t, bootstrapLocator, `"`, "the locator is passed inside -Command \"...\"")
}

// TestPowerShellCheckFindsErrors makes sure the checker can fail.
func TestPowerShellCheckFindsErrors(t *testing.T) {
	for _, bad := range []string{"if ($x {\r\n}", "$a = 'unterminated", "function F {\r\n"} {
		assert.Error(t, pwsh.Check([]byte(bad)), bad)
	}
}

// TestPSQuoteIsOneLiteral: whatever the value, powershell.Quote yields exactly one
// verbatim string literal spanning the whole quoted text.
func TestPSQuoteIsOneLiteral(t *testing.T) {
	for _, v := range []string{"", "plain", "it's", "''", "a'b'c'", "$(Remove-Item C:\\)", "`n", "x' ; Remove-Item C:\\ ; '", "‘smart’ ‚quotes‛", "\"double\""} {
		assertOneLiteral(t, v)
	}
}

func assertOneLiteral(t *testing.T, v string) {
	t.Helper()
	lit := powershell.Quote(v)
	tree, err := pwsh.Parse([]byte("$x = " + lit + "\r\n"))
	require.NoError(t, err)
	defer tree.Close()
	require.Empty(t, tree.Errors(), "value %q", v)
	lits := tree.Nodes("verbatim_string_characters")
	require.Len(t, lits, 1, "value %q", v)
	assert.Equal(t, lit, lits[0], "value %q", v)
	// Undo PowerShell's doubling to get the value back.
	assert.Equal(t, v, unquotePS(lits[0]))
}

// unquotePS reads a verbatim literal the way PowerShell's tokenizer does:
// any single-quote character followed by another is one quote.
func unquotePS(lit string) string {
	r := []rune(lit)
	r = r[1 : len(r)-1]
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		b.WriteRune(r[i])
		if powershell.IsSingleQuote(r[i]) && i+1 < len(r) && powershell.IsSingleQuote(r[i+1]) {
			i++
		}
	}
	return b.String()
}
