// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package attest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/attest/attesttest"
	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
)

func TestPURLs(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{goPURL("kubelet", "v1.33.13"), "pkg:golang/k8s.io/kubernetes@v1.33.13"},
		{goPURL("containerd", "1.7.29"), "pkg:golang/github.com/containerd/containerd@v1.7.29"},
		{goPURL("containerd", "2.1.4"), "pkg:golang/github.com/containerd/containerd/v2@v2.1.4"},
		{goPURL("runc", "v1.3.0"), "pkg:golang/github.com/opencontainers/runc@v1.3.0"},
		{goPURL("crictl", "v1.33.0"), "pkg:golang/sigs.k8s.io/cri-tools@v1.33.0"},
		{goPURL("joiner", "dev"), ""},
		{goPURL("cloudbase-init", "1.1.8"), ""},
		{ociPURL("registry.k8s.io/pause:3.10", "sha256:abc"), "pkg:oci/pause@sha256%3Aabc?repository_url=registry.k8s.io/pause&tag=3.10"},
		{ociPURL("localhost:5000/nodes/Debian-12@sha256:abc", "sha256:abc"), "pkg:oci/debian-12@sha256%3Aabc?repository_url=localhost:5000/nodes/Debian-12"},
		{osPackagePURL("deb", OS{ID: "ubuntu", Version: "24.04"}, baked.Package{Name: "zlib1g", Version: "1:1.3.dfsg-3.1ubuntu2", Arch: "amd64", Source: "zlib"}),
			"pkg:deb/ubuntu/zlib1g@1%3A1.3.dfsg-3.1ubuntu2?arch=amd64&distro=ubuntu-24.04&upstream=zlib"},
		{osPackagePURL("rpm", OS{ID: "rocky", Version: "9.5"}, baked.Package{Name: "shadow-utils", Version: "2:4.9-9.el9", Arch: "x86_64"}),
			"pkg:rpm/rocky/shadow-utils@4.9-9.el9?arch=x86_64&distro=rocky-9.5&epoch=2"},
		{osPackagePURL("", OS{ID: "debian", Version: "12"}, baked.Package{Name: "bash", Version: "5.2.15-2+b7"}), ""},
	} {
		assert.Equal(t, tc.want, tc.got)
	}
}

// A Windows image's SBOM lists its features and the binaries the bake
// installed, each with its sha256, and every SPDX identifier once.
func TestWindowsSBOM(t *testing.T) {
	img := Image{
		Name: "win-2022", Created: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC), Tool: "packer-plugin-kubenode-0.1.0",
		OS:      OS{Family: "windows", ID: "windows", Version: "2022", Name: "Windows Server 2022 Datacenter", Build: "20348"},
		Outputs: []Output{{File: "win-2022.qcow2", Format: "qcow2", SHA256: strings.Repeat("a", 64)}},
		Record: &baked.Record{Inventory: baked.Inventory{
			Artifacts: []baked.Artifact{{Name: "kubelet", Version: "v1.33.13", SHA256: strings.Repeat("b", 64)}},
			Features:  []string{"Containers", "Windows-Defender"},
			Files: []baked.File{
				{Path: `C:\k\kubelet.exe`, SHA256: strings.Repeat("b", 64)},
				{Path: `C:\opt\cni\bin\kubelet.exe`, SHA256: strings.Repeat("c", 64)},
			},
		}},
	}
	data, err := SPDX(img)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "sbom.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	doc := attesttest.SBOM(t, path)
	assert.Equal(t, []string{"2022"}, attesttest.Versions(doc, "windows"))
	assert.Equal(t, []string{"20348"}, attesttest.Versions(doc, "Containers"), "a feature is of the OS's build")
	assert.Equal(t, "Microsoft Corporation", attesttest.Package(doc, "Containers").PackageSupplier.Supplier)
	var files []string
	ids := map[string]bool{}
	for _, p := range doc.Packages {
		assert.False(t, ids[string(p.PackageSPDXIdentifier)], "%s is unique", p.PackageSPDXIdentifier)
		ids[string(p.PackageSPDXIdentifier)] = true
		if p.PrimaryPackagePurpose == "FILE" && p.PackageName == "kubelet.exe" {
			files = append(files, p.PackageFileName+" "+p.PackageChecksums[0].Value)
		}
	}
	assert.Equal(t, []string{`C:\k\kubelet.exe ` + strings.Repeat("b", 64), `C:\opt\cni\bin\kubelet.exe ` + strings.Repeat("c", 64)}, files)
	assert.True(t, strings.HasPrefix(doc.DocumentNamespace, "https://github.com/kubenode/packer-plugin-kubenode/spdx/win-2022-"))

	// Another image, another namespace.
	img.Outputs[0].SHA256 = strings.Repeat("d", 64)
	other, err := SPDX(img)
	require.NoError(t, err)
	var a, b struct {
		DocumentNamespace string `json:"documentNamespace"`
	}
	require.NoError(t, json.Unmarshal(data, &a))
	require.NoError(t, json.Unmarshal(other, &b))
	assert.NotEqual(t, a.DocumentNamespace, b.DocumentNamespace)

	_, err = SPDX(Image{Name: "none"})
	assert.Error(t, err, "an SBOM describes outputs")
	_, err = Provenance(Image{Name: "none"}, Build{})
	assert.Error(t, err, "a provenance has subjects")
}
