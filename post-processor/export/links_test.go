// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package export

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Links planted in the output directory, at every name the export writes
// and at the temporary names it once used, change nothing outside it: the
// outputs replace the links with regular files of their own modes.
func TestExportFollowsNoLinks(t *testing.T) {
	dir := t.TempDir()
	src := sourceImage(t, dir)
	out := filepath.Join(dir, "out")
	require.NoError(t, os.Mkdir(out, 0o755))
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("precious\n"), 0o644))
	outputs := []string{"node.qcow2", "node.qcow2.sha256", "node.raw", "node.raw.sha256",
		"node.containerdisk.tar", "node.containerdisk.tar.sha256", ManifestFile}
	planted := append([]string{".node.qcow2.partial", ".node.raw.partial", ".node.containerdisk.tar.partial", ManifestFile + ".partial"}, outputs...)
	for _, n := range planted {
		require.NoError(t, os.Symlink(victim, filepath.Join(out, n)))
	}
	p := &PostProcessor{}
	require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"qcow2", "raw", "containerdisk"}, "output_directory": out}))
	ui, logs := uiForTest()
	_, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}})
	require.NoError(t, err, logs.String())

	got, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "precious\n", string(got), "the file the links point to is unchanged")
	assert.Equal(t, "-rw-r--r--", mode(t, victim))
	for _, n := range outputs {
		st, err := os.Lstat(filepath.Join(out, n))
		require.NoError(t, err)
		assert.True(t, st.Mode().IsRegular(), "%s is a regular file, not %s", n, st.Mode())
	}
	assert.Equal(t, "-rw-------", mode(t, filepath.Join(out, "node.qcow2")))
	assert.Equal(t, "-rw-------", mode(t, filepath.Join(out, "node.containerdisk.tar")))
	assert.Equal(t, "-rw-r--r--", mode(t, filepath.Join(out, "node.qcow2.sha256")))
	assert.Equal(t, "-rw-r--r--", mode(t, filepath.Join(out, ManifestFile)))
	validateManifest(t, filepath.Join(out, ManifestFile))
}

// An output directory other users can write to is refused, sticky or not:
// they could plant or swap files there. allow_shared_output_directory
// accepts it.
func TestExportRefusesASharedOutputDirectory(t *testing.T) {
	dir := t.TempDir()
	src := sourceImage(t, dir)
	for _, m := range []os.FileMode{0o777, 0o777 | os.ModeSticky} {
		out := filepath.Join(t.TempDir(), "out")
		require.NoError(t, os.Mkdir(out, 0o700))
		require.NoError(t, os.Chmod(out, m))
		p := &PostProcessor{}
		require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"raw"}, "output_directory": out}))
		ui, _ := uiForTest()
		_, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}})
		require.Error(t, err, "mode %s", m)
		assert.Contains(t, err.Error(), out)
		assert.Contains(t, err.Error(), "allow_shared_output_directory")
		assert.Empty(t, dirNames(t, out), "nothing written")

		p = &PostProcessor{}
		require.NoError(t, p.Configure(map[string]interface{}{"formats": []string{"raw"}, "output_directory": out, "allow_shared_output_directory": true}))
		_, _, _, err = p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{src}})
		require.NoError(t, err, "mode %s", m)
	}
}
