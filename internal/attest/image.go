// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package attest writes what an image is made of and how it was made in
// the formats scanners and policy engines read: an SPDX 2.3 JSON SBOM
// (SPDX) and an in-toto Statement v1 with a SLSA v1 provenance predicate
// (Provenance). Both are plain JSON written from plain structs: no SBOM
// tool is linked into the plugin.
package attest

import (
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
)

// Media types of the two documents, as the containerDisk's OCI referrers
// carry them (their artifactType).
const (
	SPDXMediaType   = "application/spdx+json"
	InTotoMediaType = "application/vnd.in-toto+json"
)

// Image is what an exported image is and holds.
type Image struct {
	// Name is the image's name (kubenode-export's output_name).
	Name string
	// Created is when it was exported.
	Created time.Time
	// Tool names what wrote the documents, e.g. packer-plugin-kubenode-0.1.0.
	Tool string
	OS   OS
	// Outputs are the image's files and containerDisk.
	Outputs []Output
	// Record is what kubenode-bake installed and found; nil when the image
	// was not baked.
	Record *baked.Record
}

// OS is the image's operating system, as the guest reported it.
type OS struct {
	// Family is linux, windows or unknown.
	Family string
	// ID is os-release's ID (debian) or windows; Version its VERSION_ID
	// (12) or the Windows Server release (2022); Name its PRETTY_NAME or
	// Windows' ProductName; Build Windows' build number.
	ID, Version, Name, Build string
}

// Output is one form of the image: a disk image file (File, SHA256) or a
// containerDisk image (Reference, Digest, its manifest's).
type Output struct {
	File   string
	Format string
	SHA256 string
	// Reference and Digest name a containerDisk: the image's name
	// (repository:tag) and its manifest's digest (sha256:<hex>). Its
	// archive's own sha256 is not given: the archive carries the documents.
	Reference, Digest string
}

// containerDisk says whether o is a containerDisk image.
func (o Output) containerDisk() bool { return o.Digest != "" }
