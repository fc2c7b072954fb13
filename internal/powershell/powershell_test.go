package powershell

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestQuoteDoublesEverySingleQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "''",
		"plain":              "'plain'",
		"it's":               "'it''s'",
		"‘smart’ ‚quotes‛":   "'‘‘smart’’ ‚‚quotes‛‛'",
		`$(Remove-Item C:\)`: `'$(Remove-Item C:\)'`,
	} {
		assert.Equal(t, want, Quote(in), "Quote(%q)", in)
	}
}

func TestArray(t *testing.T) {
	assert.Equal(t, "@()", Array(nil))
	assert.Equal(t, "@(\r\n    'a'\r\n    'b''c'\r\n)", Array([]string{"a", "b'c"}))
}

func TestScriptIsCRLFWithABOMAndStopsOnErrors(t *testing.T) {
	s := New("title")
	s.Blank()
	s.Native("tar", "& tar.exe -xf 'x.tgz'")
	out := string(s.Bytes())
	assert.True(t, strings.HasPrefix(out, UTF8BOM+"# title\r\n"))
	assert.Contains(t, out, "$ErrorActionPreference = 'Stop'\r\n")
	assert.Contains(t, out, "& tar.exe -xf 'x.tgz'\r\nif ($LASTEXITCODE -ne 0) { throw \"tar failed with exit code $LASTEXITCODE\" }\r\n")
	assert.NotContains(t, strings.ReplaceAll(out, "\r\n", ""), "\n", "every line ends with CRLF")
}
