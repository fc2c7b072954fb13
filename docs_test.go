// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// configFiles hold the components' options; their field comments are the
// user documentation (packer-sdc struct-markdown renders them).
var configFiles = []string{
	"builder/libvirt/config.go",
	"provisioner/bake/config.go",
	"post-processor/export/config.go",
}

// TestEveryOptionIsDocumented: an option without a comment would be
// documented as its Go name split into words.
func TestEveryOptionIsDocumented(t *testing.T) {
	for _, file := range configFiles {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			for _, field := range st.Fields.List {
				if len(field.Names) == 0 || field.Tag == nil {
					continue // embedded SDK configs carry their own docs
				}
				tag, err := strconv.Unquote(field.Tag.Value)
				require.NoError(t, err)
				key, _, _ := strings.Cut(reflect.StructTag(tag).Get("mapstructure"), ",")
				if key == "" {
					continue
				}
				assert.NotEmpty(t, strings.TrimSpace(field.Doc.Text()), "%s: %s.%s (%q) has no doc comment", file, ts.Name.Name, field.Names[0].Name, key)
				assert.NotContains(t, field.Doc.Text(), "TODO", "%s: struct-markdown drops fields whose comment says TODO", key)
			}
			return false
		})
	}
}

// component is one Packer component registered in main.go.
type component struct{ kind, name string }

// registered reads main.go's RegisterBuilder/Provisioner/PostProcessor calls.
func registered(t *testing.T) []component {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, 0)
	require.NoError(t, err)
	kinds := map[string]string{
		"RegisterBuilder": "builder", "RegisterProvisioner": "provisioner",
		"RegisterPostProcessor": "post-processor", "RegisterDatasource": "data-source",
	}
	var out []component
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || kinds[sel.Sel.Name] == "" || len(call.Args) == 0 {
			return true
		}
		lit, ok := call.Args[0].(*ast.BasicLit)
		require.True(t, ok, "main.go: %s with a name that is not a string literal", sel.Sel.Name)
		name, err := strconv.Unquote(lit.Value)
		require.NoError(t, err)
		out = append(out, component{kinds[sel.Sel.Name], name})
		return true
	})
	require.NotEmpty(t, out, "main.go registers no component")
	return out
}

// TestEveryComponentHasItsPages: each registered component has a page in
// docs/, its entry in .web-docs/metadata.hcl and its generated page in
// .web-docs/components/.
func TestEveryComponentHasItsPages(t *testing.T) {
	meta, err := os.ReadFile(".web-docs/metadata.hcl")
	require.NoError(t, err)
	folders := map[string]string{
		"builder": "builders", "provisioner": "provisioners",
		"post-processor": "post-processors", "data-source": "datasources",
	}
	comps := registered(t)
	for _, c := range comps {
		src := filepath.Join("docs", folders[c.kind], c.name+".mdx")
		page, err := os.ReadFile(src)
		if assert.NoError(t, err, "%s %q needs %s", c.kind, c.name, src) {
			assert.Contains(t, string(page), "Type: `"+pluginName+"-"+c.name+"`", src)
		}
		block := regexp.MustCompile(`component\s*\{\s*type\s*=\s*"` + regexp.QuoteMeta(c.kind) + `"\s*name\s*=\s*"` +
			regexp.QuoteMeta(pluginName+"-"+c.name) + `"\s*slug\s*=\s*"` + regexp.QuoteMeta(c.name) + `"\s*\}`)
		assert.Regexp(t, block, string(meta), ".web-docs/metadata.hcl: component %s %q", c.kind, c.name)
		assert.FileExists(t, filepath.Join(".web-docs/components", c.kind, c.name, "README.md"),
			"run .web-docs/scripts/compile-to-webdocs.sh")
	}
	assert.Equal(t, len(comps), strings.Count(string(meta), "component {"), ".web-docs/metadata.hcl lists a component main.go does not register")
}
