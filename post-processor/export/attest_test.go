// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package export

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/builder/libvirt"
	"github.com/kubenode/packer-plugin-kubenode/internal/attest/attesttest"
	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
)

const (
	kubeletSum    = "1111111111111111111111111111111111111111111111111111111111111111"
	containerdSum = "2222222222222222222222222222222222222222222222222222222222222222"
	runcSum       = "3333333333333333333333333333333333333333333333333333333333333333"
	pauseDigest   = "sha256:4444444444444444444444444444444444444444444444444444444444444444"
	baseDiskSum   = "5555555555555555555555555555555555555555555555555555555555555555"
)

// bakedLinux is what a Linux bake of containerd's release tarballs
// records for the export.
func bakedLinux() baked.Record {
	return baked.Record{
		Facts: baked.Facts{Kubernetes: "v1.33.13", Containerd: "v2.1.4", Runc: "1.3.0", CNIPlugins: "v1.7.1", PauseImage: "registry.k8s.io/pause:3.10",
			Checksums: map[string]string{"kubelet": kubeletSum, "containerd": containerdSum, "runc": runcSum},
			Images:    []baked.Image{{Name: "registry.k8s.io/pause:3.10", Digest: pauseDigest}}},
		OS: baked.GuestOS{ID: "debian", Version: "12", Name: "Debian GNU/Linux 12 (bookworm)"},
		Inventory: baked.Inventory{
			Artifacts: []baked.Artifact{
				{Name: "kubelet", Version: "v1.33.13", URL: "https://dl.k8s.io/release/v1.33.13/bin/linux/amd64/kubelet", SHA256: kubeletSum},
				{Name: "containerd", Version: "2.1.4", URL: "https://github.com/containerd/containerd/releases/download/v2.1.4/containerd-2.1.4-linux-amd64.tar.gz", SHA256: containerdSum},
				{Name: "runc", Version: "v1.3.0", URL: "https://github.com/opencontainers/runc/releases/download/v1.3.0/runc.amd64", SHA256: runcSum},
			},
			PackageType: "deb",
			Packages: []baked.Package{
				{Name: "libc6", Version: "2.36-9+deb12u10", Arch: "amd64", Source: "glibc"},
				{Name: "openssl", Version: "3.0.15-1~deb12u1", Arch: "amd64"},
			},
		},
		ConfigSHA256: strings.Repeat("b", 64),
	}
}

// builderFacts are kubenode-libvirt's facts of a build from a base disk.
func builderFacts(t *testing.T) string {
	f := libvirt.ImageFacts{OSFamily: "linux", SeedFlavor: "cloud-init", Firmware: "bios", ConfigSHA256: strings.Repeat("a", 64),
		Inputs: []libvirt.Input{{Name: "disk_image", URI: "https://cloud.debian.org/images/cloud/bookworm/latest/debian-12-generic-amd64.qcow2", SHA256: baseDiskSum}}}
	b, err := json.Marshal(f)
	require.NoError(t, err)
	return string(b)
}

// The export writes an SPDX SBOM and an in-toto provenance beside the
// images, lists both in the manifest with their sha256, and attaches both
// to the containerDisk as referrers of its image. The SBOM parses with the
// SPDX library and names what the bake installed, with its versions and
// checksums; the provenance's subjects are the qcow2's sha256 and the
// containerDisk's digest, and its inputs the base disk and the artifacts.
func TestExportWritesTheSBOMAndProvenance(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv("PACKER_RUN_UUID", "run-"+t.Name())
	dir := t.TempDir()
	src := sourceImage(t, dir)
	require.NoError(t, baked.Write("kubenode-libvirt.debian", bakedLinux()))
	template := filepath.Join(dir, "node.pkr.json")
	require.NoError(t, os.WriteFile(template, []byte(`{"builders": []}`), 0o644))
	out := filepath.Join(dir, "out")
	p := &PostProcessor{now: func() time.Time { return time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC) }}
	require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"qcow2", "containerdisk"}, "output_directory": out},
		map[string]interface{}{"packer_build_name": "kubenode-libvirt.debian", "packer_core_version": "1.16.0", "packer_template_path": template}))
	ui, logs := uiForTest()
	a, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}, facts: builderFacts(t)})
	require.NoError(t, err, logs.String())
	m := a.(*Artifact).manifest
	validateManifest(t, filepath.Join(out, ManifestFile))

	// Both files are listed with their sha256, and are among the artifact's files.
	require.NotNil(t, m.SBOM)
	require.NotNil(t, m.Provenance)
	sbomPath, provPath := filepath.Join(out, "node.spdx.json"), filepath.Join(out, "node.provenance.json")
	sum, err := hashFile(sbomPath)
	require.NoError(t, err)
	assert.Equal(t, Document{File: "node.spdx.json", MediaType: "application/spdx+json", SHA256: sum}, *m.SBOM)
	sum, err = hashFile(provPath)
	require.NoError(t, err)
	assert.Equal(t, Document{File: "node.provenance.json", MediaType: "application/vnd.in-toto+json", SHA256: sum}, *m.Provenance)
	assert.Subset(t, a.Files(), []string{sbomPath, provPath})
	assert.Equal(t, "-rw-r--r--", mode(t, sbomPath), "the SBOM holds no secrets")

	// The SBOM, read by the SPDX library.
	doc := attesttest.SBOM(t, sbomPath)
	assert.Equal(t, "node", doc.DocumentName)
	assert.Equal(t, "2026-11-22T08:00:00Z", doc.CreationInfo.Created)
	assert.Equal(t, []string{"v1.33.13"}, attesttest.Versions(doc, "kubelet"))
	assert.Equal(t, []string{"2.1.4"}, attesttest.Versions(doc, "containerd"))
	assert.Equal(t, []string{"v1.3.0"}, attesttest.Versions(doc, "runc"))
	kubelet := attesttest.Package(doc, "kubelet")
	assert.Equal(t, "https://dl.k8s.io/release/v1.33.13/bin/linux/amd64/kubelet", kubelet.PackageDownloadLocation)
	require.Len(t, kubelet.PackageChecksums, 1)
	assert.Equal(t, kubeletSum, kubelet.PackageChecksums[0].Value)
	require.Len(t, kubelet.PackageExternalReferences, 1)
	assert.Equal(t, "pkg:golang/k8s.io/kubernetes@v1.33.13", kubelet.PackageExternalReferences[0].Locator)
	assert.Equal(t, "pkg:golang/github.com/containerd/containerd/v2@v2.1.4", attesttest.Package(doc, "containerd").PackageExternalReferences[0].Locator)
	pause := attesttest.Package(doc, "registry.k8s.io/pause:3.10")
	require.NotNil(t, pause, "the preloaded image")
	assert.Equal(t, strings.TrimPrefix(pauseDigest, "sha256:"), pause.PackageChecksums[0].Value)
	assert.Equal(t, "pkg:oci/pause@sha256%3A"+strings.TrimPrefix(pauseDigest, "sha256:")+"?repository_url=registry.k8s.io/pause&tag=3.10", pause.PackageExternalReferences[0].Locator)
	assert.Equal(t, []string{"2.36-9+deb12u10"}, attesttest.Versions(doc, "libc6"), "the guest's packages")
	assert.Equal(t, "pkg:deb/debian/libc6@2.36-9%2Bdeb12u10?arch=amd64&distro=debian-12&upstream=glibc", attesttest.Package(doc, "libc6").PackageExternalReferences[0].Locator)
	assert.Equal(t, []string{"12"}, attesttest.Versions(doc, "debian"), "the OS")
	qcow2 := attesttest.Package(doc, "node.qcow2")
	require.NotNil(t, qcow2)
	assert.Equal(t, m.Outputs[0].SHA256, qcow2.PackageChecksums[0].Value, "the SBOM describes the qcow2 by its sha256")
	cd := m.Outputs[1]
	require.NotNil(t, attesttest.Package(doc, cd.Image), "and the containerDisk by its image")
	described := 0
	for _, r := range doc.Relationships {
		if r.Relationship == "DESCRIBES" {
			described++
		}
	}
	assert.Equal(t, 2, described, "the document describes both outputs")

	// The provenance: its subjects are the outputs.
	st := attesttest.Provenance(t, provPath)
	qsum, err := hashFile(filepath.Join(out, "node.qcow2"))
	require.NoError(t, err)
	assert.Equal(t, qsum, st.SubjectDigest("node.qcow2"), "the subject's digest is the qcow2's sha256")
	assert.Equal(t, strings.TrimPrefix(cd.Digest, "sha256:"), st.SubjectDigest(cd.Image), "and the containerDisk's image digest")
	assert.Len(t, st.Subject, 2)
	deps := map[string]attesttest.Resource{}
	for _, d := range st.Predicate.BuildDefinition.ResolvedDependencies {
		deps[d.Name] = d
	}
	assert.Equal(t, attesttest.Resource{Name: "disk_image", URI: "https://cloud.debian.org/images/cloud/bookworm/latest/debian-12-generic-amd64.qcow2",
		Digest: map[string]string{"sha256": baseDiskSum}}, deps["disk_image"], "the base disk and its checksum")
	assert.Equal(t, runcSum, deps["runc"].Digest["sha256"])
	assert.Equal(t, strings.TrimPrefix(pauseDigest, "sha256:"), deps["registry.k8s.io/pause:3.10"].Digest["sha256"])
	params := st.Predicate.BuildDefinition.ExternalParameters
	assert.Equal(t, map[string]any{"kubenode-libvirt": strings.Repeat("a", 64), "kubenode-bake": strings.Repeat("b", 64), "kubenode-export": p.configSHA256},
		params["config_sha256"])
	tsum, err := hashFile(template)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"file": "node.pkr.json", "sha256": tsum}, params["template"], "the template Packer named")
	assert.Equal(t, "kubenode-libvirt.debian", params["build_name"])
	assert.Equal(t, "1.16.0", st.Predicate.RunDetails.Builder.Version["packer"])
	assert.NotEmpty(t, st.Predicate.RunDetails.Builder.Version["packer-plugin-kubenode"])
	assert.Equal(t, "run-"+t.Name(), st.Predicate.RunDetails.Metadata.InvocationID)

	// The containerDisk carries both as referrers of its image.
	_, desc, referrers := loadArchiveReferrers(t, filepath.Join(out, "node.containerdisk.tar"))
	assert.Equal(t, cd.Digest, desc.Digest.String())
	sbom, err := os.ReadFile(sbomPath)
	require.NoError(t, err)
	prov, err := os.ReadFile(provPath)
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"application/spdx+json": sbom, "application/vnd.in-toto+json": prov}, referrers)

	_, err = baked.Read("kubenode-libvirt.debian")
	require.NoError(t, err)
	gone, _ := baked.Read("kubenode-libvirt.debian")
	assert.Nil(t, gone, "the bake's record is removed once the export is done")
}

// Without a bake the documents still describe the outputs and the OS the
// builder knows; the provenance names the builder's inputs.
func TestDocumentsOfAnImageNotBaked(t *testing.T) {
	dir := t.TempDir()
	src := sourceImage(t, dir)
	out := filepath.Join(dir, "out")
	p := &PostProcessor{}
	require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"raw"}, "output_directory": out}))
	ui, logs := uiForTest()
	a, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}, facts: builderFacts(t)})
	require.NoError(t, err, logs.String())
	doc := attesttest.SBOM(t, filepath.Join(out, "node.spdx.json"))
	var names []string
	for _, pkg := range doc.Packages {
		names = append(names, pkg.PackageName)
	}
	assert.Equal(t, []string{"node.raw", "linux"}, names)
	st := attesttest.Provenance(t, filepath.Join(out, "node.provenance.json"))
	assert.Equal(t, a.(*Artifact).manifest.Outputs[0].SHA256, st.SubjectDigest("node.raw"))
	require.Len(t, st.Predicate.BuildDefinition.ResolvedDependencies, 1)
	assert.Equal(t, baseDiskSum, st.Predicate.BuildDefinition.ResolvedDependencies[0].Digest["sha256"])
}

// A pushed containerDisk takes its SBOM and provenance along: the
// registry lists both as referrers of the image.
func TestPushedContainerDiskHasReferrers(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	out := filepath.Join(t.TempDir(), "out")
	p := &PostProcessor{}
	require.NoError(t, p.Configure(map[string]interface{}{
		"formats": []string{"containerdisk"}, "output_directory": out, "output_name": "debian-12",
		"containerdisk_repository": host + "/nodes/debian-12",
	}))
	ui, logs := uiForTest()
	a, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{blankQcow2(t)}})
	require.NoError(t, err, logs.String())
	cd := a.(*Artifact).manifest.Outputs[0]
	subject, err := name.NewDigest(host+"/nodes/debian-12@"+cd.Digest, name.Insecure)
	require.NoError(t, err)
	idx, err := remote.Referrers(subject)
	require.NoError(t, err)
	m, err := idx.IndexManifest()
	require.NoError(t, err)
	// go-containerregistry's test registry lists a referrer's config media
	// type as its artifactType (the OCI 1.1 convention before artifactType);
	// the manifests say theirs.
	var types []string
	for _, d := range m.Manifests {
		raw, err := remote.Get(subject.Context().Digest(d.Digest.String()))
		require.NoError(t, err)
		var mf struct {
			ArtifactType string `json:"artifactType"`
			Layers       []struct {
				MediaType string `json:"mediaType"`
			} `json:"layers"`
		}
		require.NoError(t, json.Unmarshal(raw.Manifest, &mf))
		require.Len(t, mf.Layers, 1)
		assert.Equal(t, mf.ArtifactType, mf.Layers[0].MediaType)
		types = append(types, mf.ArtifactType)
	}
	slices.Sort(types)
	assert.Equal(t, []string{"application/spdx+json", "application/vnd.in-toto+json"}, types)
	assert.Contains(t, logs.String(), "pushed "+host+"/nodes/debian-12@sha256:")
}
