// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestModulePathIsGoMods: PluginReleaseStamped's -X names the version
// package by this module's path; a wrong one links silently and leaves the
// pre-release suffix in place.
func TestModulePathIsGoMods(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join(Root(), "go.mod"))
	require.NoError(t, err)
	first, _, _ := strings.Cut(string(mod), "\n")
	assert.Equal(t, "module "+modulePath, first)
}
