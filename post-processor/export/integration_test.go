//go:build integration

package export

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/builder/libvirt"
	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
)

// TestUploadIntoPool uploads an export into a pool on the real libvirtd,
// downloads it back byte-identical, refuses to overwrite it unless told,
// and replaces it when told, byte-identical again.
func TestUploadIntoPool(t *testing.T) {
	harness.Libvirtd(t)
	d, err := libvirt.NewDriver("qemu:///system")
	require.NoError(t, err)
	defer d.Close()
	pool := "kubenode-it-upload"
	require.NoError(t, d.CreatePool(pool, "/var/lib/libvirt/images/"+pool))
	defer func() {
		names, _ := d.VolumeNames(pool)
		for _, n := range names {
			d.DeleteVolume(pool, n)
		}
		assert.NoError(t, d.DeletePool(pool))
	}()

	dir := t.TempDir()
	src := sourceImage(t, dir)
	cfg := map[string]interface{}{"output_directory": filepath.Join(dir, "out"), "upload_pool": pool, "upload_volume": "node.qcow2"}
	p := &PostProcessor{}
	require.NoError(t, p.Configure(cfg))
	ui, log := uiForTest()
	_, _, _, err = p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}})
	require.NoError(t, err, log.String())

	var back bytes.Buffer
	require.NoError(t, d.DownloadVolume(pool, "node.qcow2", &back))
	want, err := os.ReadFile(filepath.Join(dir, "out", "node.qcow2"))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, back.Bytes()), "downloaded volume differs from the export (%d vs %d bytes)", back.Len(), len(want))

	_, _, _, err = p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}})
	assert.ErrorContains(t, err, `upload_volume: "node.qcow2" already exists in pool "kubenode-it-upload"; set upload_overwrite = true`)

	cfg["upload_overwrite"] = true
	p = &PostProcessor{}
	require.NoError(t, p.Configure(cfg))
	_, _, _, err = p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}})
	require.NoError(t, err)
	names, err := d.VolumeNames(pool)
	require.NoError(t, err)
	assert.Equal(t, []string{"node.qcow2"}, names, "replaced, and no partial volume left")
	// The export ran again: compare with what it wrote this time (qemu-img
	// compresses clusters in parallel, so two runs may order them apart).
	want, err = os.ReadFile(filepath.Join(dir, "out", "node.qcow2"))
	require.NoError(t, err)
	back.Reset()
	require.NoError(t, d.DownloadVolume(pool, "node.qcow2", &back))
	assert.True(t, bytes.Equal(want, back.Bytes()), "the replacement is the export's bytes (%d vs %d bytes)", back.Len(), len(want))
}
