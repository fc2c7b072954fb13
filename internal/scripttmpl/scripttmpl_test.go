// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package scripttmpl

import (
	"strings"
	"testing"
	"testing/fstest"
	"text/template"
)

func q(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func TestRenderQuotesThroughItsFunctions(t *testing.T) {
	fsys := fstest.MapFS{"s/a.sh.tmpl": {Data: []byte("echo {{q .Name}}\n{{range .List}}rm {{. | q}}\n{{end}}{{template \"b.sh.tmpl\" .}}")},
		"s/b.sh.tmpl": {Data: []byte("{{if .Name}}{{$x := .Name}}touch {{q $x}}{{end}}\n")}}
	s, err := Parse(fsys, "s/*.sh.tmpl", template.FuncMap{"q": q}, "q")
	if err != nil {
		t.Fatal(err)
	}
	got := s.RenderString("a.sh.tmpl", map[string]any{"Name": "it's", "List": []string{"a b"}})
	want := "echo 'it'\\''s'\nrm 'a b'\ntouch 'it'\\''s'\n"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if n := s.Names(); len(n) != 2 || n[0] != "a.sh.tmpl" {
		t.Fatalf("names %v", n)
	}
}

func TestCheckRefusesAnUnquotedValue(t *testing.T) {
	for name, body := range map[string]string{
		"field":        "echo {{.Name}}",
		"in range":     "{{range .L}}echo {{.}}{{end}}",
		"in if":        "{{if .A}}echo {{.A}}{{end}}",
		"printf":       "echo {{printf \"%s\" .A}}",
		"quote first":  "echo {{q .A | printf \"%s\"}}",
		"in with else": "{{with .A}}{{else}}{{.B}}{{end}}",
	} {
		_, err := Parse(fstest.MapFS{"x.tmpl": {Data: []byte(body)}}, "*.tmpl", template.FuncMap{"q": q}, "q")
		if err == nil || !strings.Contains(err.Error(), "no quoting function") {
			t.Errorf("%s: %q: err = %v, want a refusal", name, body, err)
		}
	}
}

func TestParseRefusesAnUnknownSafeFunction(t *testing.T) {
	if _, err := Parse(fstest.MapFS{"x.tmpl": {Data: []byte("x")}}, "*.tmpl", template.FuncMap{}, "q"); err == nil {
		t.Fatal("want an error for a safe function that is not in funcs")
	}
}

func TestRenderPanicsOnAMissingKey(t *testing.T) {
	s := MustParse(fstest.MapFS{"x.tmpl": {Data: []byte("{{q .Missing}}")}}, "*.tmpl", template.FuncMap{"q": q}, "q")
	defer func() {
		if recover() == nil {
			t.Fatal("want a panic for a missing key")
		}
	}()
	s.Render("x.tmpl", map[string]string{})
}
