// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package safefile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func victim(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(p, []byte("precious\n"), 0o644))
	require.NoError(t, os.Chmod(p, 0o644))
	return p
}

func unchanged(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "precious\n", string(b))
	st, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
}

func regular(t *testing.T, p string, perm os.FileMode, content string) {
	t.Helper()
	st, err := os.Lstat(p)
	require.NoError(t, err)
	assert.True(t, st.Mode().IsRegular(), "%s: %s", p, st.Mode())
	assert.Equal(t, perm, st.Mode().Perm(), p)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, content, string(b))
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// A link at the target is replaced, not followed; an existing file gets
// the new mode, whatever the umask.
func TestWriteFileReplacesLinksAndModes(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	v := victim(t)
	require.NoError(t, os.Symlink(v, filepath.Join(dir, "a")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b"), []byte("old"), 0o666))
	require.NoError(t, WriteFile(filepath.Join(dir, "a"), []byte("new a"), 0o644))
	require.NoError(t, WriteFile(filepath.Join(dir, "b"), []byte("new b"), 0o600))
	unchanged(t, v)
	regular(t, filepath.Join(dir, "a"), 0o644, "new a")
	regular(t, filepath.Join(dir, "b"), 0o600, "new b")
	assert.ElementsMatch(t, []string{"a", "b"}, names(t, dir), "no temporary file left")
}

// A failed write leaves the target as it was and no temporary file.
func TestWriteFailureLeavesTheTarget(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, []byte("before"), 0o600))
	err := Write(p, 0o644, func(w io.Writer) error {
		w.Write([]byte("half"))
		return errors.New("disk full")
	})
	require.ErrorContains(t, err, "disk full")
	regular(t, p, 0o600, "before")
	assert.Equal(t, []string{"f"}, names(t, dir))
}

// Copy writes a copy of its source with the mode asked for, replacing a
// link at the destination instead of writing through it.
func TestCopyReplacesLinks(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	require.NoError(t, os.WriteFile(src, []byte("disk"), 0o644))
	v := victim(t)
	require.NoError(t, os.Symlink(v, filepath.Join(dir, "dst")))
	require.NoError(t, Copy(src, filepath.Join(dir, "dst"), 0o600))
	unchanged(t, v)
	regular(t, filepath.Join(dir, "dst"), 0o600, "disk")
	assert.ElementsMatch(t, []string{"src", "dst"}, names(t, dir), "no temporary file left")
	assert.Error(t, Copy(filepath.Join(dir, "missing"), filepath.Join(dir, "dst2"), 0o600))
	assert.NoFileExists(t, filepath.Join(dir, "dst2"))
}

// Place takes a file from a private directory; a link there is refused.
func TestPlace(t *testing.T) {
	dir := t.TempDir()
	work, err := os.MkdirTemp(dir, ".work-")
	require.NoError(t, err)
	v := victim(t)
	require.NoError(t, os.Symlink(v, filepath.Join(dir, "out")))
	tmp := filepath.Join(work, "out")
	require.NoError(t, os.WriteFile(tmp, []byte("image"), 0o600))
	require.NoError(t, Place(tmp, filepath.Join(dir, "out"), 0o640))
	unchanged(t, v)
	regular(t, filepath.Join(dir, "out"), 0o640, "image")

	require.NoError(t, os.Symlink(v, filepath.Join(work, "link")))
	assert.Error(t, Place(filepath.Join(work, "link"), filepath.Join(dir, "out2"), 0o600))
	unchanged(t, v)
}

// OpenAppend appends to its own file and gives it the mode asked for; a
// link (symbolic or hard) or a FIFO at the name is refused, at once, and
// nothing is written through it.
func TestOpenAppendRefusesWhatIsNotItsOwn(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	for _, line := range []string{"one\n", "two\n"} {
		f, err := OpenAppend(log, 0o600)
		require.NoError(t, err)
		_, err = f.WriteString(line)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	regular(t, log, 0o600, "one\ntwo\n")

	v := victim(t)
	require.NoError(t, os.Symlink(v, filepath.Join(dir, "symlink")))
	require.NoError(t, os.Link(v, filepath.Join(dir, "hardlink")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	for _, name := range []string{"symlink", "hardlink", "fifo"} {
		f, err := OpenAppend(filepath.Join(dir, name), 0o600)
		if !assert.Error(t, err, name) {
			f.WriteString("planted\n")
			f.Close()
		}
	}
	unchanged(t, v)
}

// MkdirAll makes what is missing and refuses a linked component.
func TestMkdirAllRefusesLinks(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, MkdirAll(root, "a/b/c", 0o700))
	st, err := os.Stat(filepath.Join(root, "a", "b", "c"))
	require.NoError(t, err)
	assert.True(t, st.IsDir())
	require.NoError(t, MkdirAll(root, "a/b", 0o700), "existing directories are fine")

	outside := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "l")))
	err = MkdirAll(root, "l/x", 0o700)
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(root, "l"))
	assert.Empty(t, names(t, outside))
	assert.Error(t, MkdirAll(root, "../x", 0o700))
}
