//go:build e2e

package lab_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/cmd/lab/lab"
	"github.com/kubenode/packer-plugin-kubenode/post-processor/export"
)

// The lab's joiner image, cached by a hash of its recipe: TestEndToEnd
// builds it and leaves a copy here; TestClusterAPI boots that copy as its
// negative control, and builds it only when no run left one for the same
// recipe. One image is kept; a new recipe replaces it.

// labImageKey hashes what goes into the image: the template, packer, the
// plugin and joiner binaries (built with -trimpath, so the same source
// gives the same bytes), the Kubernetes binaries, the base disk (its path
// names its own recipe), the accelerator and, for the production template,
// the containerd and CNI plugins releases and the node labels (the
// release files are packed from pinned sources by version; the mirror's
// address changes each run and does not count). The lab's two container
// images are left out: they are built from the same pinned sources (the
// Kubernetes release's pause.c, Debian's busybox-static), which the
// Kubernetes binaries and the base disk already stand for.
func labImageKey(t *testing.T, o lab.Options) string {
	t.Helper()
	h := sha256.New()
	template := o.Template
	if template == "" {
		template = filepath.Join(o.Root, "examples", "debian-12-node.pkr.hcl")
		if o.Releases != nil {
			template = filepath.Join(o.Root, "examples", "debian-12-cloud-node.pkr.hcl")
		}
	}
	for _, f := range []string{template, o.Packer, o.Plugin, o.Joiner,
		filepath.Join(o.KubernetesDir, "kubelet"), filepath.Join(o.KubernetesDir, "kubeadm"), filepath.Join(o.KubernetesDir, "kubectl")} {
		fmt.Fprintf(h, "%s %s\n", filepath.Base(f), sum(t, f))
	}
	fmt.Fprintf(h, "base disk %s\naccelerator %q\n", o.BaseDisk, o.Accelerator)
	if r := o.Releases; r != nil {
		fmt.Fprintf(h, "containerd %q\ncni plugins %q\nnode labels %v\n", r.Containerd, r.CNIPlugins, r.NodeLabels)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// labImageCache is $KUBENODE_CACHE/e2e-lab-image (else ~/.cache/kubenode/...).
func labImageCache(t *testing.T) string {
	t.Helper()
	base := os.Getenv("KUBENODE_CACHE")
	if base == "" {
		home, err := os.UserHomeDir()
		require.NoError(t, err)
		base = filepath.Join(home, ".cache", "kubenode")
	}
	return filepath.Join(base, "e2e-lab-image")
}

// cacheLabImage copies the image directory an e2e run built into the
// cache under its recipe's key, replacing any other recipe's image.
func cacheLabImage(t *testing.T, key, imageDir string) {
	t.Helper()
	cache := labImageCache(t)
	dst := filepath.Join(cache, key)
	if _, err := os.Stat(filepath.Join(dst, export.ManifestFile)); err == nil {
		return
	}
	// One image is kept: the other recipes' go (and any copy an
	// interrupted run left) before this one is copied in.
	require.NoError(t, os.RemoveAll(cache))
	require.NoError(t, os.MkdirAll(cache, 0o755))
	tmp, err := os.MkdirTemp(cache, ".partial-")
	require.NoError(t, err)
	defer os.RemoveAll(tmp)
	out, err := exec.Command("cp", "-a", imageDir+"/.", tmp).CombinedOutput()
	require.NoError(t, err, "cp: %s", out)
	require.NoError(t, os.Rename(tmp, dst))
	t.Logf("the lab's image is cached for other tests as %s", dst)
}

// cachedLabImage returns the directory of the lab's joiner image for o's
// recipe, building it with lab.BuildImage when the cache has none.
func cachedLabImage(t *testing.T, o lab.Options) string {
	t.Helper()
	key := labImageKey(t, o)
	dir := filepath.Join(labImageCache(t), key)
	if _, err := os.Stat(filepath.Join(dir, export.ManifestFile)); err == nil {
		t.Logf("the lab's joiner image of this recipe is cached: %s", dir)
		return dir
	}
	t.Logf("no cached joiner image for recipe %s: building it", key)
	o.ImageDir = filepath.Join(t.TempDir(), "joiner-image")
	o.WorkDir = filepath.Join(t.TempDir(), "joiner-image-work")
	_, _, err := lab.BuildImage(context.Background(), o)
	require.NoError(t, err)
	cacheLabImage(t, key, o.ImageDir)
	return dir
}
