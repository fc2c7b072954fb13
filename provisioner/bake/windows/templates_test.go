// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/scripttmpl"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// Every value a template prints goes through a quoting function, or a
// function that returns a fixed fragment, and the check can fail: a
// template that prints a value as it is is refused.
func TestTemplatesQuoteEveryValue(t *testing.T) {
	require.NoError(t, templates.Check())

	files := fstest.MapFS{}
	require.NoError(t, fs.WalkDir(templateFiles, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(templateFiles, p)
		files[p] = &fstest.MapFile{Data: data}
		return err
	}))
	files["scripts/steps/unquoted.ps1.tmpl"] = &fstest.MapFile{Data: []byte("{{template \"header\" \"x\"}}\n\n$dir = {{.Dir}}\n")}
	_, err := scripttmpl.Parse(files, "scripts/*/*.tmpl", funcs, safeFuncs...)
	assert.ErrorContains(t, err, "{{.Dir}} prints a value through no quoting function")
}

// Each script is a template of the one set.
func TestScriptsAreTemplates(t *testing.T) {
	names := []string{"sysprep.ps1.tmpl", "closer.ps1.tmpl", "first-boot.ps1.tmpl", "setup-complete.cmd.tmpl", "first-boot-prepare.lf.ps1.tmpl", "inventory.lf.ps1.tmpl",
		"permissions.ps1.tmpl", "automatic-updates.ps1.tmpl", "windows-update.ps1.tmpl", "windows-update-worker",
		"cloudbase-init.ps1.tmpl", "start-kubelet.ps1.tmpl", "self-check.ps1.tmpl", "self-check-cluster-api"}
	for _, step := range []string{stepFetchArtifacts, stepVerifyArtifacts, stepContainersFeature, stepRegistry, node.StepTimeSync,
		stepContainerd, stepCNI, stepKubelet, node.StepCrictl, node.StepImages, stepDefender, stepJoiner, stepCleanup} {
		names = append(names, step+".ps1.tmpl")
	}
	for _, name := range names {
		assert.Contains(t, templates.Names(), name)
	}
}

// The template files have LF line ends: scripttmpl.CRLF makes them CRLF, and a CR
// in a file would be doubled.
func TestTemplateFilesHaveLF(t *testing.T) {
	require.NoError(t, fs.WalkDir(templateFiles, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(templateFiles, p)
		assert.NotContains(t, string(data), "\r", p)
		return err
	}))
}

// No Go file of the package builds a script line by line: the scripts
// are the template files.
func TestNoScriptIsBuiltInGo(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	fset := token.NewFileSet()
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var name string
			switch fn := call.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
				if pkg, ok := fn.X.(*ast.Ident); ok && pkg.Name == "powershell" && name == "New" {
					name = "powershell.New"
				}
			}
			switch name {
			case "powershell.New", "Line", "Comment", "Blank", "Native":
				t.Errorf("%s: %s builds a script line by line; write it in a template under scripts/", fset.Position(call.Pos()), name)
			}
			return true
		})
	}
}

// The functions that print a value where quoting cannot help refuse the
// value instead.
func TestUnquotedValuesAreRefused(t *testing.T) {
	for name, f := range map[string]func(string) string{
		"comment": commentText, "ident": identifier, "cmdPath": cmdPath, "cmdWord": cmdWord,
	} {
		for _, bad := range []string{"a\r\nb", "a\nWrite-Host x"} {
			assert.Panics(t, func() { f(bad) }, "%s(%q)", name, bad)
		}
	}
	assert.Panics(t, func() { commentText("a\u2028b") })
	assert.Panics(t, func() { cmdPath(`C:\x" & del C:\`) })
	assert.Panics(t, func() { cmdPath(`C:\%PATH%`) })
	assert.Panics(t, func() { cmdWord("svc & del") })
	assert.Panics(t, func() { identifier("a.b") })
	assert.Panics(t, func() { identifier("1a") })
	assert.Panics(t, func() { number("1") })
	assert.Equal(t, `C:\Program Files\x.cmd`, cmdPath(`C:\Program Files\x.cmd`))
	assert.Equal(t, "cloudbase-init", cmdWord("cloudbase-init"))
	assert.Equal(t, "BuildAccountSid", identifier("BuildAccountSid"))
	assert.Equal(t, "4294967295", number(uint32(1<<32-1)))
	assert.True(t, strings.HasPrefix(serialWriter("p:"), "function Write-KubenodeSerial"))
}
