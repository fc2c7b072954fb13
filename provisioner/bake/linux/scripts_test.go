// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/scripttmpl"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// Every template prints values only through a quoting function or a
// fixed fragment; a value printed bare, or through a function that only
// computes it, is refused.
func TestScriptTemplatesQuoteEveryValue(t *testing.T) {
	require.NoError(t, scripts.Check())
	for _, body := range []string{
		"echo {{.Staging}}",
		"echo {{join .Staging \"x\"}}",
		"echo {{proxyDropIn .Proxy}}",
		"{{range proxyEnv .Proxy}}export {{.}}{{end}}",
		"echo {{hostsHeader}}",
		"echo {{q .Staging | text}}",
	} {
		_, err := scripttmpl.Parse(fstest.MapFS{"x.sh.tmpl": {Data: []byte(body)}}, "*.sh.tmpl", scriptFuncs(), safeFuncs()...)
		assert.ErrorContains(t, err, "no quoting function", body)
	}
}

// The scripts that are not a step's: the pieces the steps share, and the
// scripts a step writes or run runs.
var notSteps = []string{"lib.sh.tmpl", "growroot.sh.tmpl", "hostname.sh.tmpl", "lock-build-account.sh.tmpl", "transfer.sh.tmpl"}

// Each step's script is its template, NAME.sh.tmpl, rendered: every
// template is a step's or one of notSteps, and every step of every kind
// of plan has one.
func TestEveryStepIsATemplate(t *testing.T) {
	full := testPlan()
	full.Images = node.Images{Pull: []string{"docker.io/library/busybox:1"}}
	pkg := testPlan()
	pkg.ContainerdSource, pkg.Generalize, pkg.JoinerConfig, pkg.CrictlTarball = "package", false, nil, ""
	seen := map[string]bool{}
	for _, p := range []Plan{full, pkg, clusterAPIPlan()} {
		for _, s := range Steps(p) {
			name := s.Name + ".sh.tmpl"
			require.Contains(t, scripts.Names(), name, "step %s", s.Name)
			seen[name] = true
			assert.True(t, strings.HasPrefix(string(s.Script), "#!/bin/sh\n# kubenode-bake: "), "step %s starts with the header", s.Name)
		}
	}
	for _, name := range scripts.Names() {
		if filepath.Ext(name) == ".tmpl" && !slices.Contains(notSteps, name) {
			assert.True(t, seen[name], "%s is no step's", name)
		}
	}
	for _, name := range notSteps {
		assert.Contains(t, scripts.Names(), name)
	}
}

// No script is assembled in Go: no string in the package's code holds a
// script's first line.
func TestNoScriptIsBuiltInGo(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				assert.NotContains(t, lit.Value, "#!/bin/sh", "%s: a script in Go", fset.Position(lit.Pos()))
			}
			return true
		})
	}
}

// The quoting functions, as sh reads them back: q a word of its own, sq
// inside single quotes, dq inside double quotes; bare refuses anything
// the shell would read differently.
func TestScriptQuotingAsShReadsIt(t *testing.T) {
	for _, v := range []string{"plain", "it's", `a "b" \c $HOME $(id) ` + "`id`", "p%40ss w0rd\tx"} {
		for name, script := range map[string]string{
			"q":  "printf %s " + q(v),
			"sq": "printf %s '" + sq(v) + "'",
			"dq": `printf %s "` + dq(v) + `"`,
		} {
			out, err := exec.Command("sh", "-c", script).Output()
			require.NoError(t, err, script)
			assert.Equal(t, v, string(out), "%s of %q", name, v)
		}
	}
	for _, v := range []string{"", "a b", "it's", "$x", "a*", "a;b"} {
		_, err := bare(v)
		assert.Error(t, err, "bare %q", v)
	}
	got, err := bare("/etc/cloud/cloud.cfg.d/99-installer.cfg")
	require.NoError(t, err)
	assert.Equal(t, "/etc/cloud/cloud.cfg.d/99-installer.cfg", got)
	assert.Equal(t, "a\n# b", comment("a\nb"), "a title cannot end the comment line")
}
