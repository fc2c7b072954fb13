// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

// bakeAttributes parses a template and returns the attributes of each of
// its kubenode-bake provisioners, evaluated with the variables' defaults
// (a variable without one is unknown).
func bakeAttributes(t *testing.T, path string) []map[string]cty.Value {
	t.Helper()
	f, diags := hclparse.NewParser().ParseHCLFile(path)
	require.False(t, diags.HasErrors(), "%s: %s", path, diags)
	top, _, diags := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "variable", LabelNames: []string{"name"}}, {Type: "build"},
	}})
	require.False(t, diags.HasErrors(), "%s: %s", path, diags)
	vars := variableDefaults(t, path)
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(vars)}}
	var out []map[string]cty.Value
	for _, build := range top.Blocks.OfType("build") {
		content, _, diags := build.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "provisioner", LabelNames: []string{"type"}}}})
		require.False(t, diags.HasErrors(), "%s: %s", path, diags)
		for _, p := range content.Blocks {
			if p.Labels[0] != "kubenode-bake" {
				continue
			}
			// The provisioner's blocks (images, registry_mirrors, dynamic)
			// are left out: only its attributes are read.
			attrs, _, diags := p.Body.PartialContent(&hcl.BodySchema{Attributes: bakeKeys})
			require.False(t, diags.HasErrors(), "%s: %s", path, diags)
			got := map[string]cty.Value{}
			for name, a := range attrs.Attributes {
				v, diags := a.Expr.Value(ctx)
				require.False(t, diags.HasErrors(), "%s: %s: %s", path, name, diags)
				got[name] = v
			}
			out = append(out, got)
		}
	}
	return out
}

// bakeKeys are the kubenode-bake keys the production checks read.
var bakeKeys = []hcl.AttributeSchema{
	{Name: "containerd_source"}, {Name: "cni"}, {Name: "install_crictl"},
	{Name: "keep_build_account"}, {Name: "generalize"}, {Name: "artifacts_dir"},
	{Name: "artifacts"}, {Name: "kubernetes_version"}, {Name: "containerd_version"},
	{Name: "download_mirrors"}, {Name: "bootstrap"}, {Name: "pull_kubeadm_images"},
}

// productionExamples are the examples built as for production, from a
// distribution's cloud image by URL, and the checksum file each image's
// directory publishes.
var productionExamples = map[string]struct{ image, sums string }{
	"examples/debian-12-cloud-node.pkr.hcl":    {"https://cloud.debian.org/images/cloud/bookworm/latest/debian-12-genericcloud-amd64.qcow2", "SHA512SUMS"},
	"examples/ubuntu-24.04-cloud-node.pkr.hcl": {"https://cloud-images.ubuntu.com/releases/noble/release/ubuntu-24.04-server-cloudimg-amd64.img", "SHA256SUMS"},
	"examples/debian-12-cloud-capi.pkr.hcl":    {"https://cloud.debian.org/images/cloud/bookworm/latest/debian-12-genericcloud-amd64.qcow2", "SHA512SUMS"},
	"examples/ubuntu-24.04-cloud-capi.pkr.hcl": {"https://cloud-images.ubuntu.com/releases/noble/release/ubuntu-24.04-server-cloudimg-amd64.img", "SHA256SUMS"},
}

// TestProductionLinuxExamples: the examples for a user's own cluster
// (joiner) and for Cluster API bake the production flow: the
// distribution's cloud image by URL, checked against the checksum file
// published beside it; containerd, runc and the CNI plugins from their
// release tarballs and the Kubernetes binaries from the official
// downloads (no artifacts_dir, no local Kubernetes binaries, no base
// disk), crictl, no CNI config (the cluster's CNI brings its own), the
// build account locked and the image generalized. The Cluster API ones
// also preload the control plane's images (pull_kubeadm_images), pick the
// build VM's firmware through a variable, and export a qcow2 and a
// containerDisk whose tag is left to its immutable default. Unset keys
// count as their defaults (provisioner/bake/config.go: tarball, none,
// true, false, true).
func TestProductionLinuxExamples(t *testing.T) {
	str := func(attrs map[string]cty.Value, key, def string) string {
		if v, ok := attrs[key]; ok && !v.IsNull() {
			require.True(t, v.IsKnown() && v.Type() == cty.String, "%s is a known string", key)
			return v.AsString()
		}
		return def
	}
	boolean := func(attrs map[string]cty.Value, key string, def bool) bool {
		if v, ok := attrs[key]; ok && !v.IsNull() {
			require.True(t, v.IsKnown() && v.Type() == cty.Bool, "%s is a known bool", key)
			return v.True()
		}
		return def
	}
	for path, want := range productionExamples {
		t.Run(path, func(t *testing.T) {
			bakes := bakeAttributes(t, path)
			require.Len(t, bakes, 1, "a kubenode-bake provisioner")
			b := bakes[0]
			assert.Equal(t, "tarball", str(b, "containerd_source", "tarball"))
			assert.Equal(t, "none", str(b, "cni", "none"))
			assert.True(t, boolean(b, "install_crictl", true), "install_crictl")
			assert.False(t, boolean(b, "keep_build_account", false), "keep_build_account")
			assert.True(t, boolean(b, "generalize", true), "generalize")
			assert.NotContains(t, b, "artifacts_dir", "the Kubernetes binaries come from dl.k8s.io")
			assert.Contains(t, b, "download_mirrors")
			assert.Contains(t, b, "kubernetes_version")

			vars := variableDefaults(t, path)
			for _, v := range []string{"kubernetes_dir", "artifacts_dir", "base_disk"} {
				assert.NotContains(t, vars, v, "no variable names local Kubernetes binaries or the lab's base disk")
			}
			blocks := hclBlocks(t, path)
			assert.Equal(t, "var.cloud_image", blocks["source"]["disk_image"])
			assert.Equal(t, "var.cloud_image_checksum", blocks["source"]["disk_image_checksum"])
			assert.Equal(t, want.image, vars["cloud_image"].AsString(), "the cloud image by URL")
			assert.Equal(t, "file:"+want.image[:strings.LastIndex(want.image, "/")+1]+want.sums, vars["cloud_image_checksum"].AsString(),
				"checked against the checksum file published beside it")

			capi := str(b, "bootstrap", "joiner") == "cluster-api"
			assert.Equal(t, strings.HasSuffix(path, "-capi.pkr.hcl"), capi, "bootstrap")
			if !capi {
				if a, ok := b["artifacts"]; ok {
					assert.Equal(t, []string{"joiner"}, keys(a), "artifacts holds the joiner only")
				}
				return
			}
			assert.NotContains(t, b, "artifacts", "no joiner, no local artifacts")
			assert.True(t, boolean(b, "pull_kubeadm_images", false), "the control plane's images preloaded")
			assert.Equal(t, "var.firmware", blocks["source"]["firmware"])
			assert.Contains(t, []string{"bios", "uefi"}, vars["firmware"].AsString())
			assert.Equal(t, `["qcow2", "containerdisk"]`, blocks["kubenode-export"]["formats"])
			assert.NotContains(t, blocks["kubenode-export"], "containerdisk_tag", "the tag is the image's own: the Kubernetes release and its digest")
		})
	}
}

// variableDefaults are a template's variables with their defaults (a
// variable without one is cty.DynamicVal).
func variableDefaults(t *testing.T, path string) map[string]cty.Value {
	t.Helper()
	f, diags := hclparse.NewParser().ParseHCLFile(path)
	require.False(t, diags.HasErrors(), "%s: %s", path, diags)
	top, _, diags := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "variable", LabelNames: []string{"name"}}}})
	require.False(t, diags.HasErrors(), "%s: %s", path, diags)
	vars := map[string]cty.Value{}
	for _, b := range top.Blocks {
		attrs, diags := b.Body.JustAttributes()
		require.False(t, diags.HasErrors(), "%s: variable %q: %s", path, b.Labels[0], diags)
		vars[b.Labels[0]] = cty.DynamicVal
		if d, ok := attrs["default"]; ok {
			v, diags := d.Expr.Value(nil)
			require.False(t, diags.HasErrors(), "%s: variable %q: %s", path, b.Labels[0], diags)
			vars[b.Labels[0]] = v
		}
	}
	return vars
}

// The bake's guest test's template parses: it bakes the Cluster API lab
// example's recipe (local Kubernetes binaries, containerd's release
// tarball from a mirror), which TestBakeGuestTestBakesTheClusterAPIExample
// holds it to.
func TestBakeGuestTestTemplateParses(t *testing.T) {
	require.NotEmpty(t, bakeAttributes(t, "provisioner/bake/testdata/bake-linux.pkr.hcl"))
}

// TestExamplesPinASupportedPair: every example installs containerd from
// its release tarballs (kubenode-bake's default; Windows always: no
// distribution package the version table knows serves the default
// Kubernetes release), lets the user choose the release through a
// containerd_version variable beside kubernetes_version, and the two
// defaults are a pair containerd's support matrix lists: the bake's own
// defaults, but on Windows Server 2019, whose scripts cover containerd 1.7
// only.
func TestExamplesPinASupportedPair(t *testing.T) {
	examples, err := filepath.Glob("examples/*.pkr.hcl")
	require.NoError(t, err)
	baking := 0
	for _, path := range examples {
		bakes := bakeAttributes(t, path)
		if len(bakes) == 0 {
			continue
		}
		baking++
		t.Run(filepath.Base(path), func(t *testing.T) {
			require.Len(t, bakes, 1, "%s: one kubenode-bake", path)
			b := bakes[0]
			if v, ok := b["containerd_source"]; ok {
				require.True(t, v.IsKnown() && !v.IsNull(), "containerd_source is a literal")
				assert.Equal(t, "tarball", v.AsString(), "containerd_source")
			}
			exprs := hclBlocks(t, path)["kubenode-bake"]
			for _, key := range []string{"kubernetes_version", "containerd_version"} {
				require.Equal(t, "var."+key, exprs[key], "kubenode-bake takes %s from the variable %s", key, key)
				v := b[key]
				require.True(t, v.IsKnown() && !v.IsNull() && v.Type() == cty.String, "variable %s has a default", key)
			}
			k, err := versions.LookupKubernetes(b["kubernetes_version"].AsString())
			require.NoError(t, err)
			c, err := versions.LookupContainerd(b["containerd_version"].AsString())
			require.NoError(t, err)
			assert.NoError(t, versions.CheckContainerd(k, c))
			if filepath.Base(path) == "windows-2019.pkr.hcl" {
				assert.True(t, strings.HasPrefix(c.Version, "1.7."), "Windows Server 2019: containerd 1.7, not %s", c.Version)
				return
			}
			assert.Equal(t, versions.Defaults.Kubernetes, k.Version, "kubernetes_version's default")
			assert.Equal(t, versions.Defaults.Containerd, c.Version, "containerd_version's default")
		})
	}
	assert.GreaterOrEqual(t, baking, 8, "examples with a kubenode-bake")
}

func keys(v cty.Value) []string {
	var out []string
	for k := range v.AsValueMap() {
		out = append(out, k)
	}
	return out
}

// TestBakeGuestTestBakesTheClusterAPIExample: the Cluster API example is
// built in CI as the bake's guest test's template
// (provisioner/bake/testdata/bake-linux.pkr.hcl), whose image the Cluster
// API end-to-end test boots. That template must bake the example's recipe:
// its source sets every key the example's does, to the same expression
// (but the names, the output folder and the accelerator the example leaves
// to a variable), its first kubenode-bake has every key and block of the
// example's, and its export writes the same formats. It adds what the
// test needs beside: a registry mirror, a second bake, a reboot and checks.
func TestBakeGuestTestBakesTheClusterAPIExample(t *testing.T) {
	example := hclBlocks(t, "examples/debian-12-capi.pkr.hcl")
	test := hclBlocks(t, "provisioner/bake/testdata/bake-linux.pkr.hcl")
	own := map[string]bool{"vm_name": true, "output_directory": true, "accelerator": true, "linux.hostname": true}
	for key, expr := range example["source"] {
		if own[key] {
			continue
		}
		assert.Equal(t, expr, test["source"][key], "source key %s", key)
	}
	require.NotEmpty(t, example["kubenode-bake"])
	for key, expr := range example["kubenode-bake"] {
		assert.Equal(t, expr, test["kubenode-bake"][key], "kubenode-bake key %s", key)
	}
	assert.Equal(t, example["kubenode-export"]["formats"], test["kubenode-export"]["formats"])
}

// hclBlocks reads a template's first source, first kubenode-bake and
// first kubenode-export: each attribute's expression as written, nested
// blocks' attributes as "block.key" and dynamic blocks as "dynamic.label".
func hclBlocks(t *testing.T, path string) map[string]map[string]string {
	t.Helper()
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	require.False(t, diags.HasErrors(), "%s: %s", path, diags)
	out := map[string]map[string]string{}
	var read func(prefix string, b *hclsyntax.Body, into map[string]string)
	read = func(prefix string, b *hclsyntax.Body, into map[string]string) {
		for name, a := range b.Attributes {
			into[prefix+name] = string(a.Expr.Range().SliceBytes(src))
		}
		for _, blk := range b.Blocks {
			if blk.Type == "dynamic" {
				into["dynamic."+blk.Labels[0]] = string(blk.Body.Range().SliceBytes(src))
				continue
			}
			read(prefix+blk.Type+".", blk.Body, into)
		}
	}
	take := func(kind string, b *hclsyntax.Body) {
		if _, done := out[kind]; done {
			return
		}
		out[kind] = map[string]string{}
		read("", b, out[kind])
	}
	for _, blk := range f.Body.(*hclsyntax.Body).Blocks {
		switch blk.Type {
		case "source":
			take("source", blk.Body)
		case "build":
			for _, p := range blk.Body.Blocks {
				if (p.Type == "provisioner" || p.Type == "post-processor") && len(p.Labels) == 1 {
					take(p.Labels[0], p.Body)
				}
			}
		}
	}
	return out
}
