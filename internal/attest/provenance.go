// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package attest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The in-toto Statement v1 (github.com/in-toto/attestation,
// spec/v1/statement.md) with a SLSA v1 provenance predicate
// (slsa.dev/provenance/v1).
const (
	statementType  = "https://in-toto.io/Statement/v1"
	provenanceType = "https://slsa.dev/provenance/v1"
	// BuildType says how to read the predicate's parameters: a Packer
	// build with kubenode's plugin, as docs/export.md describes.
	BuildType = "https://github.com/kubenode/packer-plugin-kubenode/docs/export.md#provenance"
	// BuilderID names what ran the build: Packer with this plugin, on the
	// machine that ran `packer build`.
	BuilderID = "https://github.com/kubenode/packer-plugin-kubenode"
)

type statement struct {
	Type          string     `json:"_type"`
	Subject       []resource `json:"subject"`
	PredicateType string     `json:"predicateType"`
	Predicate     predicate  `json:"predicate"`
}

// resource is in-toto's ResourceDescriptor.
type resource struct {
	Name   string            `json:"name,omitempty"`
	URI    string            `json:"uri,omitempty"`
	Digest map[string]string `json:"digest,omitempty"`
}

type predicate struct {
	BuildDefinition buildDefinition `json:"buildDefinition"`
	RunDetails      runDetails      `json:"runDetails"`
}

type buildDefinition struct {
	BuildType            string         `json:"buildType"`
	ExternalParameters   map[string]any `json:"externalParameters"`
	ResolvedDependencies []resource     `json:"resolvedDependencies,omitempty"`
}

type runDetails struct {
	Builder  builder  `json:"builder"`
	Metadata metadata `json:"metadata"`
}

type builder struct {
	ID      string            `json:"id"`
	Version map[string]string `json:"version,omitempty"`
}

type metadata struct {
	InvocationID string `json:"invocationId,omitempty"`
	FinishedOn   string `json:"finishedOn"`
}

// Build is how the image was made.
type Build struct {
	// Inputs are the files the build started from: the install ISO or
	// the base disk, virtio-win, extra CD-ROMs.
	Inputs []Dependency
	// Parameters are what the user chose: the build's name, the builder,
	// the digests of the components' configurations and of the template.
	Parameters map[string]any
	// Versions are the tools' versions, by tool (packer-plugin-kubenode,
	// packer, qemu-img).
	Versions map[string]string
	// InvocationID is the packer run's ID (PACKER_RUN_UUID).
	InvocationID string
}

// Dependency is an input with its sha256 (hex).
type Dependency struct {
	Name, URI, SHA256 string
}

func (d Dependency) resource() resource {
	r := resource{Name: d.Name, URI: d.URI}
	if d.SHA256 != "" {
		r.Digest = map[string]string{"sha256": d.SHA256}
	}
	return r
}

// Provenance returns the image's provenance: an in-toto Statement v1
// whose subjects are the outputs (each disk image file by its sha256, a
// containerDisk by its manifest's digest) with a SLSA v1 provenance
// predicate naming the inputs (the build's source files, the artifacts
// kubenode-bake installed and the images it preloaded, each with its
// sha256), the parameters and the tools' versions. It is not signed.
func Provenance(img Image, b Build) ([]byte, error) {
	if len(img.Outputs) == 0 {
		return nil, fmt.Errorf("the image has no output to be the provenance's subject")
	}
	st := statement{Type: statementType, PredicateType: provenanceType}
	for _, o := range img.Outputs {
		if o.containerDisk() {
			st.Subject = append(st.Subject, resource{Name: o.Reference, Digest: map[string]string{"sha256": strings.TrimPrefix(o.Digest, "sha256:")}})
		} else {
			st.Subject = append(st.Subject, resource{Name: o.File, Digest: map[string]string{"sha256": o.SHA256}})
		}
	}
	params := b.Parameters
	if params == nil {
		params = map[string]any{}
	}
	def := buildDefinition{BuildType: BuildType, ExternalParameters: params}
	for _, in := range b.Inputs {
		def.ResolvedDependencies = append(def.ResolvedDependencies, in.resource())
	}
	if rec := img.Record; rec != nil {
		for _, a := range rec.Inventory.Artifacts {
			def.ResolvedDependencies = append(def.ResolvedDependencies, Dependency{Name: a.Name, URI: a.URL, SHA256: a.SHA256}.resource())
		}
		for _, a := range rec.Inventory.Inputs {
			def.ResolvedDependencies = append(def.ResolvedDependencies, Dependency{Name: a.Name, SHA256: a.SHA256}.resource())
		}
		for _, im := range rec.Facts.Images {
			def.ResolvedDependencies = append(def.ResolvedDependencies,
				Dependency{Name: im.Name, URI: ociPURL(im.Name, im.Digest), SHA256: strings.TrimPrefix(im.Digest, "sha256:")}.resource())
		}
	}
	st.Predicate = predicate{
		BuildDefinition: def,
		RunDetails: runDetails{
			Builder:  builder{ID: BuilderID, Version: b.Versions},
			Metadata: metadata{InvocationID: b.InvocationID, FinishedOn: img.Created.UTC().Truncate(time.Second).Format(time.RFC3339)},
		},
	}
	return json.MarshalIndent(st, "", " ")
}
