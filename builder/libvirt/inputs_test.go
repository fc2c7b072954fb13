// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fileWith(t *testing.T, path, content string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}

// The provenance's inputs: each file the build started from, with the
// sha256 Packer checked it against, or else the sha256 of the file this
// machine read (the download in Packer's cache, or the local path).
func TestInputsNameTheSourcesWithTheirSHA256(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "debian-12.qcow2")
	baseSum := fileWith(t, base, "base disk")
	cached := filepath.Join(dir, "cache", "0a1b.iso")
	require.NoError(t, os.MkdirAll(filepath.Dir(cached), 0o755))
	virtioSum := fileWith(t, cached, "virtio-win")
	published := strings.Repeat("AB", 32)
	c := Config{DiskImage: base, source: sourceDiskImage,
		VirtioWinISO: "https://example.com/virtio-win.iso", VirtioWinISOChecksum: "md5:0123456789abcdef0123456789abcdef",
		ExtraCDROMs: []string{"https://example.com/extra.iso"}, ExtraCDROMsChecksums: []string{"sha256:" + published}}
	state := new(multistep.BasicStateBag)
	state.Put(stateVirtioWinISO, cached)
	state.Put(extraCDROMKey(0), filepath.Join(dir, "gone.iso")) // not read: its checksum is a sha256
	ui := &packersdk.BasicUi{Writer: new(strings.Builder), ErrorWriter: new(strings.Builder)}
	assert.Equal(t, []Input{
		{Name: "disk_image", URI: base, SHA256: baseSum},
		{Name: "virtio_win_iso", URI: "https://example.com/virtio-win.iso", SHA256: virtioSum},
		{Name: "extra_cdroms[0]", URI: "https://example.com/extra.iso", SHA256: strings.ToLower(published)},
	}, c.inputs(ui, state))

	iso := Config{source: sourceInstallISO}
	iso.ISOUrls = []string{"https://example.com/debian.iso", "https://mirror.example.com/debian.iso"}
	iso.ISOChecksum = "sha256:" + published
	state = new(multistep.BasicStateBag)
	state.Put(stateISOPath, filepath.Join(dir, "gone.iso"))
	assert.Equal(t, []Input{{Name: "iso_url", URI: "https://example.com/debian.iso", SHA256: strings.ToLower(published)}}, iso.inputs(ui, state))

	iso.ISOChecksum = "none"
	state.Put(stateISOPath, cached)
	assert.Equal(t, []Input{{Name: "iso_url", URI: "https://example.com/debian.iso", SHA256: virtioSum}}, iso.inputs(ui, state), "hashed when Packer checked none")
}

func TestSHA256Checksum(t *testing.T) {
	hexSum := strings.Repeat("0f", 32)
	for in, want := range map[string]string{
		"sha256:" + hexSum:                     hexSum,
		"SHA256:" + strings.ToUpper(hexSum):    hexSum,
		hexSum:                                 hexSum,
		"sha512:" + hexSum + hexSum:            "",
		"md5:0123456789abcdef0123456789abcdef": "",
		"none":                                 "",
		"":                                     "",
		"file:https://example.com/SHA256SUMS":  "",
		"sha256:" + hexSum[:10]:                "",
	} {
		assert.Equal(t, want, sha256Checksum(in), in)
	}
}
