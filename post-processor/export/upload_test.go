// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package export

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/builder/libvirt"
)

// uploadWithMock uploads a small output into pool "images" of a mock
// driver that already holds volume node.qcow2 ("old image"), failing the
// calls named in failOn.
func uploadWithMock(t *testing.T, failOn ...string) (*libvirt.MockDriver, error) {
	t.Helper()
	m := libvirt.NewMockDriver()
	require.NoError(t, m.CreatePool("images", "/pools/images"))
	m.Pools["images"]["node.qcow2"] = []byte("old image")
	for _, call := range failOn {
		m.FailOn[call] = errors.New("connection reset")
	}
	orig := newDriver
	newDriver = func(string) (libvirt.Driver, error) { return m, nil }
	t.Cleanup(func() { newDriver = orig })

	path := filepath.Join(t.TempDir(), "node.qcow2")
	require.NoError(t, os.WriteFile(path, []byte("new image"), 0o600))
	c := &Config{}
	require.NoError(t, c.Prepare(map[string]interface{}{"upload_pool": "images", "upload_overwrite": true}))
	ui, _ := uiForTest()
	return m, upload(context.Background(), ui, c, path, Output{File: "node.qcow2", Format: "qcow2", Size: 9})
}

func volumes(m *libvirt.MockDriver) map[string]string {
	out := map[string]string{}
	for n, data := range m.Pools["images"] {
		out[n] = string(data)
	}
	return out
}

// upload_overwrite replaces a volume only with a complete upload: a failed
// one leaves the old volume as it was and no temporary volume.
func TestUploadOverwriteKeepsTheOldVolumeUntilTheNewOneIsComplete(t *testing.T) {
	m, err := uploadWithMock(t)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"node.qcow2": "new image"}, volumes(m))

	m, err = uploadWithMock(t, "UploadVolume")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "connection reset")
	assert.Contains(t, err.Error(), "volume node.qcow2 is unchanged")
	assert.Equal(t, map[string]string{"node.qcow2": "old image"}, volumes(m), "the old volume stays, the partial one is gone")

	// Once the old volume is gone, the complete new image is kept under the
	// temporary name if the upload under the real name fails.
	m, err = uploadWithMock(t, "UploadVolume images node.qcow2 ")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the new image is complete in volume node.qcow2"+partialSuffix)
	assert.Equal(t, map[string]string{"node.qcow2" + partialSuffix: "new image"}, volumes(m))
}
