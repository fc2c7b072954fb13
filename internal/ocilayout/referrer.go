// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package ocilayout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The OCI image spec 1.1's empty descriptor: the config of an artifact
// that has none, the two bytes `{}`.
const (
	emptyMediaType = "application/vnd.oci.empty.v1+json"
	emptyJSON      = "{}"
)

// Annotation keys of the image spec (annotations.md).
const (
	annotationTitle   = "org.opencontainers.image.title"
	annotationCreated = "org.opencontainers.image.created"
)

// artifactManifest is an image manifest of the OCI image spec 1.1 that
// carries an artifact: artifactType names it, and subject is the manifest
// it refers to, which makes it that manifest's referrer.
type artifactManifest struct {
	SchemaVersion int64             `json:"schemaVersion"`
	MediaType     types.MediaType   `json:"mediaType"`
	ArtifactType  string            `json:"artifactType"`
	Config        v1.Descriptor     `json:"config"`
	Layers        []v1.Descriptor   `json:"layers"`
	Subject       *v1.Descriptor    `json:"subject"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// referrer is an artifact manifest with its one blob: a v1.Image whose
// config is the empty descriptor, as go-containerregistry writes it into
// a layout and pushes it.
type referrer struct {
	manifest []byte
	desc     v1.Descriptor
	layer    v1.Layer
}

// Referrer is an artifact of artifactType holding content (a file named
// title) that refers to subject, an image manifest: the way an SBOM or a
// provenance statement travels with the image it describes (the OCI
// distribution spec's referrers). created dates it.
func Referrer(subject v1.Descriptor, artifactType, title string, content []byte, created time.Time) (v1.Image, error) {
	layer := static.NewLayer(content, types.MediaType(artifactType))
	digest, err := layer.Digest()
	if err != nil {
		return nil, err
	}
	emptyDigest, _, err := v1.SHA256(bytes.NewReader([]byte(emptyJSON)))
	if err != nil {
		return nil, err
	}
	m := artifactManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  artifactType,
		Config:        v1.Descriptor{MediaType: emptyMediaType, Digest: emptyDigest, Size: int64(len(emptyJSON)), Data: []byte(emptyJSON)},
		Layers: []v1.Descriptor{{MediaType: types.MediaType(artifactType), Digest: digest, Size: int64(len(content)),
			Annotations: map[string]string{annotationTitle: title}}},
		Subject:     &v1.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
		Annotations: map[string]string{annotationCreated: created.UTC().Format(time.RFC3339)},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	d, size, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	r := &referrer{manifest: raw, layer: layer,
		desc: v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: d, Size: size, ArtifactType: artifactType}}
	return partial.CompressedToImage(r)
}

func (r *referrer) RawConfigFile() ([]byte, error)      { return []byte(emptyJSON), nil }
func (r *referrer) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
func (r *referrer) RawManifest() ([]byte, error)        { return r.manifest, nil }
func (r *referrer) Descriptor() (*v1.Descriptor, error) { d := r.desc; return &d, nil }
func (r *referrer) ArtifactType() (string, error)       { return r.desc.ArtifactType, nil }
func (r *referrer) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if d, err := r.layer.Digest(); err == nil && d == h {
		return r.layer, nil
	}
	return nil, fmt.Errorf("the artifact has no blob %s", h)
}
