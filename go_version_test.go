// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"go/version"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goModVersion is the go line of a go.mod: the oldest Go that builds it.
func goModVersion(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+(?:\.\d+)?)\s*$`).FindSubmatch(b)
	require.NotNil(t, m, "%s has a go line", path)
	return string(m[1])
}

// TestReadmeStatesTheGoVersion: the install section names go.mod's go line
// as the Go the plugin needs, and no Go version README asks for is older
// than that line (Go refuses to build a module whose go line is newer than
// itself, unless it can fetch a newer toolchain).
func TestReadmeStatesTheGoVersion(t *testing.T) {
	minimum := goModVersion(t, "go.mod")
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	readme := string(b)
	assert.Contains(t, readme, "build it from this repository with Go "+minimum+" or newer (the `go` line of `go.mod`)")

	mentions := regexp.MustCompile(`\bGo (1\.\d+(?:\.\d+)?)(?:\+| or newer)`).FindAllStringSubmatch(readme, -1)
	require.NotEmpty(t, mentions)
	for _, m := range mentions {
		assert.GreaterOrEqual(t, version.Compare("go"+m[1], "go"+minimum), 0, "README.md asks for %q, older than go.mod's go %s", m[0], minimum)
	}
	capi := goModVersion(t, "cmd/lab/capirender/go.mod")
	assert.Contains(t, readme, "need Go "+version.Lang("go" + capi)[2:], "README.md names the Go cmd/lab/capirender needs (its go.mod: go %s)", capi)
}
