package windows

import (
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every value the templates print goes through a quoting function, or a
// function that returns a fixed fragment.
func TestGeneralizeTemplatesPassCheck(t *testing.T) {
	require.NoError(t, generalizeTemplates.Check())
	for _, name := range []string{"sysprep.ps1.tmpl", "closer.ps1.tmpl", "first-boot.ps1.tmpl", "setup-complete.cmd.tmpl", "first-boot-prepare.lf.ps1.tmpl", "permissions.ps1.tmpl", "automatic-updates.ps1.tmpl", "windows-update.ps1.tmpl", "windows-update-worker", "cloudbase-init.ps1.tmpl", "start-kubelet.ps1.tmpl", "self-check.ps1.tmpl", "self-check-cluster-api"} {
		assert.Contains(t, generalizeTemplates.Names(), name)
	}
}

// The template files have LF line ends: crlfFS makes them CRLF, and a CR
// in a file would be doubled.
func TestGeneralizeTemplateFilesHaveLF(t *testing.T) {
	require.NoError(t, fs.WalkDir(generalizeFiles, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(generalizeFiles, path)
		require.NoError(t, err)
		assert.NotContains(t, string(b), "\r", path)
		return nil
	}))
}

// The scripts of these files are template files: none is assembled line
// by line in Go.
func TestGeneralizeScriptsAreNotBuiltInGo(t *testing.T) {
	for _, file := range []string{"sysprep.go", "sysprep_const.go", "sysprep_run.go", "permissions.go", "update.go", "clusterapi.go", "selfcheck.go", "templates_generalize.go"} {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, call := range []string{"powershell.New(", "newWinScript(", ".Line(", ".Comment(", ".Blank(", ".Native(", "say(s", "native(s", "fmt.Fprintf(", "WriteString("} {
			assert.NotContains(t, string(b), call, "%s builds a script in Go", file)
		}
	}
}

// The functions that print a value where quoting cannot help refuse the
// value instead.
func TestGeneralizeUnquotedValuesAreRefused(t *testing.T) {
	for name, f := range map[string]func(string) string{
		"comment": generalizeComment, "ident": generalizeIdent, "cmdPath": generalizeCmdPath, "cmdWord": generalizeCmdWord,
	} {
		for _, bad := range []string{"a\r\nb", "a\nWrite-Host x"} {
			assert.Panics(t, func() { f(bad) }, "%s(%q)", name, bad)
		}
	}
	assert.Panics(t, func() { generalizeCmdPath(`C:\x" & del C:\`) })
	assert.Panics(t, func() { generalizeCmdPath(`C:\%PATH%`) })
	assert.Panics(t, func() { generalizeCmdWord("svc & del") })
	assert.Panics(t, func() { generalizeIdent("a.b") })
	assert.Equal(t, `C:\Program Files\x.cmd`, generalizeCmdPath(`C:\Program Files\x.cmd`))
	assert.Equal(t, "cloudbase-init", generalizeCmdWord("cloudbase-init"))
	assert.Equal(t, "BuildAccountSid", generalizeIdent("BuildAccountSid"))
	assert.True(t, strings.HasPrefix(generalizeSerialWriter("p:"), "function Write-KubenodeSerial"))
}
