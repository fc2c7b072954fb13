//go:build pwsh

package autounattend

import (
	"testing"
	"unicode/utf8"
)

// FuzzPSQuote: any valid UTF-8 value becomes exactly one PowerShell verbatim
// literal that tree-sitter parses whole, and reads back to the value.
func FuzzPSQuote(f *testing.F) {
	for _, s := range []string{"", "it's", "x' ; Remove-Item C:\\ ; '", "‘’‚‛", "$env:PATH", "@'\r\n'@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if !utf8.ValidString(v) || checkText(v, false) != "" {
			t.Skip("values with control characters are rejected before quoting")
		}
		assertOneLiteral(t, v)
	})
}
