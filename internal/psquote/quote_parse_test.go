// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build pwsh

package psquote

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/psparse"
)

// TestQuoteIsOneLiteral: whatever the value, Quote yields exactly one
// verbatim string literal spanning the whole quoted text.
func TestQuoteIsOneLiteral(t *testing.T) {
	for _, v := range []string{"", "plain", "it's", "''", "a'b'c'", "$(Remove-Item C:\\)", "`n", "x' ; Remove-Item C:\\ ; '", "‘smart’ ‚quotes‛", "\"double\""} {
		assertOneLiteral(t, v)
	}
}

// FuzzQuote: any valid UTF-8 value without control characters becomes
// exactly one PowerShell verbatim literal that tree-sitter parses whole, and
// reads back to the value. (Its corpus moved here from autounattend, where
// it was FuzzPSQuote.)
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "it's", "x' ; Remove-Item C:\\ ; '", "‘’‚‛", "$env:PATH", "@'\r\n'@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if !utf8.ValidString(v) || hasControl(v) {
			t.Skip("callers refuse values with control characters before quoting")
		}
		assertOneLiteral(t, v)
	})
}

// hasControl matches what the generators refuse in a one-line value.
func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) || r == '\uFFFE' || r == '\uFFFF' || (r >= 0xD800 && r <= 0xDFFF) {
			return true
		}
	}
	return false
}

func assertOneLiteral(t *testing.T, v string) {
	t.Helper()
	lit := Quote(v)
	tree, err := psparse.Parse([]byte("$x = " + lit + "\r\n"))
	require.NoError(t, err)
	defer tree.Close()
	require.Empty(t, tree.Errors(), "value %q", v)
	lits := tree.Nodes("verbatim_string_characters")
	require.Len(t, lits, 1, "value %q", v)
	assert.Equal(t, lit, lits[0], "value %q", v)
	// Undo PowerShell's doubling to get the value back.
	assert.Equal(t, v, unquote(lits[0]))
}

// unquote reads a verbatim literal the way PowerShell's tokenizer does:
// any single-quote character followed by another is one quote.
func unquote(lit string) string {
	r := []rune(lit)
	r = r[1 : len(r)-1]
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		b.WriteRune(r[i])
		if IsSingleQuote(r[i]) && i+1 < len(r) && IsSingleQuote(r[i+1]) {
			i++
		}
	}
	return b.String()
}
