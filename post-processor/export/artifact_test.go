// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package export

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/packer-plugin-sdk/packer/registry/image"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/registrytest"
)

func TestArtifactReportsEveryOutputToHCPPacker(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	a := &Artifact{
		dir:    "output-debian",
		source: "/work/output-debian/base.qcow2",
		manifest: Manifest{
			OS:       OSInfo{Family: "linux", ID: "debian", Version: "12", Name: "Debian GNU/Linux 12 (bookworm)", SeedFlavor: "cloud-init"},
			Firmware: Firmware{Type: "uefi"},
			Baked:    &Baked{Kubernetes: "v1.33.13", Containerd: "1.7.24", Bootstrap: "cluster-api"},
			Outputs: []Output{
				{File: "node.qcow2", Format: "qcow2", Compression: "zstd", SHA256: "aa11"},
				{File: "node.vhdx", Format: "vhdx", Compression: "none", SHA256: "bb22"},
			},
		},
		volume: &uploadedVolume{uri: "qemu:///system", pool: "images", name: "debian-node.qcow2"},
	}
	dir := filepath.Join(wd, "output-debian")
	// Packer merges the labels of a build's images into one map: every
	// image carries the same, build-wide ones (format, compression and
	// sha256 of one output would be overwritten by the next's).
	labels := func() map[string]string {
		return map[string]string{
			"os_family": "linux", "os_id": "debian", "os_version": "12", "os_name": "Debian GNU/Linux 12 (bookworm)",
			"seed_flavor": "cloud-init", "firmware": "uefi", "kubernetes_version": "v1.33.13", "containerd_version": "1.7.24",
			"bootstrap": "cluster-api",
		}
	}

	got := registrytest.Images(t, a)

	assert.Equal(t, []image.Image{
		{ImageID: filepath.Join(dir, "node.qcow2"), ProviderName: "qemu", ProviderRegion: dir, SourceImageID: "/work/output-debian/base.qcow2", Labels: labels()},
		{ImageID: filepath.Join(dir, "node.vhdx"), ProviderName: "qemu", ProviderRegion: dir, SourceImageID: "/work/output-debian/base.qcow2", Labels: labels()},
		{ImageID: "images/debian-node.qcow2", ProviderName: "libvirt", ProviderRegion: "qemu:///system", SourceImageID: "/work/output-debian/base.qcow2", Labels: labels()},
	}, got)
}

func TestArtifactWithoutOutputsReportsNothingToHCPPacker(t *testing.T) {
	assert.Nil(t, registrytest.Images(t, &Artifact{dir: "output-debian"}))
	// Packer tests the state against nil: a typed nil would pass as images.
	v := (&Artifact{dir: "output-debian"}).State(image.ArtifactStateURI)
	assert.True(t, v == nil, "State returned %#v, not an untyped nil", v)
}

// Every output names what the input was made from (the builder's
// disk_image), whether or not an output replaced the input's file: the
// input may be deleted (keep_input_artifact = false), and the build's
// source must not change between runs.
func TestExportedImagesNameTheirSource(t *testing.T) {
	dir := t.TempDir()
	src := sourceImage(t, dir)
	base := map[interface{}]interface{}{"ImageID": src, "ProviderName": "qemu", "SourceImageID": "/images/debian-12-base.qcow2"}

	for _, tc := range []struct {
		name, format, imageID string
	}{
		{"the input's file stays", "raw", filepath.Join(dir, "node.raw")},
		{"an output replaced the input's file", "qcow2", src},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &PostProcessor{}
			require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{tc.format}}))
			ui, log := uiForTest()
			a, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}, hcp: base})
			require.NoError(t, err, log.String())
			got := registrytest.Images(t, a)
			require.Len(t, got, 1)
			assert.Equal(t, tc.imageID, got[0].ImageID)
			assert.Equal(t, "/images/debian-12-base.qcow2", got[0].SourceImageID)
			assert.NotContains(t, got[0].Labels, "sha256", "a label of one output only")
		})
	}
	t.Run("an input that reports no image: no source", func(t *testing.T) {
		p := &PostProcessor{}
		require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"raw"}, "output_directory": filepath.Join(dir, "none")}))
		ui, log := uiForTest()
		a, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}})
		require.NoError(t, err, log.String())
		got := registrytest.Images(t, a)
		require.Len(t, got, 1)
		assert.Empty(t, got[0].SourceImageID)
	})
}

// packerKeeps is Packer core's decision on the input artifact after a
// post-processor (packer/build.go, PostProcessor run loop): the
// post-processor's keep unless the template sets keep_input_artifact, and
// the template's false ignored when the post-processor forces its keep.
func packerKeeps(keep, force bool, keepInputArtifact *bool) bool {
	if keepInputArtifact == nil || (keep && !*keepInputArtifact && force) {
		return keep
	}
	return *keepInputArtifact
}

func TestKeepInputArtifact(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "output-debian")
	require.NoError(t, os.Mkdir(in, 0o755))
	src := sourceImage(t, in)
	link := filepath.Join(dir, "link-to-output")
	require.NoError(t, os.Symlink(in, link))
	no, yes := false, true
	for _, tc := range []struct {
		name              string
		outputDir         string // "" for the default, the input's directory
		keepInputArtifact *bool
		kept              bool
	}{
		{"unset: kept", filepath.Join(dir, "images"), nil, true},
		{"true: kept", filepath.Join(dir, "images"), &yes, true},
		{"false: removed", filepath.Join(dir, "images"), &no, false},
		{"false, a directory whose name starts like the input's: removed", in + "-images", &no, false},
		{"false, outputs in the input's directory: kept, removing it would remove them", "", &no, true},
		{"false, outputs below the input's directory: kept", filepath.Join(in, "images"), &no, true},
		{"false, the input's directory through a symlink: kept", link, &no, true},
		{"false, below the input's directory through a symlink: kept", filepath.Join(link, "images"), &no, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &PostProcessor{}
			require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"raw"}, "output_directory": tc.outputDir}))
			ui, log := uiForTest()
			_, keep, force, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src, filepath.Join(in, "serial.log")}})
			require.NoError(t, err, log.String())
			assert.True(t, keep, "kept by default")
			assert.Equal(t, tc.kept, packerKeeps(keep, force, tc.keepInputArtifact))
		})
	}
}
