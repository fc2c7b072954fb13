// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package labimages builds the container images the lab's nodes run, on
// this machine and from real sources, for clusters that reach no registry:
//
//   - the pause image, compiled from build/pause/linux/pause.c of the
//     k8s.io/kubernetes module release (statically, with the flags of that
//     directory's Makefile) and tagged as the sandbox image the node's
//     containerd and kubelet are configured with;
//   - a small workload image holding Debian's busybox-static, tagged under
//     localhost/kubenode-lab/.
//
// The images are written with go-containerregistry as OCI image layouts in
// a tar, which `ctr images import` reads, reproducibly (fixed file times,
// no creation time), and cached by a hash of their recipe.
package labimages

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kubenode/packer-plugin-kubenode/internal/filehash"
	"github.com/kubenode/packer-plugin-kubenode/internal/ocilayout"
)

// WorkloadRepository is where the lab's own images are tagged: a name no
// registry answers for, so a node can only have them preloaded.
const WorkloadRepository = "localhost/kubenode-lab/busybox"

// recipe changes whenever the images' layout changes, so cached archives
// of an older layout are rebuilt.
const recipe = "labimages-3"

// Image is one built image.
type Image struct {
	Ref     string `json:"ref"`     // e.g. registry.k8s.io/pause:3.10
	Archive string `json:"archive"` // the OCI layout .tar
	SHA256  string `json:"sha256"`  // hex sha256 of Archive (kubenode-bake's `images`)
	Digest  string `json:"digest"`  // the image manifest's digest, what containerd lists
}

// Options say what to build from.
type Options struct {
	// PauseRef is the pause image's reference (the sandbox image the
	// node is configured with).
	PauseRef string
	// KubernetesSourceDir is the k8s.io/kubernetes module directory that
	// holds build/pause/linux/pause.c (KubernetesSourceDir finds it).
	KubernetesSourceDir string
	// Busybox is the static busybox binary (default /bin/busybox, from
	// Debian's busybox-static).
	Busybox string
	// CacheDir holds the built archives (default
	// $KUBENODE_CACHE/lab-images, else ~/.cache/kubenode/lab-images).
	CacheDir string
	// CC is the C compiler (default gcc).
	CC string
}

// epoch is every file's time in the images: the same inputs give the same
// digests.
var epoch = ocilayout.Epoch

// Build returns the pause image and the busybox image, in that order,
// building them when the cache holds none for this recipe.
func Build(ctx context.Context, o Options) ([]Image, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	pauseC := filepath.Join(o.KubernetesSourceDir, "build", "pause", "linux", "pause.c")
	src, err := os.ReadFile(pauseC)
	if err != nil {
		return nil, fmt.Errorf("pause source: %w (KubernetesSourceDir must be a k8s.io/kubernetes module directory)", err)
	}
	busyboxSum, err := filehash.SHA256(o.Busybox)
	if err != nil {
		return nil, fmt.Errorf("busybox: %w (apt-get install busybox-static)", err)
	}
	bbVersion, err := busyboxVersion(ctx, o.Busybox)
	if err != nil {
		return nil, err
	}
	ccVersion, err := exec.CommandContext(ctx, o.CC, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w (apt-get install gcc libc6-dev)", o.CC, err)
	}
	h := sha256.New()
	for _, part := range []string{recipe, o.PauseRef, string(src), busyboxSum, bbVersion, string(ccVersion)} {
		fmt.Fprintf(h, "%d:%s\n", len(part), part)
	}
	key := hex.EncodeToString(h.Sum(nil))[:12]
	dir := filepath.Join(o.CacheDir, key)
	if images, err := cached(dir); err == nil {
		return images, nil
	}

	tmp, err := os.MkdirTemp(o.CacheDir, ".build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	pause, err := buildPause(ctx, o, pauseC, tmp)
	if err != nil {
		return nil, err
	}
	busybox, err := buildBusybox(ctx, o.Busybox, WorkloadRepository+":"+bbVersion, tmp)
	if err != nil {
		return nil, err
	}
	images := []Image{pause, busybox}
	for i := range images {
		images[i].Archive = filepath.Join(dir, filepath.Base(images[i].Archive))
	}
	data, err := json.MarshalIndent(images, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "images.json"), data, 0o644); err != nil {
		return nil, err
	}
	// Only the current recipe's images stay.
	old, _ := filepath.Glob(filepath.Join(o.CacheDir, "[0-9a-f]*"))
	for _, d := range old {
		os.RemoveAll(d)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	return images, nil
}

func (o *Options) defaults() error {
	if o.PauseRef == "" || o.KubernetesSourceDir == "" {
		return errors.New("labimages: PauseRef and KubernetesSourceDir are required")
	}
	if _, err := name.NewTag(o.PauseRef); err != nil {
		return fmt.Errorf("labimages: pause image %q: %w", o.PauseRef, err)
	}
	if o.Busybox == "" {
		o.Busybox = "/bin/busybox"
	}
	if o.CC == "" {
		o.CC = "gcc"
	}
	if o.CacheDir == "" {
		base := os.Getenv("KUBENODE_CACHE")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return err
			}
			base = filepath.Join(home, ".cache", "kubenode")
		}
		o.CacheDir = filepath.Join(base, "lab-images")
	}
	return os.MkdirAll(o.CacheDir, 0o755)
}

// cached reads a complete cache directory: its list, and archives whose
// checksums still match it.
func cached(dir string) ([]Image, error) {
	data, err := os.ReadFile(filepath.Join(dir, "images.json"))
	if err != nil {
		return nil, err
	}
	var images []Image
	if err := json.Unmarshal(data, &images); err != nil {
		return nil, err
	}
	if len(images) != 2 {
		return nil, fmt.Errorf("%s: want 2 images", dir)
	}
	for _, img := range images {
		sum, err := filehash.SHA256(img.Archive)
		if err != nil || sum != img.SHA256 {
			return nil, fmt.Errorf("%s changed", img.Archive)
		}
	}
	return images, nil
}

// buildPause compiles pause.c statically, as build/pause/Makefile does
// (CFLAGS -Os -Wall -Werror -static -DVERSION=..., then strip), and packs
// it as upstream's Dockerfile does: /pause, run as 65535:65535.
func buildPause(ctx context.Context, o Options, pauseC, dir string) (Image, error) {
	tag, err := name.NewTag(o.PauseRef)
	if err != nil {
		return Image{}, err
	}
	bin := filepath.Join(dir, "pause")
	// Upstream's VERSION is v<tag>-<git revision>; here the module's
	// release stands in for the revision (its directory is name@version).
	release := "unknown"
	if _, v, ok := strings.Cut(filepath.Base(o.KubernetesSourceDir), "@"); ok {
		release = v
	}
	version := "v" + tag.TagStr() + "-" + release
	cc := exec.CommandContext(ctx, o.CC, "-Os", "-Wall", "-Werror", "-static", "-DVERSION="+version, "-o", bin, pauseC)
	if out, err := cc.CombinedOutput(); err != nil {
		return Image{}, fmt.Errorf("compiling %s: %w\n%s(a static build needs libc6-dev: apt-get install gcc libc6-dev)", pauseC, err, out)
	}
	if out, err := exec.CommandContext(ctx, "strip", bin).CombinedOutput(); err != nil {
		return Image{}, fmt.Errorf("strip %s: %w\n%s", bin, err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return Image{}, err
	}
	layer, err := layerOf([]file{{Name: "pause", Mode: 0o755, Data: data}})
	if err != nil {
		return Image{}, err
	}
	return writeImage(layer, v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"}, tag, filepath.Join(dir, "pause.tar"))
}

// buildBusybox packs the static busybox with a link under /bin for each of
// its applets.
func buildBusybox(ctx context.Context, busybox, ref, dir string) (Image, error) {
	tag, err := name.NewTag(ref)
	if err != nil {
		return Image{}, fmt.Errorf("busybox image tag %q: %w", ref, err)
	}
	data, err := os.ReadFile(busybox)
	if err != nil {
		return Image{}, err
	}
	out, err := exec.CommandContext(ctx, busybox, "--list").Output()
	if err != nil {
		return Image{}, fmt.Errorf("%s --list: %w (is it Debian's busybox-static?)", busybox, err)
	}
	files := []file{{Name: "bin/", Mode: 0o755}, {Name: "bin/busybox", Mode: 0o755, Data: data}, {Name: "tmp/", Mode: 0o1777}}
	applets := strings.Fields(string(out))
	sort.Strings(applets)
	for _, a := range applets {
		if a != "busybox" && !strings.Contains(a, "/") {
			files = append(files, file{Name: "bin/" + a, Link: "busybox"})
		}
	}
	layer, err := layerOf(files)
	if err != nil {
		return Image{}, err
	}
	return writeImage(layer, v1.Config{Cmd: []string{"/bin/sh"}, Env: []string{"PATH=/bin"}}, tag, filepath.Join(dir, "busybox.tar"))
}

type file struct {
	Name string // a directory's ends in "/"
	Mode int64  // permission bits
	Data []byte
	Link string // a symbolic link's target
}

// layerOf is an uncompressed tar layer of files, each owned by root and
// dated epoch.
func layerOf(files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.Name, Mode: f.Mode, ModTime: epoch, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(f.Data))}
		switch {
		case f.Link != "":
			h.Typeflag, h.Linkname, h.Mode, h.Size = tar.TypeSymlink, f.Link, 0o777, 0
		case strings.HasSuffix(f.Name, "/"):
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// writeImage makes a linux/amd64 image of one layer and writes it as an
// OCI image layout in a tar, named ref in its index (the annotation
// containerd names imported images by). containerd imports the manifest as
// it is, so the digest it lists is the one returned here.
func writeImage(layer v1.Layer, cfg v1.Config, tag name.Tag, archive string) (Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return Image{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return Image{}, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Config = "linux", "amd64", cfg
	cf.Created = v1.Time{Time: epoch}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return Image{}, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	digest, err := img.Digest()
	if err != nil {
		return Image{}, err
	}
	dir := strings.TrimSuffix(archive, ".tar") + ".layout"
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return Image{}, err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          tag.String(),
		"org.opencontainers.image.ref.name": tag.TagStr(),
	})); err != nil {
		return Image{}, fmt.Errorf("writing %s: %w", dir, err)
	}
	if err := ocilayout.Tar(context.Background(), dir, archive); err != nil {
		return Image{}, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return Image{}, err
	}
	sum, err := filehash.SHA256(archive)
	if err != nil {
		return Image{}, err
	}
	return Image{Ref: tag.String(), Archive: archive, SHA256: sum, Digest: digest.String()}, nil
}

// TemplateVar renders images as the value of a packer template's `images`
// variable (`-var images=...`): an HCL list of {path, sha256} objects, the
// shape kubenode-bake's `images` blocks take.
func TemplateVar(images []Image) string {
	var parts []string
	for _, img := range images {
		parts = append(parts, fmt.Sprintf("{path = %q, sha256 = %q}", img.Archive, img.SHA256))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Load reads the image back from its archive, unpacked into dir (which
// must outlive the image: its blobs are read from there): the manifest its
// OCI layout's index names, and that index entry's annotations.
func (img Image) Load(dir string) (v1.Image, map[string]string, error) {
	if out, err := exec.Command("tar", "-xf", img.Archive, "-C", dir).CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("unpacking %s: %w: %s", img.Archive, err, out)
	}
	index, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, nil, err
	}
	m, err := index.IndexManifest()
	if err != nil {
		return nil, nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, nil, fmt.Errorf("%s: %d images in its index, want 1", img.Archive, len(m.Manifests))
	}
	loaded, err := index.Image(m.Manifests[0].Digest)
	return loaded, m.Manifests[0].Annotations, err
}

// busyboxVersion is the busybox-static package's version as a tag
// (1:1.35.0-4+deb12u1+b1 → 1.35.0-4-deb12u1-b1).
func busyboxVersion(ctx context.Context, busybox string) (string, error) {
	owner, err := exec.CommandContext(ctx, "dpkg-query", "-S", busybox).Output()
	if err != nil || !strings.HasPrefix(string(owner), "busybox-static:") {
		return "", fmt.Errorf("%s is not from Debian's busybox-static package (dpkg-query -S: %q, %v): apt-get install busybox-static", busybox, strings.TrimSpace(string(owner)), err)
	}
	v, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Version}", "busybox-static").Output()
	if err != nil {
		return "", fmt.Errorf("dpkg-query busybox-static: %w", err)
	}
	return TagFromDebianVersion(string(v)), nil
}

var notInTag = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// TagFromDebianVersion turns a Debian package version into an image tag:
// the epoch dropped, every other character a tag cannot hold made "-".
func TagFromDebianVersion(v string) string {
	v = strings.TrimSpace(v)
	if _, rest, ok := strings.Cut(v, ":"); ok {
		v = rest
	}
	return strings.Trim(notInTag.ReplaceAllString(v, "-"), "-.")
}

// KubernetesSourceDir is the directory of the k8s.io/kubernetes module at
// version, downloaded through the Go module proxy when it is not in the
// module cache already.
func KubernetesSourceDir(ctx context.Context, version string) (string, error) {
	tmp, err := os.MkdirTemp("", "kubenode-modsrc-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "k8s.io/kubernetes@"+version)
	cmd.Dir = tmp
	out, err := cmd.Output()
	var m struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &m); jerr != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download k8s.io/kubernetes@%s: %v %s", version, err, m.Error)
	}
	return m.Dir, nil
}
