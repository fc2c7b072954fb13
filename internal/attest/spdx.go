// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package attest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"
)

// The SPDX 2.3 JSON document, as far as the SBOM fills it in (SPDX
// specification 2.3, clauses 6, 7 and 11).
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	SPDXID                string            `json:"SPDXID"`
	Name                  string            `json:"name"`
	VersionInfo           string            `json:"versionInfo,omitempty"`
	Supplier              string            `json:"supplier,omitempty"`
	PackageFileName       string            `json:"packageFileName,omitempty"`
	DownloadLocation      string            `json:"downloadLocation"`
	FilesAnalyzed         bool              `json:"filesAnalyzed"`
	Checksums             []spdxChecksum    `json:"checksums,omitempty"`
	SourceInfo            string            `json:"sourceInfo,omitempty"`
	Description           string            `json:"description,omitempty"`
	ExternalRefs          []spdxExternalRef `json:"externalRefs,omitempty"`
	PrimaryPackagePurpose string            `json:"primaryPackagePurpose,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

// noAssertion is SPDX's "nothing is said about it".
const noAssertion = "NOASSERTION"

// namespaceBase starts each SBOM's documentNamespace, which SPDX wants
// unique to the document: the image's name and its outputs' digests
// follow.
const namespaceBase = "https://github.com/kubenode/packer-plugin-kubenode/spdx/"

// SPDX returns the image's SBOM: an SPDX 2.3 JSON document that describes
// each output, each of which contains the OS, the artifacts kubenode-bake
// installed (release, download URL, sha256), the container images it
// preloaded (digest), and the OS's packages (Linux: dpkg's or rpm's, as
// the guest listed them) or its Windows features and the binaries the
// bake installed (with their sha256). Packages carry package URLs (purl)
// where one is known, which scanners match against vulnerability data.
func SPDX(img Image) ([]byte, error) {
	if len(img.Outputs) == 0 {
		return nil, fmt.Errorf("the image has no output to describe")
	}
	doc := spdxDocument{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              img.Name,
		DocumentNamespace: namespaceBase + url.PathEscape(img.Name) + "-" + outputsDigest(img.Outputs),
		CreationInfo: spdxCreationInfo{
			Created:  img.Created.UTC().Truncate(time.Second).Format(time.RFC3339),
			Creators: []string{"Tool: " + img.Tool},
		},
	}
	ids := map[string]bool{}
	add := func(kind, name string, p spdxPackage) {
		p.SPDXID = uniqueID(ids, "SPDXRef-"+kind+"-"+name)
		p.Name = name
		if p.DownloadLocation == "" {
			p.DownloadLocation = noAssertion
		}
		doc.Packages = append(doc.Packages, p)
	}
	for _, o := range img.Outputs {
		if o.containerDisk() {
			add("Output", o.Reference, spdxPackage{PrimaryPackagePurpose: "CONTAINER",
				Description:  "KubeVirt containerDisk " + o.Reference + "@" + o.Digest,
				ExternalRefs: purlRef(ociPURL(o.Reference, o.Digest))})
			continue
		}
		add("Output", o.File, spdxPackage{PackageFileName: o.File, PrimaryPackagePurpose: "FILE",
			Description: o.Format + " disk image", Checksums: sha256Checksum(o.SHA256)})
	}
	outputs := len(doc.Packages)
	addContents(img, add)

	for _, out := range doc.Packages[:outputs] {
		doc.Relationships = append(doc.Relationships, spdxRelationship{SPDXElementID: doc.SPDXID, RelationshipType: "DESCRIBES", RelatedSPDXElement: out.SPDXID})
	}
	for _, out := range doc.Packages[:outputs] {
		for _, p := range doc.Packages[outputs:] {
			doc.Relationships = append(doc.Relationships, spdxRelationship{SPDXElementID: out.SPDXID, RelationshipType: "CONTAINS", RelatedSPDXElement: p.SPDXID})
		}
	}
	return json.MarshalIndent(doc, "", " ")
}

// addContents adds what every output holds: the OS, the artifacts, the
// preloaded images, the OS packages, the Windows features and binaries.
func addContents(img Image, add func(kind, name string, p spdxPackage)) {
	osName := img.OS.ID
	if osName == "" {
		osName = img.OS.Family
	}
	osPkg := spdxPackage{VersionInfo: img.OS.Version, Description: img.OS.Name, PrimaryPackagePurpose: "OPERATING-SYSTEM"}
	if img.OS.Build != "" {
		osPkg.Description = strings.TrimSpace(img.OS.Name + ", build " + img.OS.Build)
	}
	add("OperatingSystem", osName, osPkg)

	rec := img.Record
	if rec == nil {
		return
	}
	for _, a := range rec.Inventory.Artifacts {
		add("Artifact", a.Name, spdxPackage{VersionInfo: a.Version, DownloadLocation: a.URL, Checksums: sha256Checksum(a.SHA256),
			PrimaryPackagePurpose: "APPLICATION", Description: "installed by kubenode-bake",
			ExternalRefs: purlRef(goPURL(a.Name, a.Version))})
	}
	for _, im := range rec.Facts.Images {
		_, tag := splitTag(im.Name)
		add("ContainerImage", im.Name, spdxPackage{VersionInfo: tag, Checksums: sha256Checksum(strings.TrimPrefix(im.Digest, "sha256:")),
			PrimaryPackagePurpose: "CONTAINER", Description: "preloaded into containerd's k8s.io namespace",
			ExternalRefs: purlRef(ociPURL(im.Name, im.Digest))})
	}
	inv := rec.Inventory
	for _, p := range inv.Packages {
		pkg := spdxPackage{VersionInfo: p.Version, ExternalRefs: purlRef(osPackagePURL(inv.PackageType, img.OS, p))}
		if p.Source != "" {
			pkg.SourceInfo = "built package from: " + p.Source
		}
		add("Package", p.Name, pkg)
	}
	for _, f := range inv.Features {
		add("WindowsFeature", f, spdxPackage{VersionInfo: img.OS.Build, Supplier: "Organization: Microsoft Corporation",
			Description: "Windows feature installed"})
	}
	for _, f := range inv.Files {
		add("File", windowsBase(f.Path), spdxPackage{PackageFileName: f.Path, Checksums: sha256Checksum(f.SHA256),
			PrimaryPackagePurpose: "FILE"})
	}
}

func sha256Checksum(hex string) []spdxChecksum {
	if hex == "" {
		return nil
	}
	return []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: hex}}
}

func purlRef(purl string) []spdxExternalRef {
	if purl == "" {
		return nil
	}
	return []spdxExternalRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: purl}}
}

var idUnsafe = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// uniqueID is an SPDX identifier (letters, digits, '.' and '-') made of
// id, numbered when taken.
func uniqueID(taken map[string]bool, id string) string {
	id = strings.Trim(idUnsafe.ReplaceAllString(id, "-"), "-")
	out := id
	for n := 2; taken[out]; n++ {
		out = fmt.Sprintf("%s-%d", id, n)
	}
	taken[out] = true
	return out
}

// outputsDigest is a short digest of the outputs' digests: what makes the
// document's namespace unique to this image.
func outputsDigest(outs []Output) string {
	h := sha256.New()
	for _, o := range outs {
		fmt.Fprintf(h, "%s %s %s\n", o.File, o.SHA256, o.Digest)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// windowsBase is the file name of a Windows path.
func windowsBase(p string) string {
	return path.Base(strings.ReplaceAll(p, `\`, "/"))
}
