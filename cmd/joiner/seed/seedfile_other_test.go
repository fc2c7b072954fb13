// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !windows

package seed_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/seed"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
)

const fix = "chown root:root %[1]s && chmod 0600 %[1]s"

// writeSeedFile writes a valid seed file with exactly mode (no umask).
func writeSeedFile(t *testing.T, mode os.FileMode) config.Paths {
	t.Helper()
	p := config.Paths{SeedFile: filepath.Join(t.TempDir(), "joiner-seed.yaml")}
	require.NoError(t, os.WriteFile(p.SeedFile, []byte("token: "+token+"\n"), 0o600))
	require.NoError(t, os.Chmod(p.SeedFile, mode))
	return p
}

// Whoever can write the seed file chooses the cluster the node joins: the
// joiner refuses one that anyone but root could have written, at once
// (waiting would not make it safe), naming what it found and the fix.
func TestUnsafeSeedFileIsRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		mode    os.FileMode
		owner   string // "" for root
		symlink bool
		dir     bool
		want    string
	}{
		"owned by a user": {mode: 0o600, owner: "uid 1000", want: "is owned by uid 1000"},
		"group-writable":  {mode: 0o620, want: "has mode 0620 (-rw--w----): its group or everyone may write it"},
		"world-writable":  {mode: 0o602, want: "has mode 0602 (-rw-----w-): its group or everyone may write it"},
		"a symbolic link": {mode: 0o600, symlink: true, want: "is a symbolic link, not a regular file"},
		"a directory":     {dir: true, want: "is a directory, not a regular file"},
	} {
		t.Run(name, func(t *testing.T) {
			saved := seed.TrustedOwner
			seed.TrustedOwner = func(*os.File, os.FileInfo) (string, bool, error) {
				if tc.owner != "" {
					return tc.owner, false, nil
				}
				return "uid 0", true, nil
			}
			t.Cleanup(func() { seed.TrustedOwner = saved })
			seed.PollInterval = 10 * time.Millisecond
			var p config.Paths
			switch {
			case tc.dir:
				p.SeedFile = filepath.Join(t.TempDir(), "joiner-seed.yaml")
				require.NoError(t, os.Mkdir(p.SeedFile, 0o700))
			case tc.symlink:
				target := writeSeedFile(t, tc.mode)
				p.SeedFile = filepath.Join(t.TempDir(), "joiner-seed.yaml")
				require.NoError(t, os.Symlink(target.SeedFile, p.SeedFile))
			default:
				p = writeSeedFile(t, tc.mode)
			}
			start := time.Now()
			_, _, err := seed.Find(context.Background(), p, time.Minute, io.Discard)
			require.ErrorIs(t, err, seed.ErrUnsafeFile)
			assert.Less(t, time.Since(start), 10*time.Second, "refused at once, not after the seed timeout")
			assert.Contains(t, err.Error(), p.SeedFile+" "+tc.want)
			assert.Contains(t, err.Error(), fmt.Sprintf(fix, p.SeedFile))
		})
	}
}

// The seed file holds a bootstrap token: one others may read is used, with
// a warning.
func TestGroupReadableSeedFileIsUsedWithAWarning(t *testing.T) {
	trustOwner(t)
	p := writeSeedFile(t, 0o644)
	var log bytes.Buffer
	data, _, err := seed.Find(context.Background(), p, time.Minute, &log)
	require.NoError(t, err)
	assert.Equal(t, "token: "+token+"\n", string(data))
	assert.Equal(t, "[config] WARNING: the join seed file "+p.SeedFile+" has mode 0644 (-rw-r--r--): its group or everyone may read the bootstrap token it holds; write it with mode 0600 (chmod 0600 "+p.SeedFile+")\n", log.String())

	log.Reset()
	_, _, err = seed.Find(context.Background(), writeSeedFile(t, 0o600), time.Minute, &log)
	require.NoError(t, err)
	assert.Empty(t, log.String(), "a private file says nothing")
}

// The real owner lookup: the tests' own files are the test user's, trusted
// only when that is root.
func TestSeedFileOwnerIsRoot(t *testing.T) {
	p := writeSeedFile(t, 0o600)
	f, err := os.Open(p.SeedFile)
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	who, trusted, err := seed.TrustedOwner(f, fi)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("uid %d", os.Getuid()), who)
	assert.Equal(t, os.Getuid() == 0, trusted)

	_, _, err = seed.Find(context.Background(), p, time.Minute, io.Discard)
	if os.Getuid() == 0 {
		assert.NoError(t, err)
	} else {
		require.ErrorIs(t, err, seed.ErrUnsafeFile)
		assert.Contains(t, err.Error(), fmt.Sprintf("%s is owned by uid %d", p.SeedFile, os.Getuid()))
	}
}
