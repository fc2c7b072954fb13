// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package psquote

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestQuoteDoublesEverySingleQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "''",
		"plain":              "'plain'",
		"it's":               "'it''s'",
		"‘smart’ ‚quotes‛":   "'‘‘smart’’ ‚‚quotes‛‛'",
		`$(Remove-Item C:\)`: `'$(Remove-Item C:\)'`,
	} {
		assert.Equal(t, want, Quote(in), "Quote(%q)", in)
	}
}

func TestArray(t *testing.T) {
	assert.Equal(t, "@()", Array(nil))
	assert.Equal(t, "@(\r\n    'a'\r\n    'b''c'\r\n)", Array([]string{"a", "b'c"}))
}
