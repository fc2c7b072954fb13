// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package export

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	"github.com/kubenode/packer-plugin-kubenode/internal/safefile"
)

// ManifestFile is the name of the manifest written beside the outputs.
const ManifestFile = "kubenode-manifest.json"

// ManifestSchemaVersion is bumped when a field changes meaning or goes away.
// 2: os.version is the guest's release, no longer a Linux seed's flavor
// (now os.seed_flavor).
const ManifestSchemaVersion = 2

// Manifest describes what an image is and what was baked into it. Its JSON
// Schema is docs/manifest.schema.json.
type Manifest struct {
	SchemaVersion int       `json:"schema_version"`
	BuildTime     time.Time `json:"build_time"`
	OS            OSInfo    `json:"os"`
	Firmware      Firmware  `json:"firmware"`
	Baked         *Baked    `json:"baked"`
	Tools         Tools     `json:"tools"`
	Outputs       []Output  `json:"outputs"`
	// SBOM and Provenance are the documents written beside the outputs
	// (attest.go); absent in manifests of earlier exports.
	SBOM       *Document `json:"sbom,omitempty"`
	Provenance *Document `json:"provenance,omitempty"`
}

// Document is the SBOM or the provenance statement, a file beside the
// outputs.
type Document struct {
	File string `json:"file"`
	// MediaType is its format's: application/spdx+json (SPDX 2.3) or
	// application/vnd.in-toto+json (an in-toto Statement v1 with a SLSA
	// v1 provenance predicate).
	MediaType string `json:"media_type"`
	SHA256    string `json:"sha256"`
}

// OSInfo is the image's OS. ID, Name and Build are what the guest reported
// to kubenode-bake, empty when no bake ran: a builder only knows what it was
// configured with.
type OSInfo struct {
	// Family is windows, linux or unknown (the builder's).
	Family string `json:"family"`
	// ID is os-release's ID (debian) or windows.
	ID string `json:"id"`
	// Version is os-release's VERSION_ID (12) or the Windows Server release
	// (2022): the guest's, or without a bake the Windows release the
	// builder was configured for ("" for Linux).
	Version string `json:"version"`
	// Name is os-release's PRETTY_NAME or Windows' ProductName.
	Name string `json:"name"`
	// Build is Windows' CurrentBuildNumber.
	Build   string `json:"build,omitempty"`
	Edition string `json:"edition,omitempty"`
	// SeedFlavor is how the builder seeded a Linux install (cloud-init,
	// preseed, ...).
	SeedFlavor string `json:"seed_flavor,omitempty"`
}

// Firmware says how the image boots and what boot state travels with it.
type Firmware struct {
	Type     string `json:"type"`
	EFIVars  string `json:"efi_vars,omitempty"`  // file name beside the image, if kept
	TPMState string `json:"tpm_state,omitempty"` // directory beside the image, if kept
}

// Baked lists the Kubernetes components kubenode-bake put in the image; null
// when the image was not baked.
type Baked = baked.Facts

// Tools are the versions that made the image.
type Tools struct {
	Builder string `json:"builder"`
	Plugin  string `json:"plugin"`
	QemuImg string `json:"qemu_img"`
}

// Output is one written image file.
type Output struct {
	File   string `json:"file"`
	Format string `json:"format"`
	// Compression is a qcow2's; a containerdisk's layer is gzip.
	Compression string `json:"compression"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
	// Image is the name a containerdisk archive gives its image.
	Image string `json:"image,omitempty"`
	// Digest is a containerdisk's image manifest digest, what containerd
	// and registries list.
	Digest string `json:"digest,omitempty"`
	// Reference is where a containerdisk was pushed, by digest.
	Reference string `json:"reference,omitempty"`
}

// writeChecksum writes <file>.sha256 in the format `sha256sum -c` reads.
func writeChecksum(path, sum string) (string, error) {
	p := path + ".sha256"
	line := fmt.Sprintf("%s  %s\n", sum, filepath.Base(path))
	return p, safefile.WriteFile(p, []byte(line), 0o644)
}

func writeManifest(dir string, m Manifest) (string, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, ManifestFile)
	return p, safefile.WriteFile(p, append(b, '\n'), 0o644)
}
