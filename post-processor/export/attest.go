// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package export

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/kubenode/packer-plugin-kubenode/builder/libvirt"
	"github.com/kubenode/packer-plugin-kubenode/internal/attest"
	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	"github.com/kubenode/packer-plugin-kubenode/internal/filehash"
	"github.com/kubenode/packer-plugin-kubenode/internal/safefile"
	"github.com/kubenode/packer-plugin-kubenode/version"
)

// The documents' file names: <output_name> and these.
const (
	sbomSuffix       = ".spdx.json"
	provenanceSuffix = ".provenance.json"
)

// document is the SBOM or the provenance, written beside the outputs.
type document struct {
	Document
	path    string
	content []byte
}

// imageDocs says what an image is and how it was made, for its
// documents.
type imageDocs struct {
	name    string
	created time.Time
	os      OSInfo
	rec     *baked.Record
	in      packersdk.Artifact
	c       *Config
	// configSHA256 is kubenode-export's configuration digest, and
	// templatePath the template Packer named, if any.
	configSHA256, templatePath string
	qemuImg                    string
}

// write writes <name>.spdx.json and <name>.provenance.json into dir (0644:
// they hold no secret) for outputs.
func (d imageDocs) write(dir string, outputs []Output) ([]document, error) {
	img := attest.Image{
		Name: d.name, Created: d.created, Tool: "packer-plugin-kubenode-" + version.PluginVersion.FormattedVersion(),
		OS:     attest.OS{Family: d.os.Family, ID: d.os.ID, Version: d.os.Version, Name: d.os.Name, Build: d.os.Build},
		Record: d.rec,
	}
	for _, o := range outputs {
		if o.Format == formatContainerDisk {
			img.Outputs = append(img.Outputs, attest.Output{Format: o.Format, Reference: o.Image, Digest: o.Digest})
		} else {
			img.Outputs = append(img.Outputs, attest.Output{File: o.File, Format: o.Format, SHA256: o.SHA256})
		}
	}
	sbom, err := attest.SPDX(img)
	if err != nil {
		return nil, fmt.Errorf("the SBOM: %w", err)
	}
	prov, err := attest.Provenance(img, d.build())
	if err != nil {
		return nil, fmt.Errorf("the provenance: %w", err)
	}
	var docs []document
	for _, doc := range []document{
		{Document: Document{File: d.name + sbomSuffix, MediaType: attest.SPDXMediaType}, content: sbom},
		{Document: Document{File: d.name + provenanceSuffix, MediaType: attest.InTotoMediaType}, content: prov},
	} {
		doc.path = filepath.Join(dir, doc.File)
		doc.content = append(doc.content, '\n')
		if err := safefile.WriteFile(doc.path, doc.content, 0o644); err != nil {
			return nil, fmt.Errorf("writing %s: %w", doc.File, err)
		}
		if doc.SHA256, err = filehash.SHA256(doc.path); err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
	return docs, nil
}

// build is how the image was made: the builder's inputs, the build's
// parameters (its name, the builder, the digests of the components'
// configurations and of the template when Packer names one) and the
// tools' versions.
func (d imageDocs) build() attest.Build {
	facts, _ := libvirt.ReadImageFacts(d.in.State)
	b := attest.Build{
		Versions: map[string]string{
			"packer-plugin-kubenode": version.PluginVersion.FormattedVersion(),
			"qemu-img":               d.qemuImg,
		},
		InvocationID: os.Getenv("PACKER_RUN_UUID"),
		Parameters:   map[string]any{"build_name": d.c.PackerBuildName, "builder": d.in.BuilderId()},
	}
	if d.c.PackerCoreVersion != "" {
		b.Versions["packer"] = d.c.PackerCoreVersion
	}
	for _, in := range facts.Inputs {
		b.Inputs = append(b.Inputs, attest.Dependency{Name: in.Name, URI: in.URI, SHA256: in.SHA256})
	}
	configs := map[string]string{"kubenode-export": d.configSHA256}
	if facts.ConfigSHA256 != "" {
		configs["kubenode-libvirt"] = facts.ConfigSHA256
	}
	if d.rec != nil && d.rec.ConfigSHA256 != "" {
		configs["kubenode-bake"] = d.rec.ConfigSHA256
	}
	b.Parameters["config_sha256"] = configs
	if st, err := os.Stat(d.templatePath); err == nil && st.Mode().IsRegular() {
		if sum, err := filehash.SHA256(d.templatePath); err == nil {
			b.Parameters["template"] = map[string]string{"file": filepath.Base(d.templatePath), "sha256": sum}
		}
	}
	return b
}

// templatePath is the template Packer names in a component's
// configuration (packer_template_path), "" when it names none.
func templatePath(raws ...interface{}) string {
	for _, raw := range raws {
		if m, ok := raw.(map[string]interface{}); ok {
			switch v := m["packer_template_path"].(type) {
			case string:
				if v != "" {
					return v
				}
			case []byte:
				if len(v) > 0 {
					return string(v)
				}
			}
		}
	}
	return ""
}
