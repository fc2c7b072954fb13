// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package export

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostSecret is a file outside the build that a crafted disk header names:
// 1 MiB of a recognizable pattern.
func hostSecret(t *testing.T) (string, []byte) {
	t.Helper()
	data := bytes.Repeat([]byte("host-secret-0123"), 1<<16)
	p := filepath.Join(t.TempDir(), "host-secret")
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p, data
}

// noOutputHolds fails when a file under dir holds the start of secret.
func noOutputHolds(t *testing.T, dir string, secret []byte) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.False(t, bytes.Contains(b, secret[:64]), "%s holds the host file", p)
		return nil
	})
}

// A raw disk is whatever the guest wrote, its first sector included. One
// that starts with a qcow2 header naming a backing file is refused: read
// as qcow2 it would copy the host file the header names into the export.
func TestRawInputStartingWithAQcow2HeaderIsRefused(t *testing.T) {
	requireTool(t, "qemu-img")
	secret, data := hostSecret(t)
	hdr := filepath.Join(t.TempDir(), "hdr.qcow2")
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", "-b", secret, "-F", "raw", hdr, "1M")
	header, err := os.ReadFile(hdr)
	require.NoError(t, err)
	for _, file := range []string{"node.raw", "node.img"} {
		dir := t.TempDir()
		src := filepath.Join(dir, file)
		require.NoError(t, os.WriteFile(src, append(header, make([]byte, 1<<20-len(header))...), 0o600))
		out := filepath.Join(dir, "out")
		p := &PostProcessor{}
		require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"raw", "containerdisk"}, "output_directory": out}))
		ui, logs := uiForTest()
		_, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}})
		noOutputHolds(t, out, data)
		require.Error(t, err, logs.String())
		assert.Contains(t, err.Error(), src)
		assert.Contains(t, err.Error(), "starts with a qcow2 header")
	}
}

// A qcow2 with a backing file or an external data file would have
// qemu-img read those files into the export: refused unless the key that
// allows it is set.
func TestQcow2InputWithBackingOrDataFileIsRefused(t *testing.T) {
	requireTool(t, "qemu-img")
	secret, data := hostSecret(t)
	for _, tc := range []struct {
		name, key string
		create    []string
	}{
		{"backing file", "allow_backing_file", []string{"-b", secret, "-F", "raw"}},
		{"external data file", "allow_external_data_file", []string{"-o", "data_file=" + secret + ",data_file_raw=on"}},
	} {
		dir := t.TempDir()
		src := filepath.Join(dir, "node.qcow2")
		run(t, "qemu-img", append(append([]string{"create", "-q", "-f", "qcow2"}, tc.create...), src, "1M")...)
		// qemu-img create truncates a data file: put the secret back.
		require.NoError(t, os.WriteFile(secret, data, 0o600))
		out := filepath.Join(dir, "out")
		p := &PostProcessor{}
		require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"raw"}, "output_directory": out}))
		ui, logs := uiForTest()
		_, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}})
		noOutputHolds(t, out, data)
		require.Error(t, err, "%s: %s", tc.name, logs.String())
		assert.Contains(t, err.Error(), src, tc.name)
		assert.Contains(t, err.Error(), tc.name+" "+secret, tc.name)
		assert.Contains(t, err.Error(), tc.key, tc.name)

		// The key lets it through: the export then holds that file.
		p = &PostProcessor{}
		require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"raw"}, "output_directory": out, tc.key: true}))
		_, _, _, err = p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}})
		require.NoError(t, err, "%s: %s", tc.name, logs.String())
		got, err := os.ReadFile(filepath.Join(out, "node.raw"))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(data, got), tc.name)
	}
}
