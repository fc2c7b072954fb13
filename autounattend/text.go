// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// checkText reports why s cannot be carried by the generated files, or ""
// when it can. Every user value passes here: it must be valid UTF-8 and may
// not contain control characters (XML 1.0 cannot carry most of them, and a
// newline would end a preseed or kickstart line). multiline allows \n and \t
// (for script bodies).
func checkText(s string, multiline bool) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, r := range s {
		if multiline && (r == '\n' || r == '\t') {
			continue
		}
		if unicode.IsControl(r) || r == '\uFFFE' || r == '\uFFFF' || (r >= 0xD800 && r <= 0xDFFF) {
			return "contains a control character (newline, tab, NUL, ...), which is not allowed here"
		}
	}
	return ""
}

// checkRequiredText reports an empty s or one checkText refuses, and
// whether s passed.
func checkRequiredText(p *problems, field, s string) bool {
	if s == "" {
		p.add(field, "is required")
		return false
	}
	if why := checkText(s, false); why != "" {
		p.add(field, "%s", why)
		return false
	}
	return true
}

// oneOf reports whether s is one of allowed.
func oneOf(s string, allowed ...string) bool {
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	return false
}

func quoteList(allowed ...string) string {
	q := make([]string, len(allowed))
	for i, a := range allowed {
		q[i] = `"` + a + `"`
	}
	return strings.Join(q, ", ")
}
