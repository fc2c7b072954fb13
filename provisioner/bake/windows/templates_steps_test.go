package windows

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/scripttmpl"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// Every value a step template prints goes through a quoting function, and
// the check can fail: a template that prints a value as it is is refused.
func TestStepTemplatesQuoteEveryValue(t *testing.T) {
	require.NoError(t, stepTemplates.Check())

	files := fstest.MapFS{}
	require.NoError(t, fs.WalkDir(stepTemplateFiles, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(stepTemplateFiles, p)
		files[p] = &fstest.MapFile{Data: data}
		return err
	}))
	files["scripts/steps/unquoted.ps1.tmpl"] = &fstest.MapFile{Data: []byte("{{template \"header\" \"x\"}}\n\n$dir = {{.Dir}}\n")}
	_, err := scripttmpl.Parse(files, "scripts/steps/*.ps1.tmpl", stepFuncs, stepSafeFuncs...)
	assert.ErrorContains(t, err, "{{.Dir}} prints a value through no quoting function")
}

// The template files keep LF line endings: they are read with CRLF.
func TestStepTemplatesAreLF(t *testing.T) {
	require.NoError(t, fs.WalkDir(stepTemplateFiles, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(stepTemplateFiles, p)
		assert.NotContains(t, string(data), "\r", p)
		return err
	}))
}

// These steps are template files, and the Go that renders them builds no
// script line by line.
func TestStepsAreTemplateFiles(t *testing.T) {
	templated := []string{stepFetchArtifacts, stepVerifyArtifacts, stepContainersFeature, stepRegistry, node.StepTimeSync,
		stepContainerd, stepCNI, stepKubelet, node.StepCrictl, node.StepImages, stepDefender, stepJoiner, stepCleanup}
	for _, name := range templated {
		assert.Contains(t, stepTemplates.Names(), name+".ps1.tmpl")
	}
	fset := token.NewFileSet()
	for _, file := range []string{"steps.go", "basics.go", "images.go", "registry.go", "templates_steps.go"} {
		f, err := parser.ParseFile(fset, file, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			name := ""
			switch fn := call.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			}
			switch name {
			case "New", "newWinScript", "Line", "Comment", "Blank", "Native", "say", "native":
				t.Errorf("%s: %s builds a script line by line; write it in scripts/steps", fset.Position(call.Pos()), name)
			}
			return true
		})
	}
}
