// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/distribution/reference"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/internal/filehash"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/fetch"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// NormalizeRef writes an image reference the way containerd stores it
// (and `ctr images ls` prints it): docker.io/library/ for a bare Docker
// Hub name, :latest when neither tag nor digest is given, and only the
// digest when both are (distribution/reference's ParseDockerRef, which
// containerd's importer and the CRI plugin use).
func NormalizeRef(ref string) (string, error) {
	if ref == "" || strings.TrimSpace(ref) != ref || node.OneLine(ref) != "" {
		return "", fmt.Errorf("%q is not an image reference", ref)
	}
	// containerd's own normalization (github.com/distribution/reference):
	// "localhost" and names with a "." or ":" are registries.
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", fmt.Errorf("%q is not an image reference: %w", ref, err)
	}
	// With a digest the tag goes, as containerd's ParseDockerRef drops it.
	if c, ok := named.(reference.Canonical); ok {
		if named, err = reference.WithDigest(reference.TrimNamed(named), c.Digest()); err != nil {
			return "", fmt.Errorf("%q is not an image reference: %w", ref, err)
		}
	}
	return reference.TagNameOnly(named).String(), nil
}

// ArchiveRefs reads the image references an archive holds, as containerd's
// importer names them: an OCI layout's index.json by its manifests'
// io.containerd.image.name annotation, else org.opencontainers.image.ref.name
// when that is a full reference (a tag alone would be imported under a
// made-up name); a Docker archive's manifest.json by its RepoTags.
func ArchiveRefs(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, 2)
	if n, _ := io.ReadFull(f, head); n == 2 && head[0] == 0x1f && head[1] == 0x8b {
		return nil, errors.New("it is gzip-compressed: give the plain tar (gunzip it), which `ctr images import` of containerd 1.x reads")
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	var ociLayout, dockerManifest bool
	var index []byte
	tr := tar.NewReader(bufio.NewReader(f))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("it is not a tar archive: %w", err)
		}
		switch path.Clean(hdr.Name) {
		case "oci-layout":
			ociLayout = true
		case "manifest.json":
			dockerManifest = true
		case "index.json":
			if index, err = io.ReadAll(io.LimitReader(tr, 16<<20)); err != nil {
				return nil, err
			}
		}
	}
	var refs []string
	switch {
	case ociLayout:
		if index == nil {
			return nil, errors.New("its oci-layout has no index.json")
		}
		idx, err := v1.ParseIndexManifest(bytes.NewReader(index))
		if err != nil {
			return nil, fmt.Errorf("its index.json: %w", err)
		}
		for _, m := range idx.Manifests {
			ref := m.Annotations["io.containerd.image.name"]
			if ref == "" && strings.ContainsAny(m.Annotations[v1AnnotationRefName], "/:@") {
				ref = m.Annotations[v1AnnotationRefName]
			}
			if ref != "" {
				refs = append(refs, ref)
			}
		}
	case dockerManifest:
		m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(file) })
		if err != nil {
			return nil, fmt.Errorf("its manifest.json: %w", err)
		}
		for _, d := range m {
			refs = append(refs, d.RepoTags...)
		}
	default:
		return nil, errors.New("it has neither oci-layout (OCI image layout) nor manifest.json (docker save): it is not an image archive")
	}
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		n, err := NormalizeRef(r)
		if err != nil {
			return nil, fmt.Errorf("it names an image %w", err)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// v1AnnotationRefName is the OCI image spec's reference-name annotation.
const v1AnnotationRefName = "org.opencontainers.image.ref.name"

// prepareImages checks `images`, `pull_images`, `pull_kubeadm_images` and
// `kubeadm_images`: every archive exists, has the sha256 given and names at
// least one image; every reference parses; kubeadm's images come from one
// place. It hashes the archives, so a wrong one fails `packer validate`
// before any machine boots.
func (c *Config) prepareImages() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch c.KubeadmImages {
	case "", node.KubeadmPull:
	case node.KubeadmArchives:
		if c.PullKubeadmImages {
			add("pull_kubeadm_images: kubeadm_images = %q takes kubeadm's images from the images archives alone, and pull_kubeadm_images pulls them: remove one", node.KubeadmArchives)
		}
		if len(c.Images) == 0 {
			add("kubeadm_images = %q: no images archive is given; add the archives of the images `kubeadm config images list --kubernetes-version %s` names, or set kubeadm_images = %q", node.KubeadmArchives, cmp.Or(c.KubernetesVersion, "<kubernetes_version>"), node.KubeadmPull)
		}
	default:
		add("kubeadm_images: %q is not one of %q (pulled where the archives lack them) and %q (from the images archives alone)", c.KubeadmImages, node.KubeadmPull, node.KubeadmArchives)
	}
	for i := range c.Images {
		im := &c.Images[i]
		key := fmt.Sprintf("images[%d]", i)
		im.SHA256 = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(im.SHA256)), "sha256:")
		if !fetch.IsSHA256(im.SHA256) {
			add("%s.sha256: %q is not 64 hex digits of a sha256 (sha256sum %s prints it)", key, im.SHA256, cmp.Or(im.Path, "FILE"))
		}
		if im.Path == "" {
			add("%s.path: required: a local image archive (docker save or OCI layout tar)", key)
			continue
		}
		if err := im.check(); err != nil {
			add("%s: %v", key, err)
			continue
		}
		if refs, err := ArchiveRefs(im.Path); err != nil {
			add("%s.path: %s: %v", key, im.Path, err)
		} else if len(refs) == 0 {
			add("%s.path: %s names no image (no RepoTags in manifest.json, no io.containerd.image.name or full org.opencontainers.image.ref.name in index.json), "+
				"so containerd would import it under a made-up name; tag the image when you save it (docker save REPO:TAG)", key, im.Path)
		}
	}
	for i, ref := range c.PullImages {
		if _, err := NormalizeRef(ref); err != nil {
			add("pull_images[%d]: %v", i, err)
		}
	}
	return errs
}

// check says whether the archive is there and has its sha256 (when that is
// well-formed).
func (im ImageArchive) check() error {
	if fi, err := os.Stat(im.Path); err != nil {
		return fmt.Errorf("path: %w", err)
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("path: %s is not a file", im.Path)
	}
	if !fetch.IsSHA256(im.SHA256) {
		return nil
	}
	got, err := filehash.SHA256(im.Path)
	if err != nil {
		return fmt.Errorf("path: %w", err)
	}
	if got != im.SHA256 {
		return fmt.Errorf("%s has sha256 %s, sha256 says %s: give the archive this checksum is of, or its checksum", im.Path, got, im.SHA256)
	}
	return nil
}

// checkImageArchives checks every archive again, before anything goes to
// the guest: a file may change between `packer validate` and the build.
func (c *Config) checkImageArchives() error {
	var errs *packersdk.MultiError
	for i, im := range c.Images {
		if err := im.check(); err != nil {
			errs = packersdk.MultiErrorAppend(errs, fmt.Errorf("images[%d]: %w", i, err))
		}
	}
	if errs != nil {
		return fmt.Errorf("nothing was uploaded: %w", errs)
	}
	return nil
}

// imageArtifactPrefix starts the artifact name of an images archive.
const imageArtifactPrefix = "image:"

// imagePlan reads the archives' references and names their files in the
// staging directory; it returns the uploads too (as artifacts named
// `image:<file>`, whose checksums the manifest records).
func (c *Config) imagePlan() (node.Images, []versions.Artifact, error) {
	im := node.Images{Kubeadm: c.kubeadmImages()}
	var arts []versions.Artifact
	for i, a := range c.Images {
		refs, err := ArchiveRefs(a.Path)
		if err == nil && len(refs) == 0 {
			err = errors.New("names no image")
		}
		if err != nil {
			return node.Images{}, nil, fmt.Errorf("images[%d].path: %s: %w", i, a.Path, err)
		}
		file := fmt.Sprintf("image-%d-%s", i+1, safeFileName(path.Base(strings.ReplaceAll(a.Path, `\`, "/"))))
		im.Archives = append(im.Archives, node.ImageFile{FileName: file, SHA256: a.SHA256, Refs: refs})
		arts = append(arts, versions.Artifact{Name: imageArtifactPrefix + file, FileName: file, Local: a.Path, SHA256: a.SHA256})
	}
	for _, ref := range c.PullImages {
		n, err := NormalizeRef(ref)
		if err != nil {
			return node.Images{}, nil, fmt.Errorf("pull_images: %w", err)
		}
		if !slices.Contains(im.Pull, n) {
			im.Pull = append(im.Pull, n)
		}
	}
	return im, arts, nil
}

// kubeadmImages is where kubeadm's images come from (node.Images.Kubeadm):
// kubeadm_images, or pull with pull_kubeadm_images.
func (c *Config) kubeadmImages() string {
	if c.KubeadmImages == "" && c.PullKubeadmImages {
		return node.KubeadmPull
	}
	return c.KubeadmImages
}

// safeFileName keeps letters, digits, dot, dash and underscore.
func safeFileName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// warnPauseImage warns when nothing puts the pause image into the image:
// every node would pull it when it starts its first Pod, which an
// air-gapped node cannot. kubeadmPause is kubeadm's pause image for the
// Kubernetes version, which kubeadm_images preloads.
func warnPauseImage(ui packersdk.Ui, im node.Images, pause, kubeadmPause string) {
	want, err := NormalizeRef(pause)
	if err != nil {
		return
	}
	if slices.Contains(im.Refs(), want) {
		return
	}
	if kp, err := NormalizeRef(kubeadmPause); im.Kubeadm != "" && err == nil && kp == want {
		return
	}
	ui.Error(fmt.Sprintf("kubenode-bake: warning: the pause image %s is not preloaded (no images archive holds it, pull_images does not name it, kubeadm_images does not preload it): "+
		"every node will pull it when it starts its first Pod, which fails on an air-gapped node; add an images archive with it, or list it in pull_images", pause))
}
