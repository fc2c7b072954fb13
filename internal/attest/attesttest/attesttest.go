// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package attesttest reads an image's SBOM and provenance back for tests:
// the SBOM with the SPDX project's own Go library (spdx/tools-golang),
// which the plugin itself does not link, the provenance as the in-toto
// Statement it is.
package attesttest

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx"
	"github.com/spdx/tools-golang/spdxlib"
)

// SBOM parses the SPDX JSON document at path and checks it as the SPDX
// library does (every relationship's elements exist, the document
// describes something); it fails the test otherwise.
func SBOM(t testing.TB, path string) *spdx.Document {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the SBOM: %v", err)
	}
	doc, err := spdxjson.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s does not parse as SPDX JSON: %v", path, err)
	}
	if doc.SPDXVersion != "SPDX-2.3" {
		t.Fatalf("%s is %q, not SPDX-2.3", path, doc.SPDXVersion)
	}
	if err := spdxlib.ValidateDocument(doc); err != nil {
		t.Fatalf("%s is not a valid SPDX document: %v", path, err)
	}
	return doc
}

// Versions are the versions of the SBOM's packages named name.
func Versions(doc *spdx.Document, name string) []string {
	var out []string
	for _, p := range doc.Packages {
		if p.PackageName == name {
			out = append(out, p.PackageVersion)
		}
	}
	return out
}

// Package is the SBOM's package named name, nil when there is none.
func Package(doc *spdx.Document, name string) *spdx.Package {
	for _, p := range doc.Packages {
		if p.PackageName == name {
			return p
		}
	}
	return nil
}

// Statement is an in-toto Statement v1 as far as tests read it.
type Statement struct {
	Type          string     `json:"_type"`
	Subject       []Resource `json:"subject"`
	PredicateType string     `json:"predicateType"`
	Predicate     struct {
		BuildDefinition struct {
			BuildType            string         `json:"buildType"`
			ExternalParameters   map[string]any `json:"externalParameters"`
			ResolvedDependencies []Resource     `json:"resolvedDependencies"`
		} `json:"buildDefinition"`
		RunDetails struct {
			Builder struct {
				ID      string            `json:"id"`
				Version map[string]string `json:"version"`
			} `json:"builder"`
			Metadata struct {
				InvocationID string `json:"invocationId"`
				FinishedOn   string `json:"finishedOn"`
			} `json:"metadata"`
		} `json:"runDetails"`
	} `json:"predicate"`
}

// Resource is in-toto's ResourceDescriptor.
type Resource struct {
	Name   string            `json:"name"`
	URI    string            `json:"uri"`
	Digest map[string]string `json:"digest"`
}

// Provenance parses the in-toto Statement at path and checks it is a
// Statement v1 with a SLSA v1 provenance predicate.
func Provenance(t testing.TB, path string) Statement {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the provenance: %v", err)
	}
	var st Statement
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("%s does not parse as an in-toto Statement: %v", path, err)
	}
	if st.Type != "https://in-toto.io/Statement/v1" || st.PredicateType != "https://slsa.dev/provenance/v1" {
		t.Fatalf("%s is a %q statement with a %q predicate, not an in-toto Statement v1 with a SLSA v1 provenance", path, st.Type, st.PredicateType)
	}
	return st
}

// SubjectDigest is the sha256 the statement gives its subject named name,
// "" when it has no such subject.
func (st Statement) SubjectDigest(name string) string {
	for _, s := range st.Subject {
		if s.Name == name {
			return s.Digest["sha256"]
		}
	}
	return ""
}

// Baked checks that the SBOM names name once, at the version the bake
// recorded (the manifest's baked object), a leading "v" aside: the release
// itself (kubelet v1.33.13), or a distribution's package of it whose
// version goes on from it (Debian's containerd 1.6.20~ds1-1+b1 for the
// 1.6.20~ds1 that `containerd --version` reports).
func Baked(t testing.TB, doc *spdx.Document, name, baked string) {
	t.Helper()
	versions := Versions(doc, name)
	if len(versions) != 1 {
		t.Errorf("the SBOM names %s %d times (versions %q), not once", name, len(versions), versions)
		return
	}
	got, want := strings.TrimPrefix(versions[0], "v"), strings.TrimPrefix(baked, "v")
	if want == "" || !strings.HasPrefix(got, want) || len(got) > len(want) && got[len(want)] >= '0' && got[len(want)] <= '9' {
		t.Errorf("the SBOM names %s %s, and the bake recorded %q", name, versions[0], baked)
	}
}
