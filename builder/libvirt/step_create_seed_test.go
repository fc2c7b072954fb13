// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
)

// seed_directory replaces what it finds at its file names: a link planted
// there changes nothing outside, an existing file loses its mode, and a
// linked directory on the way is refused.
func TestSeedDirectoryFollowsNoLinks(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("precious\n"), 0o644))
	require.NoError(t, os.Symlink(victim, filepath.Join(dir, "user-data")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "meta-data"), []byte("old\n"), 0o644))
	disc := autounattend.Disc{Label: "cidata", Files: []autounattend.File{
		{Name: "user-data", Data: []byte("#cloud-config\n")},
		{Name: "meta-data", Data: []byte("instance-id: x\n")},
	}}
	require.NoError(t, writeSeedDirectory(dir, disc))

	got, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "precious\n", string(got), "the linked file is unchanged")
	st, err := os.Stat(victim)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	for _, f := range disc.Files {
		p := filepath.Join(dir, f.Name)
		st, err := os.Lstat(p)
		require.NoError(t, err)
		assert.True(t, st.Mode().IsRegular(), "%s is a regular file, not %s", f.Name, st.Mode())
		assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "%s: a seed holds secrets", f.Name)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, string(f.Data), string(b))
	}

	// A directory of the seed that is a link to another directory.
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "openstack")))
	err = writeSeedDirectory(dir, autounattend.Disc{Label: "config-2", Files: []autounattend.File{{Name: "openstack/latest/user_data", Data: []byte("x")}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "openstack"))
	_, err = os.Lstat(filepath.Join(outside, "latest"))
	assert.True(t, os.IsNotExist(err), "nothing was made through the link")
}
