// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package export

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	registryimage "github.com/hashicorp/packer-plugin-sdk/packer/registry/image"

	"github.com/kubenode/packer-plugin-kubenode/builder/libvirt"
	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
)

// Artifact is the finished images, their checksum files and the manifest.
type Artifact struct {
	dir      string
	files    []string
	manifest Manifest
	// source is what the input artifact was made from (its own
	// SourceImageID): "" when it reports none.
	source string
	// volume is where upload_pool put the first output; nil without upload.
	volume *uploadedVolume
}

// uploadedVolume is a volume upload_pool wrote.
type uploadedVolume struct {
	uri, pool, name string
}

func (*Artifact) BuilderId() string { return ArtifactID }
func (a *Artifact) Files() []string { return a.files }
func (a *Artifact) Id() string      { return a.dir }
func (a *Artifact) String() string {
	return fmt.Sprintf("Images in %s: %s", a.dir, strings.Join(a.files, ", "))
}
func (a *Artifact) State(name string) interface{} {
	switch name {
	case "manifest":
		return a.manifest
	case registryimage.ArtifactStateURI:
		// An untyped nil when there is no image: Packer tests the
		// interface against nil, which a nil slice is not.
		if images := a.registryImages(); len(images) > 0 {
			return images
		}
		return nil
	}
	return nil
}

// registryImages are the images as HCP Packer records them: each output
// file by its absolute path (provider qemu, region its directory), and the
// uploaded volume as pool/volume (provider libvirt, region the libvirt
// URI), all with their source, what the input artifact was made from.
func (a *Artifact) registryImages() []*registryimage.Image {
	dir, err := filepath.Abs(a.dir)
	if err != nil {
		dir = a.dir
	}
	var images []*registryimage.Image
	for _, out := range a.manifest.Outputs {
		images = append(images, &registryimage.Image{
			ImageID:        filepath.Join(dir, out.File),
			ProviderName:   libvirt.ProviderQEMU,
			ProviderRegion: dir,
			SourceImageID:  a.source,
			Labels:         a.labels(),
		})
	}
	if a.volume != nil && len(a.manifest.Outputs) > 0 {
		images = append(images, &registryimage.Image{
			ImageID:        a.volume.pool + "/" + a.volume.name,
			ProviderName:   libvirt.ProviderLibvirt,
			ProviderRegion: a.volume.uri,
			SourceImageID:  a.source,
			Labels:         a.labels(),
		})
	}
	return images
}

// labels describe the outputs to HCP Packer: the manifest's OS, firmware,
// baked versions and bootstrap. Packer merges the labels of all a build's
// images into one map, so a label of one output (its format, compression
// or sha256) would be overwritten by the next: those are in the manifest.
// Empty values are left out.
func (a *Artifact) labels() map[string]string {
	m := a.manifest
	l := map[string]string{
		"os_family":   m.OS.Family,
		"os_id":       m.OS.ID,
		"os_version":  m.OS.Version,
		"os_name":     m.OS.Name,
		"os_build":    m.OS.Build,
		"os_edition":  m.OS.Edition,
		"seed_flavor": m.OS.SeedFlavor,
		"firmware":    m.Firmware.Type,
	}
	return baked.Labels(l, m.Baked)
}

// Destroy removes the files this post-processor wrote.
func (a *Artifact) Destroy() error {
	for _, f := range a.files {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}
