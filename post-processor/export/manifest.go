package export

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
)

// ManifestFile is the name of the manifest written beside the outputs.
const ManifestFile = "kubenode-manifest.json"

// ManifestSchemaVersion is bumped when a field changes meaning or goes away.
const ManifestSchemaVersion = 1

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
}

// OSInfo is what the builder installed.
type OSInfo struct {
	Family  string `json:"family"`
	Version string `json:"version"`
	Edition string `json:"edition,omitempty"`
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
	File        string `json:"file"`
	Format      string `json:"format"`
	Compression string `json:"compression"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
}

// writeChecksum writes <file>.sha256 in the format `sha256sum -c` reads.
func writeChecksum(path, sum string) (string, error) {
	p := path + ".sha256"
	line := fmt.Sprintf("%s  %s\n", sum, filepath.Base(path))
	return p, os.WriteFile(p, []byte(line), 0o644)
}

func writeManifest(dir string, m Manifest) (string, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, ManifestFile)
	tmp := p + ".partial"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	return p, os.Rename(tmp, p)
}
