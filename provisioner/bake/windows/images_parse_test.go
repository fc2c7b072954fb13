// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build pwsh

package windows

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/psparse"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// The images step and the containerd step with registry mirrors (CA file,
// skip_verify, _default) parse; in the images step every import and pull
// is an Invoke-KubenodeNative call (which checks $LASTEXITCODE) inside the
// else branch of the check that skips it when done.
func TestWindowsImagesAndRegistryParse(t *testing.T) {
	w := basePlan(t).WithDefaults()
	w.Images = guesttest.Images()
	w.RegistryHosts = []node.RegistryHost{
		{Registry: "docker.io", Endpoints: []string{"https://mirror.example.com", "http://10.0.2.2:5000"}, SkipVerify: true,
			CA: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"},
		{Registry: "_default", Endpoints: []string{"https://it's.example.com"}},
	}
	for name, src := range map[string][]byte{"images": imagesScript(w), "containerd": containerd(w)} {
		tree, err := psparse.Parse(src)
		require.NoError(t, err, name)
		assert.Empty(t, tree.Errors(), name)
		if name == "images" {
			var natives int
			for _, n := range tree.Nodes("if_statement") {
				if strings.Contains(n, "Test-KubenodeImage -Ref ") {
					_, elseBranch, ok := strings.Cut(n, "} else {")
					require.True(t, ok, n)
					assert.Contains(t, elseBranch, "Invoke-KubenodeNative -What 'ctr images ", n)
					natives += strings.Count(elseBranch, "Invoke-KubenodeNative")
				}
			}
			// 2 archives (1 + 2 refs labelled) and 1 pull (pull + label).
			assert.Equal(t, 2+3+2, natives)
		}
		tree.Close()
	}
	assert.Error(t, psparse.Check([]byte(strings.Replace(string(imagesScript(w)), "} else {", "} else", 1))), "the check can fail")
}
