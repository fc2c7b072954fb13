// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package versions

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cloudbase-init's MSI comes from its GitHub release, checked against the
// pinned sha256 (its publisher prints no checksum file).
func TestCloudbaseInitArtifact(t *testing.T) {
	a := CloudbaseInit.WindowsArtifact()
	assert.Equal(t, ArtifactCloudbaseInit, a.Name)
	assert.Equal(t, "CloudbaseInitSetup_1_1_8_x64.msi", a.FileName)
	assert.Equal(t, "https://github.com/cloudbase/cloudbase-init/releases/download/1.1.8/CloudbaseInitSetup_1_1_8_x64.msi", a.URL)
	assert.Empty(t, a.ChecksumURL)
	raw, err := hex.DecodeString(a.PinnedSHA256)
	require.NoError(t, err)
	assert.Len(t, raw, 32)
	assert.Contains(t, ArtifactNames, ArtifactCloudbaseInit, "artifacts.cloudbase-init is a known key")
}
