// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kubenode/packer-plugin-kubenode/internal/filehash"
	"github.com/kubenode/packer-plugin-kubenode/internal/labimages"
	"github.com/kubenode/packer-plugin-kubenode/internal/releasemirror"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

// LinuxBake is one build of provisioner/bake/testdata/bake-linux.pkr.hcl:
// a Cluster API node image (bootstrap = "cluster-api", containerd from
// its release tarball, served by a mirror on this host) baked twice into
// the base disk under TCG, rebooted and checked from inside, exported as a zstd qcow2 and a KubeVirt containerDisk. The bake's
// guest test makes it and judges the build; the Cluster API end-to-end
// test boots its clones from the same image, so both ride on one TCG build.
type LinuxBake struct {
	Dir string // the output directory: the qcow2, the containerDisk, kubenode-manifest.json
	// Log is packer's output, Took its wall time; both empty when the
	// image came from the cache.
	Log  string
	Took time.Duration

	KubernetesDir string // kubelet, kubeadm and kubectl baked in (Kubernetes)
	Version       string // their release
	PauseImage    string // the pause image the version table names for it
	// Containerd is the containerd release baked in, from its release
	// tarball (with runc and the CNI plugins, as release files a mirror
	// serves: releasemirror).
	Containerd string
	// Images are what the bake put into containerd: the lab's pause and
	// busybox archives, and busybox pulled by a name only a registry
	// mirror serves.
	Images []Preloaded
	// Template and CheckScript are the files the build ran.
	Template, CheckScript string
	// Packer is the packer that built it: Packer's last MPL-2.0 release
	// (PackerMPL), so that CI builds one image with it (TestEndToEnd
	// builds with the pinned current release); PackerVersion is its
	// `packer version`.
	Packer        string
	PackerVersion PackerVersion
}

// Preloaded is an image the bake puts into containerd: the reference
// containerd lists it under and its digest; Archive and SHA256 for an
// archive it imports, empty for one it pulls.
type Preloaded struct{ Ref, Archive, SHA256, Digest string }

// BakeLinux builds LinuxBake's image. With fresh it always builds (the
// bake's own test); otherwise it takes the image an earlier build of the
// same recipe left in the cache, if there is one. The recipe is a hash of
// the template and check script, the packer binary and its version, the
// plugin binary, the base disk, the Kubernetes binaries and the image
// archives, so a change to any of them builds anew. A successful build
// goes into the cache ($KUBENODE_CACHE/images/bake-linux-<recipe>, one at
// a time). It builds with PackerMPL's packer, whichever test calls it, so
// that the Cluster API end-to-end test takes the bake test's image.
func BakeLinux(t testing.TB, fresh bool) LinuxBake {
	t.Helper()
	Libvirtd(t)
	root := Root()
	b := LinuxBake{
		KubernetesDir: Kubernetes(t),
		Containerd:    BakeContainerd,
		Template:      filepath.Join(root, "provisioner", "bake", "testdata", "bake-linux.pkr.hcl"),
		CheckScript:   filepath.Join(root, "provisioner", "bake", "testdata", "check-linux.sh"),
	}
	base := BaseDisk(t)
	packer := PackerMPL(t)
	b.Packer, b.PackerVersion = packer, PackerVersionOf(t, packer)
	plugins, plugin := pluginDirFor(t, packer)
	t.Logf("the bake's build runs %s (%s) with %s", b.PackerVersion, packer, filepath.Base(plugin))

	v, err := exec.Command(filepath.Join(b.KubernetesDir, "kubeadm"), "version", "-o", "short").Output()
	if err != nil {
		t.Fatalf("kubeadm version: %v", err)
	}
	b.Version = strings.TrimSpace(string(v))
	release, err := versions.LookupKubernetes(b.Version)
	if err != nil {
		t.Fatal(err)
	}
	b.PauseImage = release.PauseImage
	src, err := labimages.KubernetesSourceDir(context.Background(), b.Version)
	if err != nil {
		t.Fatal(err)
	}
	built, err := labimages.Build(context.Background(), labimages.Options{PauseRef: b.PauseImage, KubernetesSourceDir: src})
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range built {
		b.Images = append(b.Images, Preloaded{Ref: im.Ref, Archive: im.Archive, SHA256: im.SHA256, Digest: im.Digest})
	}
	pulled := Preloaded{Ref: "registry.kubenode.test/kubenode-lab/busybox:" + tagOf(built[1].Ref), Digest: built[1].Digest}
	b.Images = append(b.Images, pulled)

	// The recipe: what the image is made of. The mirror's port is not in
	// it (the image's hosts.toml names the mirror of the build it came from).
	h := sha256.New()
	for _, f := range []string{b.Template, b.CheckScript, packer, plugin,
		filepath.Join(b.KubernetesDir, "kubelet"), filepath.Join(b.KubernetesDir, "kubeadm"), filepath.Join(b.KubernetesDir, "kubectl")} {
		sum, err := filehash.SHA256(f)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s %s\n", filepath.Base(f), sum)
	}
	fmt.Fprintf(h, "packer version %s\n", b.PackerVersion)
	fmt.Fprintf(h, "base disk %s\n", base) // its path holds the hash of its recipe
	// The release files are built by version, the same bytes each time.
	fmt.Fprintf(h, "containerd %s\n", b.Containerd)
	for _, im := range b.Images {
		fmt.Fprintf(h, "image %s %s %s\n", im.Ref, im.SHA256, im.Digest)
	}
	recipe := hex.EncodeToString(h.Sum(nil))[:16]
	cache := filepath.Join(cacheRoot(t), "images")
	entry := filepath.Join(cache, "bake-linux-"+recipe)
	if !fresh {
		if _, err := os.Stat(filepath.Join(entry, "kubenode-manifest.json")); err == nil {
			t.Logf("the bake's image of this recipe, built earlier: %s", entry)
			b.Dir = entry
			return b
		}
	}

	mirror := serveMirror(t, built[1], pulled.Ref)
	rv, err := releasemirror.For(b.Version, b.Containerd)
	if err != nil {
		t.Fatal(err)
	}
	downloads, cni := ReleaseMirror(t, b.KubernetesDir, rv)
	var refs []string
	for _, im := range b.Images {
		refs = append(refs, fmt.Sprintf("%q", im.Ref))
	}
	work := t.TempDir()
	out := filepath.Join(work, "output")
	began := time.Now()
	cmd := exec.Command(packer, "build", "-color=false",
		"-var", "base_disk="+base, "-var", "vm_name=kubenode-bake-it",
		"-var", "output_directory="+out,
		"-var", "kubernetes_dir="+b.KubernetesDir,
		"-var", "kubernetes_version="+b.Version, "-var", "pause_image="+b.PauseImage,
		"-var", "images="+labimages.TemplateVar(built), "-var", "expect_images=["+strings.Join(refs, ", ")+"]",
		"-var", "mirror_endpoint="+mirror, "-var", fmt.Sprintf("pull_images=[%q]", pulled.Ref),
		"-var", "containerd_version="+b.Containerd, "-var", "cni_plugins_version="+cni,
		"-var", "download_mirrors="+hclMap(downloads),
		b.Template)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PACKER_PLUGIN_PATH="+plugins, "PACKER_CHECKPOINT_DISABLE=1", "TMPDIR="+t.TempDir())
	log, err := cmd.CombinedOutput()
	b.Log, b.Took = string(log), time.Since(began)
	t.Logf("packer build (bake twice, reboot, checks, export): %s", b.Took.Round(time.Second))
	if err != nil {
		t.Fatalf("packer build failed: %v\n%s", err, log)
	}
	// Into the cache, replacing the image of any other recipe.
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	old, _ := filepath.Glob(filepath.Join(cache, "bake-linux-*"))
	for _, o := range old {
		if err := os.RemoveAll(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := moveDir(out, entry); err != nil {
		t.Fatal(err)
	}
	b.Dir = entry
	return b
}

// BakeContainerd is the containerd release BakeLinux bakes: the bake's
// default (the version table's).
var BakeContainerd = versions.Defaults.Containerd

// hclMap is m as an HCL map(string) value, its keys sorted.
func hclMap(m map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kv = append(kv, fmt.Sprintf("%q = %q", k, m[k]))
	}
	return "{" + strings.Join(kv, ", ") + "}"
}

// serveMirror serves a registry on 127.0.0.1, which the guest reaches as
// 10.0.2.2, holding img as ref's repository and tag; it returns the
// mirror's endpoint as the guest reaches it.
func serveMirror(t testing.TB, img labimages.Image, ref string) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	image, _, err := img.Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, path, _ := strings.Cut(ref, "/")
	dest, err := name.NewTag(host+"/"+path, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(dest, image); err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(host, ":")
	return "http://10.0.2.2:" + port
}

// tagOf is ref's tag.
func tagOf(ref string) string {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return "latest"
	}
	return ref[i+1:]
}

// cacheRoot is where the harness's scripts cache what they build
// ($KUBENODE_CACHE, else ~/.cache/kubenode).
func cacheRoot(t testing.TB) string {
	if dir := os.Getenv("KUBENODE_CACHE"); dir != "" {
		return dir
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(home, ".cache", "kubenode")
}

// moveDir renames src to dst, or copies it where they are on different
// file systems, then removes src.
func moveDir(src, dst string) error {
	if err := os.Rename(src, dst); err == nil {
		return nil
	}
	tmp := dst + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if out, err := exec.Command("cp", "-a", src, tmp).CombinedOutput(); err != nil {
		return fmt.Errorf("cp -a %s %s: %w: %s", src, tmp, err, out)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	return os.RemoveAll(src)
}
