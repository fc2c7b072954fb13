// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package baked carries what kubenode-bake installed, and the OS the guest
// reported, from the provisioner to kubenode-export's manifest. A provisioner cannot add to the builder's
// artifact, so the facts travel through a file on the build machine, keyed
// by the packer run (PACKER_RUN_UUID, which packer sets for every plugin it
// starts) and the build's name. The post-processor reads and removes it.
package baked

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
)

// Facts are the manifest's `baked` object.
type Facts struct {
	Kubernetes string `json:"kubernetes"`
	Containerd string `json:"containerd"`
	CNIPlugins string `json:"cni_plugins"`
	PauseImage string `json:"pause_image"`
	Joiner     string `json:"joiner"`
	// Runc is the version `runc --version` reports on a Linux guest;
	// empty on Windows, which has none, and in earlier bakes' records.
	Runc string `json:"runc,omitempty"`
	// Bootstrap is how nodes from the image join: "joiner" (kubenode's
	// joiner) or "cluster-api" (cloud-init runs Cluster API's kubeadm
	// bootstrap data). Empty in the records of earlier bakes.
	Bootstrap string `json:"bootstrap,omitempty"`
	// Unlisted are the bake's warnings for versions whose minor is not in
	// its version table (allow_unlisted_version), each naming the row
	// whose facts it took. Absent when every version is in the table.
	Unlisted []string `json:"unlisted,omitempty"`
	// Checksums are the sha256 of each artifact uploaded, by name.
	Checksums map[string]string `json:"checksums"`
	// Images are the images the bake preloaded into containerd's k8s.io
	// namespace (archives imported, images pulled), as containerd listed
	// them afterwards.
	Images []Image `json:"images"`
	// KubeadmImages are the images `kubeadm config images list` named for
	// Kubernetes (kubenode-bake's kubeadm_images), each among Images:
	// what `kubeadm init` and `kubeadm join --control-plane` run. Absent
	// when the bake did not preload them.
	KubeadmImages []string `json:"kubeadm_images,omitempty"`
}

// Image is a container image in containerd's store.
type Image struct {
	// Name is its reference as containerd stores it
	// (registry.k8s.io/pause:3.10, docker.io/library/busybox:1.36).
	Name string `json:"name"`
	// Digest is the digest of its manifest or index (`ctr images ls`'
	// DIGEST column, the repo digest the CRI reports): sha256:<hex>.
	Digest string `json:"digest"`
}

// GuestOS is what the guest says it runs: the manifest's `os` fields that
// only the guest knows.
type GuestOS struct {
	// ID is os-release's ID (debian, ubuntu, rocky), or "windows".
	ID string `json:"id"`
	// Version is os-release's VERSION_ID (12, 24.04, 9.5), or the Windows
	// Server release of the guest's build number (2022).
	Version string `json:"version"`
	// Name is os-release's PRETTY_NAME, or Windows' ProductName.
	Name string `json:"name"`
	// Build is Windows' CurrentBuildNumber.
	Build string `json:"build,omitempty"`
}

// Record is what one bake hands to the export.
type Record struct {
	Facts Facts   `json:"facts"`
	OS    GuestOS `json:"os"`
	// Inventory is what the image's SBOM lists besides Facts; the
	// manifest does not repeat it.
	Inventory Inventory `json:"inventory"`
	// ConfigSHA256 is the sha256 of kubenode-bake's configuration
	// (confighash.Sum), for the image's provenance.
	ConfigSHA256 string `json:"config_sha256,omitempty"`
}

// Inventory is what the bake put on the guest and what the guest holds,
// for the image's SBOM.
type Inventory struct {
	// Artifacts are the files the bake installed, images archives aside
	// (their images are Facts.Images).
	Artifacts []Artifact `json:"artifacts,omitempty"`
	// Inputs are the image archives the bake imported, for the
	// provenance's inputs.
	Inputs []Artifact `json:"inputs,omitempty"`
	// Packages are a Linux guest's OS packages, read from its package
	// database at the end of the bake; PackageType is that database's
	// package type, deb (dpkg) or rpm.
	PackageType string    `json:"package_type,omitempty"`
	Packages    []Package `json:"packages,omitempty"`
	// Features are the Windows features installed on a Windows guest.
	Features []string `json:"features,omitempty"`
	// Files are the binaries the bake put on a Windows guest, as the
	// guest hashed them.
	Files []File `json:"files,omitempty"`
}

// Artifact is one file the bake downloaded or was given.
type Artifact struct {
	// Name is the artifact's key (kubelet, containerd, runc, ...).
	Name string `json:"name"`
	// Version is the release it is, as the version table names it
	// (v1.33.1, 2.1.4); empty when unknown.
	Version string `json:"version,omitempty"`
	// URL is where it is downloaded from (a mirror's when
	// download_mirrors applied); empty for a file only this machine has.
	URL string `json:"url,omitempty"`
	// SHA256 is its checksum (hex).
	SHA256 string `json:"sha256"`
}

// Package is one OS package: dpkg's Package, Version, Architecture and
// source package, or rpm's NAME, [EPOCH:]VERSION-RELEASE, ARCH and
// SOURCERPM.
type Package struct {
	Name    string `json:"n"`
	Version string `json:"v"`
	Arch    string `json:"a,omitempty"`
	Source  string `json:"s,omitempty"`
}

// File is one file on the guest with its sha256 (hex).
type File struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

var unsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Path is where the facts of this packer run's build wait; "" when packer
// did not set PACKER_RUN_UUID (the plugin was not started by packer).
func Path(build string) string {
	run := os.Getenv("PACKER_RUN_UUID")
	if run == "" {
		return ""
	}
	return filepath.Join(os.TempDir(), "kubenode-baked-"+unsafe.ReplaceAllString(run, "_")+"-"+unsafe.ReplaceAllString(build, "_")+".json")
}

// Write records what was baked for the build's post-processor.
func Write(build string, r Record) error {
	path := Path(build)
	if path == "" {
		return nil
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// Read returns the build's record without removing it; nil when it was
// not baked. The builder reads it when its run ends, before the
// post-processors: the bake ran inside that run.
func Read(build string) (*Record, error) {
	path := Path(build)
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Take reads and removes the build's record; nil when it was not baked.
func Take(build string) (*Record, error) {
	r, err := Read(build)
	if path := Path(build); path != "" {
		os.Remove(path)
	}
	return r, err
}

// Labels completes an image's HCP Packer labels (base, which it changes
// and returns): with f, the Kubernetes and containerd versions baked in
// and how nodes join (bootstrap); empty values are left out.
func Labels(base map[string]string, f *Facts) map[string]string {
	if f != nil {
		base["kubernetes_version"] = f.Kubernetes
		base["containerd_version"] = f.Containerd
		base["bootstrap"] = f.Bootstrap
	}
	for k, v := range base {
		if v == "" {
			delete(base, k)
		}
	}
	return base
}
