// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build integration

package export

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// TestContainerDiskImportsIntoContainerd exports a disk as a containerdisk
// and reads it as a node would: imported into a containerd of the test's
// own with `ctr images import`, listed under its name with the digest the
// manifest records, mounted read-only; disk/node.qcow2 is the only file,
// owned by 107:107 (KubeVirt's qemu user) and mode 0440 in a 0555 disk/;
// copied out it passes `qemu-img check` and `qemu-img compare` with the
// source. The archive's index also lists the image's referrers (its SBOM
// and provenance), which the import stores without naming them. Needs
// root, containerd, ctr and qemu-img.
func TestContainerDiskImportsIntoContainerd(t *testing.T) {
	dir := t.TempDir()
	src := sourceImage(t, dir)
	out := filepath.Join(dir, "out")
	p := &PostProcessor{}
	require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"containerdisk"}, "output_directory": out}))
	ui, log := uiForTest()
	a, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}})
	require.NoError(t, err, log.String())
	m := a.(*Artifact).manifest
	require.Len(t, m.Outputs, 1)

	_, _, referrers := loadArchiveReferrers(t, filepath.Join(out, "node.containerdisk.tar"))
	require.Len(t, referrers, 2, "the SBOM and the provenance")
	cd := harness.ContainerDiskFromArchive(t, filepath.Join(out, "node.containerdisk.tar"))
	assert.Equal(t, m.Outputs[0].Image, cd.Ref, "named by the archive's index")
	assert.Equal(t, "localhost/kubenode/node:"+strings.TrimPrefix(m.Outputs[0].Digest, "sha256:")[:12], cd.Ref, "tagged by its digest (not baked)")
	assert.Equal(t, m.Outputs[0].Digest, cd.Digest, "containerd lists the digest the manifest records")
	assert.Equal(t, []harness.ContainerDiskEntry{
		{Path: "disk", UID: 107, GID: 107, Mode: fs.ModeDir | 0o555, Size: entrySize(cd.Entries, "disk")},
		{Path: "disk/node.qcow2", UID: 107, GID: 107, Mode: 0o440, Size: entrySize(cd.Entries, "disk/node.qcow2")},
	}, cd.Entries, "disk/node.qcow2 and its directory, nothing else")
	res, err := exec.Command("qemu-img", "compare", "-q", src, cd.Disk).CombinedOutput()
	assert.NoError(t, err, "the containerdisk's disk has the source's content: %s", res)
}

func entrySize(entries []harness.ContainerDiskEntry, path string) int64 {
	for _, e := range entries {
		if e.Path == path {
			return e.Size
		}
	}
	return -1
}
