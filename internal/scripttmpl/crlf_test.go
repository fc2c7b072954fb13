// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package scripttmpl

import (
	"io"
	"io/fs"
	"testing"
	"testing/fstest"
	"text/template"
)

func TestCRLFReadsLFAsCRLF(t *testing.T) {
	fsys := CRLF(fstest.MapFS{
		"s/a.ps1.tmpl":          {Data: []byte("# a\n{{q .}}\n")},
		"s/prepare.lf.ps1.tmpl": {Data: []byte("# b\n{{q .}}\n")},
	})
	for name, want := range map[string]string{"s/a.ps1.tmpl": "# a\r\n{{q .}}\r\n", "s/prepare.lf.ps1.tmpl": "# b\n{{q .}}\n"} {
		b, err := fs.ReadFile(fsys, name)
		if err != nil || string(b) != want {
			t.Errorf("ReadFile(%s) = %q, %v, want %q", name, b, err, want)
		}
		f, err := fsys.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		b, err = io.ReadAll(f)
		info, _ := f.Stat()
		f.Close()
		if err != nil || string(b) != want || info.Size() != int64(len(want)) {
			t.Errorf("Open(%s) reads %q (size %d), %v, want %q", name, b, info.Size(), err, want)
		}
	}
	if _, err := fs.ReadFile(fsys, "s/missing.ps1.tmpl"); err == nil {
		t.Error("a missing file was read")
	}
	if m, err := fs.Glob(fsys, "s/*.tmpl"); err != nil || len(m) != 2 {
		t.Errorf("Glob = %v, %v", m, err)
	}

	// A value keeps its own line ends.
	s, err := Parse(fsys, "s/*.tmpl", template.FuncMap{"q": q}, "q")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.RenderString("a.ps1.tmpl", "x\ny"), "# a\r\n'x\ny'\r\n"; got != want {
		t.Errorf("rendered %q, want %q", got, want)
	}
	if got, want := s.RenderString("prepare.lf.ps1.tmpl", "x"), "# b\n'x'\n"; got != want {
		t.Errorf("rendered %q, want %q", got, want)
	}
}
