// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	registryimage "github.com/hashicorp/packer-plugin-sdk/packer/registry/image"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
)

// FactsKey is the artifact state key under which the builder publishes
// ImageFacts, as a JSON string: Packer hands artifacts to post-processors
// over RPC, and a string is what survives that encoding whatever it holds.
const FactsKey = "kubenode.image_facts"

// ImageFacts is what the builder tells later components about the image.
type ImageFacts struct {
	OSFamily string `json:"os_family"` // "windows", "linux" or "unknown"
	// OSVersion is the Windows Server release the build was configured
	// for; "" for Linux, whose release only the guest knows.
	OSVersion string `json:"os_version"`
	OSEdition string `json:"os_edition,omitempty"`
	// SeedFlavor is how a Linux install was seeded (`linux.flavor`:
	// cloud-init, preseed, ...), not the OS.
	SeedFlavor   string `json:"seed_flavor,omitempty"`
	Firmware     string `json:"firmware"`
	Communicator string `json:"communicator"`
	Accelerator  string `json:"accelerator"`
	// Inputs are the files the build started from (the install ISO or
	// base disk, virtio-win, extra CD-ROMs), for the image's provenance.
	Inputs []Input `json:"inputs,omitempty"`
	// ConfigSHA256 is the digest of the builder's configuration
	// (confighash.Sum), for the image's provenance.
	ConfigSHA256 string `json:"config_sha256,omitempty"`
}

// Input is a file the build started from.
type Input struct {
	// Name is its key in the configuration: iso_url, disk_image,
	// virtio_win_iso, extra_cdroms[0].
	Name string `json:"name"`
	// URI is where it came from: its URL, or its absolute path.
	URI string `json:"uri"`
	// SHA256 is its digest (hex): the sha256 checksum it was checked
	// against, else computed from the file; empty when the file was gone.
	SHA256 string `json:"sha256,omitempty"`
}

// ReadImageFacts returns the facts an artifact carries, if any.
func ReadImageFacts(state func(string) interface{}) (ImageFacts, bool) {
	var f ImageFacts
	s, ok := state(FactsKey).(string)
	if !ok || json.Unmarshal([]byte(s), &f) != nil {
		return f, false
	}
	return f, true
}

// Artifact is the finished disk: files in output_directory, or a volume
// left in a storage pool (keep_in_pool).
type Artifact struct {
	dir    string
	files  []string
	pool   string
	volume string
	// StateData carries what later components need (kubenode-export,
	// kubenode-bake): see generatedData.
	StateData map[string]interface{}
	// uri is libvirt_uri, where a kept volume lives.
	uri string
	// source is disk_image (an absolute path or a URL), "" after an install
	// from ISO.
	source string
	// labels describe the image to HCP Packer (imageLabels).
	labels map[string]string
}

// Providers of the images reported to HCP Packer: an image file is a QEMU
// disk image; a kept volume lives in a libvirt storage pool.
const (
	ProviderQEMU    = "qemu"
	ProviderLibvirt = "libvirt"
)

func (*Artifact) BuilderId() string { return BuilderID }

func (a *Artifact) Files() []string { return a.files }

func (a *Artifact) Id() string {
	if a.volume != "" {
		return a.pool + "/" + a.volume
	}
	if len(a.files) > 0 {
		return a.files[0]
	}
	return ""
}

func (a *Artifact) String() string {
	if a.volume != "" {
		return fmt.Sprintf("Volume %s in libvirt storage pool %s", a.volume, a.pool)
	}
	return fmt.Sprintf("Disk image in %s: %s", a.dir, strings.Join(a.files, ", "))
}

func (a *Artifact) State(name string) interface{} {
	if name == registryimage.ArtifactStateURI {
		// An untyped nil when there is no image: Packer tests the
		// interface against nil, which a nil *Image is not.
		if img := a.registryImage(); img != nil {
			return img
		}
		return nil
	}
	return a.StateData[name]
}

// registryImage is the image as HCP Packer records it: a file by its
// absolute path (region: its directory, as Packer's file builder does), a
// kept volume as pool/volume (region: the libvirt URI). nil when the build
// left no image.
func (a *Artifact) registryImage() *registryimage.Image {
	img := &registryimage.Image{SourceImageID: a.source, Labels: map[string]string{}}
	for k, v := range a.labels {
		img.Labels[k] = v
	}
	switch {
	case a.volume != "":
		img.ProviderName, img.ProviderRegion, img.ImageID = ProviderLibvirt, a.uri, a.Id()
	case len(a.files) > 0:
		img.ProviderName, img.ImageID = ProviderQEMU, absPath(a.files[0])
		img.ProviderRegion = filepath.Dir(img.ImageID)
	default:
		return nil
	}
	return img
}

// imageLabels are the HCP Packer labels of an image: what the builder was
// configured with and, when kubenode-bake ran, what the guest reported and
// the versions and bootstrap baked in. Packer merges the labels of all a
// build's images into one map, so only labels true of the whole build
// belong here. Empty values are left out.
func imageLabels(f ImageFacts, rec *baked.Record) map[string]string {
	l := map[string]string{
		"os_family":   f.OSFamily,
		"os_version":  f.OSVersion,
		"os_edition":  f.OSEdition,
		"seed_flavor": f.SeedFlavor,
		"firmware":    f.Firmware,
	}
	if rec == nil {
		return baked.Labels(l, nil)
	}
	l["os_id"], l["os_name"], l["os_build"] = rec.OS.ID, rec.OS.Name, rec.OS.Build
	if rec.OS.Version != "" {
		l["os_version"] = rec.OS.Version
	}
	return baked.Labels(l, &rec.Facts)
}

// absPath is p made absolute against the working directory packer runs
// in; p itself if that fails or p is a URL.
func absPath(p string) string {
	if strings.Contains(p, "://") || strings.Contains(p, "::") {
		return p
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// Destroy removes the files (a kept volume is the user's to delete).
func (a *Artifact) Destroy() error {
	if a.dir != "" {
		return os.RemoveAll(a.dir)
	}
	return nil
}
