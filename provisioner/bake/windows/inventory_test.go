// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

// The inventory query hashes the binaries in the folders the bake
// installs into, and its answer is read line by line.
func TestInventoryQuery(t *testing.T) {
	q := inventoryQuery()
	assert.Contains(t, q, `foreach ($dir in @('C:\k', 'C:\Program Files\containerd', 'C:\opt\cni\bin'))`)
	assert.NotContains(t, q, "\r", "a short script's lines end with LF")

	out := "kubenode-feature: Windows-Defender\r\n" +
		"kubenode-feature: Containers\r\n" +
		"WARNING: something else\r\n" +
		"kubenode-feature: Containers\r\n" +
		"kubenode-file: " + strings.Repeat("ab", 32) + " C:\\k\\kubelet.exe\r\n" +
		"kubenode-file: " + strings.Repeat("AB", 32) + " C:\\k\\upper.exe\r\n" +
		"kubenode-file: " + strings.Repeat("cd", 32) + " C:\\Program Files\\containerd\\bin\\containerd.exe\r\n"
	assert.Equal(t, baked.Inventory{
		Features: []string{"Containers", "Windows-Defender"},
		Files: []baked.File{
			{Path: `C:\k\kubelet.exe`, SHA256: strings.Repeat("ab", 32)},
			{Path: `C:\Program Files\containerd\bin\containerd.exe`, SHA256: strings.Repeat("cd", 32)},
		},
	}, parseInventory(out))
}

// A guest that answers no features or no files fails the bake: the
// image's SBOM would miss them.
func TestInventoryFailsWithoutAnAnswer(t *testing.T) {
	g := guesttest.NewWindows()
	r := &guest{Remote: &remote.Remote{Comm: g, UI: guesttest.NewUI()}}
	_, err := r.inventory(context.Background())
	require.ErrorContains(t, err, "asking the guest for its Windows features and the binaries' sha256, for the image's SBOM: exit 0, <nil>, 6 features, 0 files")

	g.Files["C:/k/kubelet.exe"] = []byte("kubelet")
	inv, err := r.inventory(context.Background())
	require.NoError(t, err)
	assert.Equal(t, guesttest.WindowsFeatures, inv.Features)
	sum := sha256.Sum256([]byte("kubelet"))
	assert.Equal(t, []baked.File{{Path: `C:\k\kubelet.exe`, SHA256: hex.EncodeToString(sum[:])}}, inv.Files)
}
