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
			Baked:    &Baked{Kubernetes: "v1.33.13", Containerd: "1.7.24"},
			Outputs: []Output{
				{File: "node.qcow2", Format: "qcow2", Compression: "zstd", SHA256: "aa11"},
				{File: "node.vhdx", Format: "vhdx", Compression: "none", SHA256: "bb22"},
			},
		},
		volume: &uploadedVolume{uri: "qemu:///system", pool: "images", name: "debian-node.qcow2"},
	}
	dir := filepath.Join(wd, "output-debian")
	common := map[string]string{
		"os_family": "linux", "os_id": "debian", "os_version": "12", "os_name": "Debian GNU/Linux 12 (bookworm)",
		"seed_flavor": "cloud-init", "firmware": "uefi", "kubernetes_version": "v1.33.13", "containerd_version": "1.7.24",
	}
	with := func(format, compression, sum string) map[string]string {
		l := map[string]string{"format": format, "compression": compression, "sha256": sum}
		for k, v := range common {
			l[k] = v
		}
		return l
	}

	got := registrytest.Images(t, a)

	assert.Equal(t, []image.Image{
		{ImageID: filepath.Join(dir, "node.qcow2"), ProviderName: "qemu", ProviderRegion: dir, SourceImageID: "/work/output-debian/base.qcow2", Labels: with("qcow2", "zstd", "aa11")},
		{ImageID: filepath.Join(dir, "node.vhdx"), ProviderName: "qemu", ProviderRegion: dir, SourceImageID: "/work/output-debian/base.qcow2", Labels: with("vhdx", "none", "bb22")},
		{ImageID: "images/debian-node.qcow2", ProviderName: "libvirt", ProviderRegion: "qemu:///system", SourceImageID: "/work/output-debian/base.qcow2", Labels: with("qcow2", "zstd", "aa11")},
	}, got)
}

func TestExportedImagesNameTheirSource(t *testing.T) {
	dir := t.TempDir()
	src := sourceImage(t, dir)
	base := map[interface{}]interface{}{"ImageID": src, "ProviderName": "qemu", "SourceImageID": "/images/debian-12-base.qcow2"}

	t.Run("the input's image, when it stays", func(t *testing.T) {
		p := &PostProcessor{}
		require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"raw"}}))
		ui, log := uiForTest()
		a, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}, hcp: base})
		require.NoError(t, err, log.String())
		got := registrytest.Images(t, a)
		require.Len(t, got, 1)
		assert.Equal(t, filepath.Join(dir, "node.raw"), got[0].ImageID)
		assert.Equal(t, src, got[0].SourceImageID)
		assert.Len(t, got[0].Labels["sha256"], 64)
	})
	t.Run("what the input was made from, when an output replaced it", func(t *testing.T) {
		p := &PostProcessor{}
		require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"qcow2"}}))
		ui, log := uiForTest()
		a, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}, hcp: base})
		require.NoError(t, err, log.String())
		got := registrytest.Images(t, a)
		require.Len(t, got, 1)
		assert.Equal(t, src, got[0].ImageID)
		assert.Equal(t, "/images/debian-12-base.qcow2", got[0].SourceImageID)
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
