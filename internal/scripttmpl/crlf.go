// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package scripttmpl

import (
	"bytes"
	"io"
	"io/fs"
	"path"
	"strings"
)

// CRLF returns fsys with its files' line ends read as CRLF: template files
// kept with LF in the repository render scripts with Windows' line ends,
// while a value a template prints keeps its own. Every LF becomes CRLF, so
// the files must hold no CR. A file whose name has ".lf." in it (e.g.
// prepare.lf.ps1.tmpl) is read as it is: a script sent whole on a command
// line, like the other short ones there, with LF.
func CRLF(fsys fs.FS) fs.FS { return crlfFS{fsys} }

// keepsLF reports whether CRLF reads the file name as it is.
func keepsLF(name string) bool { return strings.Contains(path.Base(name), ".lf.") }

type crlfFS struct{ fsys fs.FS }

func toCRLF(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) }

// ReadFile is what text/template's ParseFS reads through.
func (c crlfFS) ReadFile(name string) ([]byte, error) {
	b, err := fs.ReadFile(c.fsys, name)
	if err != nil || keepsLF(name) {
		return b, err
	}
	return toCRLF(b), nil
}

// Open returns a folder as it is and a file's converted bytes, so that
// Open and ReadFile agree.
func (c crlfFS) Open(name string) (fs.File, error) {
	f, err := c.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if info.IsDir() || keepsLF(name) {
		return f, nil
	}
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	b = toCRLF(b)
	return &crlfFile{Reader: bytes.NewReader(b), info: crlfInfo{info, int64(len(b))}}, nil
}

type crlfFile struct {
	*bytes.Reader
	info crlfInfo
}

func (f *crlfFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *crlfFile) Close() error               { return nil }

// crlfInfo is a file's information with the size of its converted bytes.
type crlfInfo struct {
	fs.FileInfo
	size int64
}

func (i crlfInfo) Size() int64 { return i.size }
