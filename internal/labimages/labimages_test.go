// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package labimages

import (
	"archive/tar"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"
)

func buildIn(t *testing.T, cache, pause string) []Image {
	t.Helper()
	src, err := KubernetesSourceDir(context.Background(), "v1.33.13")
	require.NoError(t, err)
	images, err := Build(context.Background(), Options{PauseRef: pause, KubernetesSourceDir: src, CacheDir: cache})
	require.NoError(t, err)
	require.Len(t, images, 2)
	return images
}

// The images are what the lab's nodes run: read back from their archives.
func TestBuildPauseAndBusybox(t *testing.T) {
	cache := t.TempDir()
	images := buildIn(t, cache, "registry.k8s.io/pause:3.10")
	pause, busybox := images[0], images[1]
	assert.Equal(t, "registry.k8s.io/pause:3.10", pause.Ref)
	assert.Regexp(t, `^localhost/kubenode-lab/busybox:1\.[0-9.]+-`, busybox.Ref)

	for _, img := range images {
		i := readArchive(t, img)
		d, err := i.Digest()
		require.NoError(t, err)
		assert.Equal(t, img.Digest, d.String())
		cf, err := i.ConfigFile()
		require.NoError(t, err)
		assert.Equal(t, "linux", cf.OS)
		assert.Equal(t, "amd64", cf.Architecture)
		layers, err := i.Layers()
		require.NoError(t, err)
		require.Len(t, layers, 1)
		files := layerFiles(t, layers[0])
		if img == pause {
			assert.Equal(t, []string{"/pause"}, cf.Config.Entrypoint)
			assert.Equal(t, "65535:65535", cf.Config.User)
			assert.Equal(t, int64(0o755), files["pause"].Mode)
			assert.Greater(t, files["pause"].Size, int64(1000), "the compiled pause binary")
		} else {
			assert.Equal(t, []string{"/bin/sh"}, cf.Config.Cmd)
			assert.Equal(t, byte(tar.TypeReg), files["bin/busybox"].Typeflag)
			for _, applet := range []string{"sh", "echo", "hostname", "cat"} {
				assert.Equal(t, "busybox", files["bin/"+applet].Linkname, "applet %s", applet)
			}
		}
	}

	// Warm: the same archives, from the cache; the same recipe elsewhere
	// gives the same digests (reproducible).
	again := buildIn(t, cache, "registry.k8s.io/pause:3.10")
	assert.Equal(t, images, again)
	other := buildIn(t, t.TempDir(), "registry.k8s.io/pause:3.10")
	assert.Equal(t, images[0].Digest, other[0].Digest)
	assert.Equal(t, images[1].Digest, other[1].Digest)

	// A damaged archive is rebuilt; another pause tag is another recipe,
	// and only the newest recipe stays in the cache.
	require.NoError(t, os.WriteFile(pause.Archive, []byte("damaged"), 0o644))
	rebuilt := buildIn(t, cache, "registry.k8s.io/pause:3.10")
	assert.Equal(t, images, rebuilt)
	newer := buildIn(t, cache, "registry.k8s.io/pause:3.10.1")
	assert.NotEqual(t, filepath.Dir(images[0].Archive), filepath.Dir(newer[0].Archive))
	dirs, _ := filepath.Glob(filepath.Join(cache, "*"))
	assert.Equal(t, []string{filepath.Dir(newer[0].Archive)}, dirs)
}

// readArchive opens the OCI layout in img's archive and returns the image
// its index names img.Ref.
func readArchive(t *testing.T, img Image) v1.Image {
	t.Helper()
	i, annotations, err := img.Load(t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, img.Ref, annotations["io.containerd.image.name"], "containerd names the imported image by it")
	mt, err := i.MediaType()
	require.NoError(t, err)
	assert.Equal(t, types.OCIManifestSchema1, mt)
	return i
}

func TestBuildSaysWhatIsMissing(t *testing.T) {
	src, err := KubernetesSourceDir(context.Background(), "v1.33.13")
	require.NoError(t, err)
	_, err = Build(context.Background(), Options{PauseRef: "registry.k8s.io/pause:3.10", KubernetesSourceDir: src, CacheDir: t.TempDir(), Busybox: "/nonexistent/busybox"})
	assert.ErrorContains(t, err, "apt-get install busybox-static")
	_, err = Build(context.Background(), Options{PauseRef: "registry.k8s.io/pause:3.10", KubernetesSourceDir: src, CacheDir: t.TempDir(), CC: "/nonexistent/gcc"})
	assert.ErrorContains(t, err, "apt-get install gcc libc6-dev")
	_, err = Build(context.Background(), Options{PauseRef: "registry.k8s.io/pause:3.10", KubernetesSourceDir: t.TempDir(), CacheDir: t.TempDir()})
	assert.ErrorContains(t, err, "k8s.io/kubernetes module directory")
	_, err = Build(context.Background(), Options{PauseRef: "Not A Ref", KubernetesSourceDir: src})
	assert.ErrorContains(t, err, "pause image")
}

func TestTagFromDebianVersion(t *testing.T) {
	assert.Equal(t, "1.35.0-4-deb12u1-b1", TagFromDebianVersion("1:1.35.0-4+deb12u1+b1\n"))
	assert.Equal(t, "1.36.1-9", TagFromDebianVersion("1.36.1-9"))
}

func layerFiles(t *testing.T, l v1.Layer) map[string]*tar.Header {
	t.Helper()
	rc, err := l.Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	files := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		require.NoError(t, err)
		assert.Equal(t, int64(0), h.ModTime.Unix(), "%s: a fixed time", h.Name)
		files[h.Name] = h
	}
}

// TemplateVar is an HCL list a packer template's list(object) variable
// takes: parsed back, it holds each archive and its checksum.
func TestTemplateVar(t *testing.T) {
	images := []Image{{Archive: "/c/pause.tar", SHA256: "aa"}, {Archive: `/c/a "b".tar`, SHA256: "bb"}}
	expr, diags := hclsyntax.ParseExpression([]byte(TemplateVar(images)), "images", hcl.InitialPos)
	require.False(t, diags.HasErrors(), diags.Error())
	v, diags := expr.Value(nil)
	require.False(t, diags.HasErrors(), diags.Error())
	require.Equal(t, 2, v.LengthInt())
	second := v.Index(cty.NumberIntVal(1))
	assert.Equal(t, `/c/a "b".tar`, second.GetAttr("path").AsString())
	assert.Equal(t, "bb", second.GetAttr("sha256").AsString())
	assert.Equal(t, "[]", TemplateVar(nil))
}
