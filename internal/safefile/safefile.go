// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package safefile writes files into directories where someone else may
// have planted links or files at the names written: nothing there is
// followed or written through. Each file is created under a fresh name
// beside its target with O_CREATE|O_EXCL (and O_NOFOLLOW where the system
// has it), given its mode on the open file, written, synced, closed and
// renamed over the target, which replaces whatever the name held, a link
// included. A failure leaves the target as it was and no temporary file.
package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Write replaces path with a regular file of mode perm holding what write
// writes into it.
func Write(path string, perm os.FileMode, write func(w io.Writer) error) (err error) {
	f, err := create(path)
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := write(f); err != nil {
		return err
	}
	return finish(f, path, perm)
}

// WriteFile replaces path with a regular file of mode perm holding data.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Copy replaces dst with a regular file of mode perm holding what src
// holds.
func Copy(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return Write(dst, perm, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}

// Place moves tmp, a file written by another program into a directory
// only the caller can write to (one os.MkdirTemp made), to path with mode
// perm: the mode is set and the file synced through a descriptor opened
// without following links, then it is renamed over path.
func Place(tmp, path string, perm os.FileMode) error {
	f, err := os.OpenFile(tmp, os.O_RDWR|noFollow, 0)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("%s is not a regular file (%s)", tmp, st.Mode())
	}
	return finish(f, path, perm)
}

// OpenAppend opens path to append to it, creating it with mode perm if it
// is missing: a log that grows over several runs, or that a child process
// writes through the descriptor. Nothing at path is followed: a link there
// is refused, and so is anything but a regular file of a single name (a
// hard link to someone else's file has two); the file gets perm on the
// open descriptor.
func OpenAppend(path string, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|noFollow|noBlock, 0o600)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && (!st.Mode().IsRegular() || linkCount(st) > 1) {
		err = fmt.Errorf("%s is not a regular file of a single name (%s): refusing to write through it", path, st.Mode())
	}
	if err == nil {
		err = f.Chmod(perm)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// MkdirAll makes the directories of rel (relative, slash- or
// OS-separated) under root, each new one with perm. A component that is a
// link or not a directory is an error: nothing is made through a link.
// root itself is taken as it is.
func MkdirAll(root, rel string, perm os.FileMode) error {
	dir := root
	for _, part := range strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/") {
		if part == "." || part == "" {
			continue
		}
		if part == ".." {
			return fmt.Errorf("%s: .. is not allowed", rel)
		}
		dir = filepath.Join(dir, part)
		err := os.Mkdir(dir, perm)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		st, err := os.Lstat(dir)
		if err != nil {
			return err
		}
		if !st.IsDir() {
			return fmt.Errorf("%s is not a directory (%s): refusing to write through it", dir, st.Mode())
		}
	}
	return nil
}

// create makes a new file, mode 0600 until finish sets its own, beside
// path: .<name>.<random>.tmp, created exclusively.
func create(path string) (*os.File, error) {
	dir, base := filepath.Split(path)
	for range 100 {
		b := make([]byte, 8)
		rand.Read(b)
		tmp := filepath.Join(dir, "."+base+"."+hex.EncodeToString(b)+".tmp")
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("creating a temporary file beside %s: every name tried exists", path)
}

// finish gives f perm, syncs and closes it and renames it to path, then
// syncs path's directory so that the rename lasts.
func finish(f *os.File, path string, perm os.FileMode) error {
	tmp := f.Name()
	// On the descriptor: exactly perm whatever the umask, and no name
	// lookup another user could redirect.
	err := f.Chmod(perm)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync() // not every file system syncs directories; the data is synced
		d.Close()
	}
	return nil
}
