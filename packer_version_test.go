package main

import (
	"os"
	"path/filepath"
	"regexp"
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
