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
	// source is the input's disk image, absolute.
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
		return a.registryImages()
	}
	return nil
}

// registryImages are the images as HCP Packer records them: each output
// file by its absolute path (provider qemu, region its directory), and the
// uploaded volume as pool/volume (provider libvirt, region the libvirt
// URI), all with their source, the input's disk image.
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
			Labels:         a.labels(out),
		})
	}
	if a.volume != nil && len(a.manifest.Outputs) > 0 {
		images = append(images, &registryimage.Image{
			ImageID:        a.volume.pool + "/" + a.volume.name,
			ProviderName:   libvirt.ProviderLibvirt,
			ProviderRegion: a.volume.uri,
			SourceImageID:  a.source,
			Labels:         a.labels(a.manifest.Outputs[0]),
		})
	}
	return images
}

// labels describe one output to HCP Packer: the manifest's OS, firmware
// and baked versions, and the output's format, compression and sha256.
// Empty values are left out.
func (a *Artifact) labels(out Output) map[string]string {
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
		"format":      out.Format,
		"compression": out.Compression,
		"sha256":      out.SHA256,
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
