// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package scripttmpl renders the scripts a guest runs from template files
// (text/template), and checks that every value a template prints goes
// through one of the functions its caller names as quoting.
//
// A package keeps its scripts as *.sh.tmpl or *.ps1.tmpl files beside its
// Go code, embeds them, and renders each with a small typed input:
//
//	//go:embed scripts/*.sh.tmpl
//	var scriptFiles embed.FS
//	var scripts = scripttmpl.MustParse(scriptFiles, "scripts/*.sh.tmpl",
//		template.FuncMap{"q": q}, "q")
//	...
//	scripts.Render("kernel.sh.tmpl", p)
package scripttmpl

import (
	"bytes"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"text/template"
	"text/template/parse"
)

// Set is the templates of one folder, parsed once.
type Set struct {
	t    *template.Template
	safe map[string]bool
}

// Parse parses the files of fsys that match pattern. funcs are the
// templates' functions; safe names those whose result may be printed: the
// quoting functions, and functions that return a fixed fragment chosen from
// typed data. Every action that prints must end in one of them (Check).
func Parse(fsys fs.FS, pattern string, funcs template.FuncMap, safe ...string) (*Set, error) {
	t, err := template.New("").Option("missingkey=error").Funcs(funcs).ParseFS(fsys, pattern)
	if err != nil {
		return nil, err
	}
	s := &Set{t: t, safe: map[string]bool{}}
	for _, name := range safe {
		if _, ok := funcs[name]; !ok {
			return nil, fmt.Errorf("scripttmpl: safe function %q is not in funcs", name)
		}
		s.safe[name] = true
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	return s, nil
}

// MustParse is Parse for package-level variables: the templates are
// embedded, so an error is a bug of the program, found by any test.
func MustParse(fsys fs.FS, pattern string, funcs template.FuncMap, safe ...string) *Set {
	s, err := Parse(fsys, pattern, funcs, safe...)
	if err != nil {
		panic(err)
	}
	return s
}

// Render executes the template named name (its file's base name) with data.
// It panics on an execution error: inputs are typed, so an error is a bug
// of the program that the goldens find.
func (s *Set) Render(name string, data any) []byte {
	var b bytes.Buffer
	if err := s.t.ExecuteTemplate(&b, name, data); err != nil {
		panic(fmt.Sprintf("scripttmpl: %v", err))
	}
	return b.Bytes()
}

// RenderString is Render as a string.
func (s *Set) RenderString(name string, data any) string { return string(s.Render(name, data)) }

// Names lists the set's templates, sorted.
func (s *Set) Names() []string {
	var out []string
	for _, t := range s.t.Templates() {
		if t.Name() != "" && t.Tree != nil {
			out = append(out, t.Name())
		}
	}
	sort.Strings(out)
	return out
}

// Check reports every action that prints a value not passed last through a
// safe function, by template and line.
func (s *Set) Check() error {
	var problems []string
	for _, t := range s.t.Templates() {
		if t.Tree == nil || t.Tree.Root == nil {
			continue
		}
		walk(t.Tree.Root, func(a *parse.ActionNode) {
			if len(a.Pipe.Decl) > 0 {
				return // {{$x := ...}} prints nothing
			}
			if !s.safePipe(a.Pipe) {
				line, _ := t.Tree.ErrorContext(a)
				problems = append(problems, fmt.Sprintf("%s: %s prints a value through no quoting function", line, a.String()))
			}
		})
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("scripttmpl: %s", strings.Join(problems, "; "))
	}
	return nil
}

func (s *Set) safePipe(p *parse.PipeNode) bool {
	if p == nil || len(p.Cmds) == 0 {
		return false
	}
	last := p.Cmds[len(p.Cmds)-1]
	if len(last.Args) == 0 {
		return false
	}
	id, ok := last.Args[0].(*parse.IdentifierNode)
	return ok && s.safe[id.Ident]
}

// walk calls f for every action node under n, including those in if,
// range and with bodies.
func walk(n parse.Node, f func(*parse.ActionNode)) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			walk(c, f)
		}
	case *parse.ActionNode:
		f(n)
	case *parse.IfNode:
		walk(n.List, f)
		walk(n.ElseList, f)
	case *parse.RangeNode:
		walk(n.List, f)
		walk(n.ElseList, f)
	case *parse.WithNode:
		walk(n.List, f)
		walk(n.ElseList, f)
	}
}
