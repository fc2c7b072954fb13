// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package psquote quotes values for PowerShell scripts: a value goes
// into a script only as a literal from Quote or an array of them from
// Array, never by string patching. The scripts are template files
// (internal/scripttmpl) whose quoting functions are built on these.
package psquote

import "strings"

// Quote returns s as a PowerShell single-quoted string literal. PowerShell
// treats the typographic quotes ‘ ’ ‚ ‛ like ' inside such a literal, so each
// of the five is doubled; nothing else is special in single quotes.
func Quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for _, r := range s {
		if IsSingleQuote(r) {
			b.WriteRune(r)
		}
		b.WriteRune(r)
	}
	b.WriteByte('\'')
	return b.String()
}

// IsSingleQuote reports the quote characters PowerShell treats as '.
func IsSingleQuote(r rune) bool {
	return r == '\'' || r == '\u2018' || r == '\u2019' || r == '\u201A' || r == '\u201B'
}

// Array returns the values as a PowerShell array expression, one per line.
func Array(values []string) string {
	if len(values) == 0 {
		return "@()"
	}
	var b strings.Builder
	b.WriteString("@(\r\n")
	for _, v := range values {
		b.WriteString("    " + Quote(v) + "\r\n")
	}
	b.WriteString(")")
	return b.String()
}

// UTF8BOM starts every script saved to a file: Windows PowerShell 5.1
// reads a .ps1 without a BOM in the ANSI code page, which would garble any
// non-ASCII value.
const UTF8BOM = "\uFEFF"
