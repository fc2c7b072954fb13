// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// generated matches the line Go's convention puts in generated files.
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

const (
	ownModule  = "github.com/kubenode/packer-plugin-kubenode/"
	clusterAPI = "sigs.k8s.io/cluster-api"
)

// TestDependenciesPointOneWay: commands and orchestrators use components,
// components use libraries, and nothing imports a command. The joiner's
// config schema and unit names, which the library, the bake, the lab and the
// joiner all share, live in internal/joinerapi for that reason. internal/
// holds leaf libraries only: none imports a component or a command. Inside
// the bake, the flow goes one way too: the description of the node
// (provisioner/bake/node) knows neither operating system's package nor the
// Packer part, and the Linux and Windows packages do not import each other.
// Cluster API (and the newer k8s.io it brings) stays out of this module: only
// cmd/lab/capirender, a module of its own, imports it.
func TestDependenciesPointOneWay(t *testing.T) {
	for _, problem := range layoutProblems(packageImports(t, true)) {
		t.Error(problem)
	}
}

// TestTestHelpersStayInTests: a package whose non-test files import
// testing (internal/harness, internal/golden, ...) is a test helper; only
// tests and other test helpers import it, so no command links testing
// through code of this module. What a command shares with the tests (the
// lab's control plane: internal/localcluster) is a plain package the
// helper wraps.
func TestTestHelpersStayInTests(t *testing.T) {
	for _, problem := range testHelperProblems(packageImports(t, false)) {
		t.Error(problem)
	}
}

// testHelperProblems names every package that imports a test helper from
// a non-test file (production: dir -> import paths of its non-test files)
// without being a test helper itself.
func testHelperProblems(production map[string][]string) []string {
	helpers := map[string]bool{}
	for dir, deps := range production {
		if slices.Contains(deps, "testing") {
			helpers[dir] = true
		}
	}
	if len(helpers) == 0 {
		return []string{"no test helper found: does internal/harness still import testing?"}
	}
	var problems []string
	for _, dir := range slices.Sorted(maps.Keys(production)) {
		if helpers[dir] {
			continue
		}
		for _, dep := range production[dir] {
			if pkg, ok := strings.CutPrefix(dep, ownModule); ok && helpers[pkg] {
				problems = append(problems, fmt.Sprintf("%s imports the test helper %s outside its tests: move what it needs into a plain package the helper wraps", dir, pkg))
			}
		}
	}
	return problems
}

// A command that imports the harness is reported; a helper that imports
// another, and a test of a command that does, are not.
func TestTestHelperRuleCanFail(t *testing.T) {
	helper := map[string][]string{"internal/harness": {"testing", ownModule + "internal/localcluster"}}
	with := func(dir string, deps ...string) map[string][]string {
		m := maps.Clone(helper)
		m[dir] = deps
		return m
	}
	assert.NotEmpty(t, testHelperProblems(with("cmd/lab/lab", ownModule+"internal/harness")), "the lab imports the harness")
	assert.Empty(t, testHelperProblems(with("cmd/lab/lab", ownModule+"internal/localcluster")), "the lab imports the control plane")
	assert.Empty(t, testHelperProblems(with("internal/golden", "testing", ownModule+"internal/harness")), "a helper imports a helper")
}

// The bake's packages the layout rules name.
const (
	bakeDir        = "provisioner/bake"
	bakeNode       = bakeDir + "/node"
	bakeLinux      = bakeDir + "/linux"
	bakeWindows    = bakeDir + "/windows"
	bakeGuestTest  = bakeDir + "/guesttest"
	bakeRemote     = bakeDir + "/remote"
	bakeDeliver    = bakeDir + "/deliver"
	internalPrefix = "internal/"
)

// layoutProblems names every import (dir -> import paths) that breaks a
// layout rule.
func layoutProblems(imports map[string][]string) []string {
	components := []string{"builder/", "provisioner/", "post-processor/"}
	libraries := []string{"autounattend/", internalPrefix}
	// Packages the OS packages and the description may not import, by
	// importer: the other OS, and for the description (and the glue both
	// OSes share, and their test doubles) either OS and the Packer part.
	forbidden := map[string][]string{
		bakeLinux:     {bakeWindows},
		bakeWindows:   {bakeLinux},
		bakeNode:      {bakeLinux, bakeWindows, bakeDir},
		bakeRemote:    {bakeLinux, bakeWindows, bakeDir, bakeNode},
		bakeDeliver:   {bakeLinux, bakeWindows, bakeDir, bakeNode, bakeRemote},
		bakeGuestTest: {bakeLinux, bakeWindows, bakeDir},
	}
	var problems []string
	if len(imports) == 0 {
		return []string{"no package found"}
	}
	for _, dir := range slices.Sorted(maps.Keys(imports)) {
		for _, dep := range imports[dir] {
			if dep == clusterAPI || strings.HasPrefix(dep, clusterAPI+"/") {
				problems = append(problems, fmt.Sprintf("%s imports Cluster API (%s): only cmd/lab/capirender, a module of its own, may", dir, dep))
			}
			if !strings.HasPrefix(dep, ownModule) {
				continue
			}
			pkg := strings.TrimPrefix(dep, ownModule)
			to := pkg + "/"
			if strings.HasPrefix(to, "cmd/") && !strings.HasPrefix(dir+"/", firstTwo(to)) {
				problems = append(problems, fmt.Sprintf("%s imports the command package %s: move what they share into a package of its own", dir, dep))
			}
			for _, lib := range libraries {
				if !strings.HasPrefix(dir+"/", lib) {
					continue
				}
				for _, c := range components {
					if strings.HasPrefix(to, c) {
						problems = append(problems, fmt.Sprintf("the library %s imports the Packer component %s", dir, dep))
					}
				}
			}
			if slices.Contains(forbidden[dir], pkg) {
				problems = append(problems, fmt.Sprintf("%s imports %s: the bake's flow is configuration -> description (node) -> one OS's steps, and the OS packages do not know each other", dir, dep))
			}
		}
	}
	return problems
}

// Each rule can fail: a bad import of each kind is reported.
func TestLayoutRulesCanFail(t *testing.T) {
	for name, bad := range map[string][2]string{
		"internal imports a component":            {"internal/baked", "provisioner/bake"},
		"internal imports a command":              {"internal/versions", "cmd/lab/lab"},
		"another package imports a command":       {"provisioner/bake", "cmd/lab/lab"},
		"linux imports windows":                   {bakeLinux, bakeWindows},
		"windows imports linux":                   {bakeWindows, bakeLinux},
		"the description imports linux":           {bakeNode, bakeLinux},
		"the description imports windows":         {bakeNode, bakeWindows},
		"the description imports the Packer part": {bakeNode, bakeDir},
		"the artifact server imports an OS":       {bakeDeliver, bakeLinux},
	} {
		problems := layoutProblems(map[string][]string{bad[0]: {ownModule + bad[1]}})
		assert.NotEmpty(t, problems, name)
	}
	for _, dep := range []string{clusterAPI + "/bootstrap/kubeadm/pkg/cloudinit", clusterAPI + "/api/core/v1beta2"} {
		problems := layoutProblems(map[string][]string{"cmd/lab/lab": {dep}})
		assert.NotEmpty(t, problems, "the module imports %s", dep)
	}
	assert.Empty(t, layoutProblems(map[string][]string{bakeDir: {ownModule + bakeLinux, ownModule + bakeWindows, ownModule + bakeNode}, bakeLinux: {ownModule + bakeNode, ownModule + bakeRemote}}), "the bake chooses an OS package")
}

// firstTwo is "cmd/<name>/" of a path under cmd/: a command may import its
// own packages.
func firstTwo(p string) string {
	parts := strings.SplitN(p, "/", 3)
	return parts[0] + "/" + parts[1] + "/"
}

// packageImports maps each directory of the module to the import paths
// its Go files name, those of its _test.go files too if withTests. A directory with a go.mod of its own
// (cmd/lab/capirender) is another module and is left out.
func packageImports(t *testing.T, withTests bool) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() && path != "." {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || !withTests && strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			out[dir] = append(out[dir], p)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// TestEveryGoFileCarriesTheLicenceHeader: each hand-written Go file starts
// with the licence header CONTRIBUTING.md asks for; generated files are
// left to their generator. scripts/licence-headers.sh adds it.
func TestEveryGoFileCarriesTheLicenceHeader(t *testing.T) {
	const header = "// Copyright The kubenode Authors.\n// SPDX-License-Identifier: Apache-2.0\n"
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "dist" || strings.HasPrefix(name, "output-")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if generated.Match(data) {
			return nil
		}
		checked++
		if !strings.HasPrefix(string(data), header) {
			t.Errorf("%s does not start with the licence header (run scripts/licence-headers.sh)", path)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, checked, 100, "the walk found the Go files")
}
