// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

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

// setupPin reads a version scripts/setup.sh pins (NAME=vX.Y.Z).
func setupPin(t *testing.T, name string) string {
	t.Helper()
	setup, err := os.ReadFile("scripts/setup.sh")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^` + name + `=v(\d+\.\d+\.\d+)\b`).FindSubmatch(setup)
	require.NotNil(t, m, "scripts/setup.sh pins %s=vX.Y.Z", name)
	return string(m[1])
}

// testedPacker is the packer release scripts/setup.sh builds and every test
// runs.
func testedPacker(t *testing.T) string { return setupPin(t, "PACKER_VERSION") }

// mplPacker is the MPL-licensed packer release scripts/setup.sh builds as
// well, which make validate-examples and make release validate the
// examples with: the oldest one the plugin is known to work with.
func mplPacker(t *testing.T) string { return setupPin(t, "PACKER_MPL_VERSION") }

// TestExamplesRequireTheTestedPacker: every example's packer block states
// the oldest tested release as its minimum, which packer checks before
// anything else, and the install docs say the same and name both tested
// releases.
func TestExamplesRequireTheTestedPacker(t *testing.T) {
	oldest := mplPacker(t)
	want := ">= " + oldest
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
		assert.Contains(t, string(b), "Packer "+oldest+" or newer", doc)
		assert.Contains(t, string(b), testedPacker(t), doc)
	}
}

// TestBothPackersAreInTheEnvironment: make validate-examples validates
// with the packer of KUBENODE_PACKER and, when set, KUBENODE_PACKER_MPL;
// scripts/setup.sh env sets both, to the builds of the pinned versions.
func TestBothPackersAreInTheEnvironment(t *testing.T) {
	cache := t.TempDir()
	cmd := exec.Command("bash", "scripts/setup.sh", "env")
	cmd.Env = append(os.Environ(), "KUBENODE_CACHE="+cache)
	out, err := cmd.Output()
	require.NoError(t, err, "scripts/setup.sh env")
	assert.Contains(t, string(out), `export KUBENODE_PACKER="`+filepath.Join(cache, "packer", "v"+testedPacker(t), "packer")+`"`)
	assert.Contains(t, string(out), `export KUBENODE_PACKER_MPL="`+filepath.Join(cache, "packer", "v"+mplPacker(t), "packer")+`"`)
	script, err := os.ReadFile("scripts/validate-examples.sh")
	require.NoError(t, err)
	assert.Contains(t, string(script), `validate_examples "$KUBENODE_PACKER_MPL"`)
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
