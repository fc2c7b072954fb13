// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build pwsh

// Package psparse parses and checks generated PowerShell without Windows, with the
// tree-sitter PowerShell grammar. It needs cgo and the grammar's headers:
// build with -tags pwsh and CGO_CFLAGS from scripts/setup.sh (the Makefile
// sets both), which is why it is behind a build tag.
package psparse

import (
	"fmt"
	"strings"

	powershell "github.com/airbus-cert/tree-sitter-powershell/bindings/go"
	sitter "github.com/tree-sitter/go-tree-sitter"
)

// Tree is a parsed script.
type Tree struct {
	src  []byte
	tree *sitter.Tree
}

// Parse parses src. A UTF-8 BOM at the start is skipped, as PowerShell does.
func Parse(src []byte) (*Tree, error) {
	src = []byte(strings.TrimPrefix(string(src), "\uFEFF"))
	p := sitter.NewParser()
	defer p.Close()
	if err := p.SetLanguage(sitter.NewLanguage(powershell.Language())); err != nil {
		return nil, fmt.Errorf("loading the PowerShell grammar: %w", err)
	}
	t := p.Parse(src, nil)
	if t == nil {
		return nil, fmt.Errorf("tree-sitter returned no tree")
	}
	return &Tree{src: src, tree: t}, nil
}

// Close frees the tree.
func (t *Tree) Close() { t.tree.Close() }

// Errors lists the syntax errors as "line:col: text" (1-based), or nil.
func (t *Tree) Errors() []string {
	var out []string
	var walk func(n *sitter.Node)
	walk = func(n *sitter.Node) {
		if n.IsError() || n.IsMissing() {
			pos := n.StartPosition()
			text := n.Utf8Text(t.src)
			if len(text) > 60 {
				text = text[:60] + "..."
			}
			kind := "error"
			if n.IsMissing() {
				kind = "missing " + n.Kind()
			}
			out = append(out, fmt.Sprintf("%d:%d: %s near %q", pos.Row+1, pos.Column+1, kind, text))
			return
		}
		if !n.HasError() {
			return
		}
		for i := uint(0); i < n.ChildCount(); i++ {
			walk(n.Child(i))
		}
	}
	walk(t.tree.RootNode())
	return out
}

// Check parses src and returns an error naming every syntax error.
func Check(src []byte) error {
	t, err := Parse(src)
	if err != nil {
		return err
	}
	defer t.Close()
	if errs := t.Errors(); len(errs) > 0 {
		return fmt.Errorf("PowerShell syntax errors:\n  %s", strings.Join(errs, "\n  "))
	}
	return nil
}

// Nodes returns the source text of every node of the given kind, in order.
func (t *Tree) Nodes(kind string) []string {
	var out []string
	var walk func(n *sitter.Node)
	walk = func(n *sitter.Node) {
		if n.Kind() == kind {
			out = append(out, n.Utf8Text(t.src))
		}
		for i := uint(0); i < n.ChildCount(); i++ {
			walk(n.Child(i))
		}
	}
	walk(t.tree.RootNode())
	return out
}
