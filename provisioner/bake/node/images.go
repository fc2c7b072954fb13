// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package node

import (
	"slices"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
)

// Step name of the image preload, on Linux and Windows.
const StepImages = "images"

// Labels the images step sets on every image it preloads. containerd's CRI
// plugin reports an image labelled io.cri-containerd.pinned=pinned as
// pinned (containerd 1.7.3 and later: pkg/cri/store/image/image.go reads
// labels.PinnedImageLabelKey), and the kubelet's image garbage collection
// never removes a pinned image. The archive label lets a second bake see
// that an archive is imported already.
const (
	PinnedLabel       = "io.cri-containerd.pinned=pinned"
	ArchiveLabelKey   = "kubenode.io/archive-sha256"
	ContainerdK8sNS   = "k8s.io"
	ImageListedPrefix = "image: "
	// KubeadmImagePrefix starts the lines the images step prints for
	// each image `kubeadm config images list` names.
	KubeadmImagePrefix = "kubeadm image: "
)

// Where the images step takes kubeadm's images from (Images.Kubeadm).
const (
	// KubeadmPull pulls those the archives do not hold.
	KubeadmPull = "pull"
	// KubeadmArchives takes them from the archives alone: one missing
	// fails the step.
	KubeadmArchives = "archives"
)

// Images is what the images step puts into containerd's k8s.io namespace.
type Images struct {
	// Archives are uploaded to the staging directory.
	Archives []ImageFile
	// Pull are references pulled in the guest (normalized).
	Pull []string
	// Kubeadm preloads every image `kubeadm config images list` names for
	// the plan's Kubernetes version, from KubeadmPull or KubeadmArchives;
	// empty: none. Linux only.
	Kubeadm string
}

// ImageFile is one uploaded archive.
type ImageFile struct {
	// FileName is its name in the staging directory.
	FileName string
	// SHA256 is its checksum (hex).
	SHA256 string
	// Refs are the (normalized) references it holds.
	Refs []string
}

// Empty says there is nothing to preload: no images step.
func (im Images) Empty() bool { return len(im.Archives) == 0 && len(im.Pull) == 0 && im.Kubeadm == "" }

// Refs are every reference the images step must leave in containerd
// (kubeadm's are known on the guest only).
func (im Images) Refs() []string {
	var out []string
	for _, a := range im.Archives {
		out = append(out, a.Refs...)
	}
	return append(out, im.Pull...)
}

// ParseImageListing reads the "image: REF DIGEST" lines the images step
// prints after its import.
func ParseImageListing(out string) []baked.Image {
	images := []baked.Image{}
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), ImageListedPrefix)
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || !strings.HasPrefix(fields[1], "sha256:") {
			continue
		}
		img := baked.Image{Name: fields[0], Digest: fields[1]}
		if !slices.Contains(images, img) {
			images = append(images, img)
		}
	}
	return images
}

// ParseKubeadmImages reads the "kubeadm image: REF" lines the images step
// prints: every image kubeadm named, in its order.
func ParseKubeadmImages(out string) []string {
	var refs []string
	for _, line := range strings.Split(out, "\n") {
		ref, ok := strings.CutPrefix(strings.TrimSpace(line), KubeadmImagePrefix)
		if ok && ref != "" && !strings.ContainsAny(ref, " \t") && !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
	}
	return refs
}
