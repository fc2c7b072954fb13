// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclparse"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// dockerArchive writes a `docker save` style archive of a small random
// image under the given tags.
func dockerArchive(t *testing.T, dir string, tags ...string) string {
	t.Helper()
	img, err := random.Image(64, 1)
	require.NoError(t, err)
	refs := map[name.Reference]v1.Image{}
	for _, tag := range tags {
		ref, err := name.NewTag(tag)
		require.NoError(t, err)
		refs[ref] = img
	}
	file := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(strings.Join(tags, "+"))+".tar")
	require.NoError(t, tarball.MultiRefWriteToFile(file, refs))
	return file
}

// ociArchive writes an OCI layout tar whose index.json has one manifest per
// annotation set.
func ociArchive(t *testing.T, dir, base string, annotations ...map[string]string) string {
	t.Helper()
	idx := v1.IndexManifest{SchemaVersion: 2, MediaType: "application/vnd.oci.image.index.v1+json"}
	for i, a := range annotations {
		idx.Manifests = append(idx.Manifests, v1.Descriptor{
			MediaType: "application/vnd.oci.image.manifest.v1+json", Size: int64(i + 1),
			Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat(string(rune('a'+i)), 64)}, Annotations: a,
		})
	}
	index, err := json.Marshal(idx)
	require.NoError(t, err)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)}, {"./index.json", index}} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write(f.data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	file := filepath.Join(dir, base)
	require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o644))
	return file
}

func fileSHA(t *testing.T, file string) string {
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func TestNormalizeRef(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                            "docker.io/library/busybox:latest",
		"busybox:1.36":                       "docker.io/library/busybox:1.36",
		"docker.io/busybox:1.36":             "docker.io/library/busybox:1.36",
		"index.docker.io/library/busybox":    "docker.io/library/busybox:latest",
		"example/app:v1":                     "docker.io/example/app:v1",
		"registry.k8s.io/pause:3.10":         "registry.k8s.io/pause:3.10",
		"localhost:5000/pause":               "localhost:5000/pause:latest",
		"localhost/kubenode-lab/busybox:1":   "localhost/kubenode-lab/busybox:1",
		"registry.k8s.io/coredns/coredns:v1": "registry.k8s.io/coredns/coredns:v1",
		"registry.k8s.io/pause@sha256:" + strings.Repeat("ab", 32):      "registry.k8s.io/pause@sha256:" + strings.Repeat("ab", 32),
		"registry.k8s.io/pause:3.10@sha256:" + strings.Repeat("ab", 32): "registry.k8s.io/pause@sha256:" + strings.Repeat("ab", 32),
	} {
		got, err := NormalizeRef(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, bad := range []string{"", " busybox", "Busy Box", "registry.k8s.io/pause:", "a\nb", "registry.k8s.io/pause@sha256:12"} {
		_, err := NormalizeRef(bad)
		assert.Error(t, err, "%q", bad)
	}
}

// ArchiveRefs names images as containerd's importer does.
func TestArchiveRefs(t *testing.T) {
	dir := t.TempDir()
	gz := filepath.Join(dir, "image.tar.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	data, err := os.ReadFile(dockerArchive(t, dir, "busybox:1.36"))
	require.NoError(t, err)
	_, _ = zw.Write(data)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(gz, buf.Bytes(), 0o644))
	notTar := filepath.Join(dir, "not.tar")
	require.NoError(t, os.WriteFile(notTar, []byte(strings.Repeat("x", 1024)), 0o644))
	var empty bytes.Buffer
	tw := tar.NewWriter(&empty)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "README", Size: 1, Mode: 0o644, Typeflag: tar.TypeReg}))
	_, _ = tw.Write([]byte("x"))
	require.NoError(t, tw.Close())
	other := filepath.Join(dir, "other.tar")
	require.NoError(t, os.WriteFile(other, empty.Bytes(), 0o644))

	for _, c := range []struct {
		name    string
		file    string
		want    []string
		wantErr string
	}{
		{"docker save, two tags", dockerArchive(t, dir, "busybox:1.36", "registry.k8s.io/pause:3.10"),
			[]string{"docker.io/library/busybox:1.36", "registry.k8s.io/pause:3.10"}, ""},
		{"OCI, containerd's annotation wins", ociArchive(t, dir, "a.tar",
			map[string]string{"io.containerd.image.name": "registry.k8s.io/pause:3.10", "org.opencontainers.image.ref.name": "3.10"}),
			[]string{"registry.k8s.io/pause:3.10"}, ""},
		{"OCI, full ref.name", ociArchive(t, dir, "b.tar",
			map[string]string{"org.opencontainers.image.ref.name": "example.com/app:v1"}, map[string]string{"org.opencontainers.image.ref.name": "busybox:1.36"}),
			[]string{"example.com/app:v1", "docker.io/library/busybox:1.36"}, ""},
		{"OCI, a tag alone names nothing", ociArchive(t, dir, "c.tar", map[string]string{"org.opencontainers.image.ref.name": "latest"}), []string{}, ""},
		{"gzip", gz, nil, "gzip-compressed"},
		{"not a tar", notTar, nil, "not a tar archive"},
		{"a tar of something else", other, nil, "neither oci-layout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ArchiveRefs(c.file)
			if c.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.wantErr)
				return
			}
			require.NoError(t, err)
			// A docker archive's tags come in the order its writer chose.
			assert.ElementsMatch(t, c.want, got)
			assert.NotNil(t, got)
		})
	}
}

// Prepare lists every problem of images and pull_images at once, each
// naming its key.
func TestPrepareImagesNamesEveryProblem(t *testing.T) {
	dir := t.TempDir()
	good := dockerArchive(t, dir, "registry.k8s.io/pause:3.10")
	noRefs := ociArchive(t, dir, "norefs.tar", map[string]string{"org.opencontainers.image.ref.name": "latest"})
	var c Config
	err := c.Prepare(map[string]any{
		"download_cache_dir": t.TempDir(),
		"images": []map[string]any{
			{"path": good, "sha256": "SHA256:" + strings.ToUpper(fileSHA(t, good))},
			{"path": filepath.Join(dir, "missing.tar"), "sha256": fileSHA(t, good)},
			{"path": good, "sha256": "abc"},
			{"path": good, "sha256": strings.Repeat("0", 64)},
			{"path": noRefs, "sha256": fileSHA(t, noRefs)},
		},
		"pull_images":         []string{"registry.k8s.io/kube-proxy:v1.33.13", "not a ref"},
		"pull_kubeadm_images": true,
		"guest_os_type":       "windows",
	})
	require.Error(t, err)
	msg := err.Error()
	assert.NotContains(t, msg, "images[0]", "the good archive, its checksum given as sha256:UPPER")
	assert.Contains(t, msg, "images[1]: path: stat "+filepath.Join(dir, "missing.tar"))
	assert.Contains(t, msg, `images[2].sha256: "abc" is not 64 hex digits`)
	assert.Contains(t, msg, "images[3]: "+good+" has sha256 "+fileSHA(t, good)+", sha256 says "+strings.Repeat("0", 64))
	assert.Contains(t, msg, "images[4].path: "+noRefs+" names no image")
	assert.Contains(t, msg, `pull_images[1]: "not a ref" is not an image reference`)
	assert.NotContains(t, msg, "pull_images[0]")
	assert.Contains(t, msg, "pull_kubeadm_images: kubeadm's images are the Linux control plane's")
	assert.Equal(t, fileSHA(t, good), c.Images[0].SHA256, "normalized")
}

// A build whose archive went missing or changed after `packer validate`
// fails before anything reaches the guest.
func TestProvisionChecksImagesBeforeUpload(t *testing.T) {
	for name, spoil := range map[string]func(string) error{
		"missing":    os.Remove,
		"mismatched": func(f string) error { return os.WriteFile(f, []byte("other bytes"), 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			a := dockerArchive(t, dir, "registry.k8s.io/pause:3.10")
			b := dockerArchive(t, dir, "busybox:1.36")
			var p Provisioner
			require.NoError(t, p.Prepare(map[string]any{
				"download_cache_dir": t.TempDir(), "guest_os_type": "linux",
				"images": []map[string]any{{"path": a, "sha256": fileSHA(t, a)}, {"path": b, "sha256": fileSHA(t, b)}},
			}))
			require.NoError(t, spoil(b))
			comm := &packersdk.MockCommunicator{}
			err := p.Provision(context.Background(), guesttest.NewUI(), comm, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "nothing was uploaded")
			assert.Contains(t, err.Error(), "images[1]: ")
			assert.NotContains(t, err.Error(), "images[0]")
			assert.False(t, comm.UploadCalled, "nothing uploaded")
			assert.False(t, comm.StartCalled, "nothing run on the guest")
		})
	}
}

func TestWarnPauseImage(t *testing.T) {
	archive := node.Images{Archives: []node.ImageFile{{Refs: []string{"registry.k8s.io/pause:3.10"}}}}
	for _, c := range []struct {
		name   string
		im     node.Images
		pause  string
		warned bool
	}{
		{"nothing preloaded", node.Images{}, "registry.k8s.io/pause:3.10", true},
		{"in an archive", archive, "registry.k8s.io/pause:3.10", false},
		{"another pause in the archive", archive, "registry.k8s.io/pause:3.9", true},
		{"pulled, written unnormalized", node.Images{Pull: []string{"docker.io/library/pause:1"}}, "pause:1", false},
		{"kubeadm's", node.Images{Kubeadm: node.KubeadmPull}, "registry.k8s.io/pause:3.10", false},
		{"not kubeadm's", node.Images{Kubeadm: node.KubeadmPull}, "example.com/pause:3.10", true},
	} {
		ui := &packersdk.MockUi{}
		warnPauseImage(ui, c.im, c.pause, "registry.k8s.io/pause:3.10")
		assert.Equal(t, c.warned, ui.ErrorCalled, c.name)
		if c.warned {
			assert.Contains(t, ui.ErrorMessage, "warning: the pause image "+c.pause+" is not preloaded", c.name)
			assert.Contains(t, ui.ErrorMessage, "air-gapped", c.name)
		}
	}
}

// The blocks decode from HCL as users write them (the generated spec),
// through Prepare.
func TestImagesAndMirrorsFromHCL(t *testing.T) {
	dir := t.TempDir()
	a := dockerArchive(t, dir, "registry.k8s.io/pause:3.10")
	src := fmt.Sprintf(`
download_cache_dir = %q
images {
  path   = %q
  sha256 = %q
}
pull_images         = ["registry.k8s.io/coredns/coredns:v1.12.0"]
pull_kubeadm_images = true
registry_mirrors {
  registry    = "docker.io"
  endpoints   = ["https://mirror.example.com"]
  skip_verify = true
}
registry_mirrors {
  registry  = "_default"
  endpoints = ["http://10.0.2.2:5000"]
}
`, t.TempDir(), a, fileSHA(t, a))
	f, diags := hclparse.NewParser().ParseHCL([]byte(src), "bake.pkr.hcl")
	require.False(t, diags.HasErrors(), diags.Error())
	var p Provisioner
	v, diags := hcldec.Decode(f.Body, p.ConfigSpec(), nil)
	require.False(t, diags.HasErrors(), diags.Error())
	require.NoError(t, p.Prepare(v))
	c := p.config
	assert.Equal(t, []ImageArchive{{Path: a, SHA256: fileSHA(t, a)}}, c.Images)
	assert.Equal(t, []string{"registry.k8s.io/coredns/coredns:v1.12.0"}, c.PullImages)
	assert.True(t, c.PullKubeadmImages)
	assert.Equal(t, []RegistryMirror{
		{Registry: "docker.io", Endpoints: []string{"https://mirror.example.com"}, SkipVerify: true},
		{Registry: "_default", Endpoints: []string{"http://10.0.2.2:5000"}},
	}, c.RegistryMirrors)
}

// kubeadm_images: pull or archives; archives needs archives and no
// pull_kubeadm_images; pull_kubeadm_images alone is pull.
func TestKubeadmImagesKey(t *testing.T) {
	dir := t.TempDir()
	a := dockerArchive(t, dir, "registry.k8s.io/pause:3.10")
	archives := []map[string]any{{"path": a, "sha256": fileSHA(t, a)}}
	for _, c := range []struct {
		name string
		raw  map[string]any
		want string // the plan's Images.Kubeadm, or an error's text
		err  bool
	}{
		{"none", map[string]any{}, "", false},
		{"pull_kubeadm_images", map[string]any{"pull_kubeadm_images": true}, node.KubeadmPull, false},
		{"pull", map[string]any{"kubeadm_images": "pull"}, node.KubeadmPull, false},
		{"archives", map[string]any{"kubeadm_images": "archives", "images": archives}, node.KubeadmArchives, false},
		{"archives and pull_kubeadm_images", map[string]any{"kubeadm_images": "archives", "images": archives, "pull_kubeadm_images": true}, "pull_kubeadm_images: kubeadm_images = \"archives\" takes kubeadm's images from the images archives alone", true},
		{"archives without archives", map[string]any{"kubeadm_images": "archives", "kubernetes_version": "v1.33.13"}, "kubeadm_images = \"archives\": no images archive is given; add the archives of the images `kubeadm config images list --kubernetes-version v1.33.13` names", true},
		{"unknown", map[string]any{"kubeadm_images": "registry"}, `kubeadm_images: "registry" is not one of "pull"`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var cfg Config
			c.raw["download_cache_dir"] = t.TempDir()
			err := cfg.Prepare(c.raw)
			if c.err {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.want)
				return
			}
			require.NoError(t, err)
			im, _, err := cfg.imagePlan()
			require.NoError(t, err)
			assert.Equal(t, c.want, im.Kubeadm)
		})
	}
}
