package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testedPacker is the packer release scripts/setup.sh builds and every test
// runs: the oldest one the plugin is known to work with.
func testedPacker(t *testing.T) string {
	t.Helper()
	setup, err := os.ReadFile("scripts/setup.sh")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^PACKER_VERSION=v(\d+\.\d+\.\d+)\b`).FindSubmatch(setup)
	require.NotNil(t, m, "scripts/setup.sh pins PACKER_VERSION=vX.Y.Z")
	return string(m[1])
}

// TestExamplesRequireTheTestedPacker: every example's packer block states
// the tested release as its minimum, which packer checks before anything
// else, and the install docs say the same.
func TestExamplesRequireTheTestedPacker(t *testing.T) {
	want := ">= " + testedPacker(t)
	examples, err := filepath.Glob("examples/*.pkr.hcl")
	require.NoError(t, err)
	require.NotEmpty(t, examples)
	for _, path := range examples {
		f, diags := hclparse.NewParser().ParseHCLFile(path)
		require.False(t, diags.HasErrors(), "%s: %s", path, diags)
		content, _, diags := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "packer"}}})
		require.False(t, diags.HasErrors(), "%s: %s", path, diags)
		require.Len(t, content.Blocks, 1, "%s: one packer {} block", path)
		attrs, _, diags := content.Blocks[0].Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "required_version", Required: true}}})
		require.False(t, diags.HasErrors(), "%s: %s", path, diags)
		v, diags := attrs.Attributes["required_version"].Expr.Value(nil)
		require.False(t, diags.HasErrors(), "%s: %s", path, diags)
		assert.Equal(t, want, v.AsString(), "%s: packer { required_version }", path)
	}

	for _, doc := range []string{"docs/README.md", "docs/builders/libvirt.mdx"} {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		assert.Contains(t, string(b), `required_version = "`+want+`"`, doc)
	}
	for _, doc := range []string{"docs/README.md", "README.md"} {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		assert.Contains(t, string(b), "Packer "+testedPacker(t)+" or newer", doc)
	}
}

// TestDevUsesPackerFromPath: `make dev` installs the plugin into the packer
// on PATH when it is the tested release or newer, and only otherwise into
// the pinned build (built if missing: here a cached stand-in, so nothing is
// built). scripts/setup.sh packer-path makes that choice and says which.
func TestDevUsesPackerFromPath(t *testing.T) {
	tested := testedPacker(t)
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "scripts/setup.sh needs Go on PATH")

	fakePacker := func(dir, version string) string {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		path := filepath.Join(dir, "packer")
		require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\necho 'Packer v"+version+"'\n"), 0o755))
		return path
	}
	for _, tc := range []struct {
		name, onPath string // "" = no packer on PATH
		usesPath     bool
	}{
		{"newer on PATH", "1.99.3", true},
		{"tested release on PATH", tested, true},
		{"older on PATH", "1.6.6", false},
		{"none on PATH", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			cache := filepath.Join(tmp, "cache")
			pinned := fakePacker(filepath.Join(cache, "packer", "v"+tested), tested)
			bin := filepath.Join(tmp, "bin")
			require.NoError(t, os.MkdirAll(bin, 0o755))
			onPath := ""
			if tc.onPath != "" {
				onPath = fakePacker(bin, tc.onPath)
			}
			cmd := exec.Command("bash", "scripts/setup.sh", "packer-path")
			cmd.Env = append(os.Environ(), "KUBENODE_CACHE="+cache, "PATH="+bin+":"+filepath.Dir(goBin)+":/usr/bin:/bin")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, "scripts/setup.sh packer-path: %s", stderr.String())
			want := pinned
			if tc.usesPath {
				want = onPath
			}
			assert.Equal(t, want, strings.TrimSpace(string(out)), "the packer make dev uses")
			assert.Contains(t, stderr.String(), "packer: using "+want, "make dev says which packer it uses")
		})
	}

	assert.Contains(t, readMakefile(t)["dev"].text, "v"+tested+" or newer", "make help: dev names the tested packer release")
}
