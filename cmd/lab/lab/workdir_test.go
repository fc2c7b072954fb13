// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package lab

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
)

// A -work-dir that does not exist yet is made 0700, as the default one
// under $TMPDIR is: it holds the control plane's PKI, the seeds with their
// bootstrap tokens and the logs.
func TestNewWorkDirIsItsOwnersOnly(t *testing.T) {
	tmp := t.TempDir()
	joiner := filepath.Join(tmp, "kubenode-joiner")
	require.NoError(t, os.WriteFile(joiner, nil, 0o755))
	work := filepath.Join(tmp, "new", "work")
	o := Options{Root: tmp, Joiner: joiner, KubernetesDir: tmp, SkipBuild: true, ImageDir: tmp, WorkDir: work}
	var mode os.FileMode
	l, err := start(context.Background(), o, func(*Lab) []stage {
		return []stage{{"look", func(context.Context) error {
			fi, err := os.Stat(work)
			if err == nil {
				mode = fi.Mode().Perm()
			}
			return err
		}}}
	})
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), mode, "the work directory")
	fi, err := os.Stat(filepath.Dir(work))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "a directory made for it")
	require.NoError(t, l.Close())
}

// A link planted in the work directory at the name of a file the lab
// writes (its SSH key, a seed disc) is replaced by the lab's own file: the
// link's target keeps what it held.
func TestLinksInTheWorkDirAreNotWrittenThrough(t *testing.T) {
	work := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("precious"), 0o644))
	key := filepath.Join(work, "id_ed25519")
	iso := filepath.Join(work, "kubenode-lab-x-1-cidata.iso")
	for _, p := range []string{key, iso} {
		require.NoError(t, os.Symlink(victim, p))
	}
	_, _, err := newSSHKey(key)
	require.NoError(t, err)
	require.NoError(t, writeISO(iso, autounattend.Disc{Label: "cidata", Files: []autounattend.File{{Name: "meta-data", Data: []byte("instance-id: iid-node\n")}}}))
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "precious", string(b), "the link's target")
	for _, p := range []string{key, iso} {
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		assert.True(t, fi.Mode().IsRegular(), "%s: %s", p, fi.Mode())
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), p)
	}
}
