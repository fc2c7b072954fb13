package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const ownModule = "github.com/kubenode/packer-plugin-kubenode/"

// TestDependenciesPointOneWay: commands and orchestrators use components,
// components use libraries, and nothing imports a command. The joiner's
// config schema and unit names, which the library, the bake, the lab and the
// joiner all share, live in internal/joinerapi for that reason.
func TestDependenciesPointOneWay(t *testing.T) {
	components := []string{"builder/", "provisioner/", "post-processor/"}
	libraries := []string{"autounattend/", "internal/joinerapi/", "internal/powershell/", "internal/baked/", "internal/filehash/", "internal/ctxio/", "internal/udf/", "internal/winmedia/", "internal/labimages/"}
	imports := packageImports(t)
	require.NotEmpty(t, imports)
	for dir, deps := range imports {
		for _, dep := range deps {
			if !strings.HasPrefix(dep, ownModule) {
				continue
			}
			to := strings.TrimPrefix(dep, ownModule) + "/"
			if strings.HasPrefix(to, "cmd/") && !strings.HasPrefix(dir+"/", firstTwo(to)) {
				t.Errorf("%s imports the command package %s: move what they share into a package of its own", dir, dep)
			}
			for _, lib := range libraries {
				if !strings.HasPrefix(dir+"/", lib) {
					continue
				}
				for _, c := range components {
					if strings.HasPrefix(to, c) {
						t.Errorf("the library %s imports the Packer component %s", dir, dep)
					}
				}
			}
		}
	}
}

// firstTwo is "cmd/<name>/" of a path under cmd/: a command may import its
// own packages.
func firstTwo(p string) string {
	parts := strings.SplitN(p, "/", 3)
	return parts[0] + "/" + parts[1] + "/"
}

// packageImports maps each directory of the module (test files included) to
// the import paths its Go files name.
func packageImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
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
