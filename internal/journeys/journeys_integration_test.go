// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build integration

package journeys_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
)

// TestJourneys runs, as written, the documented commands that need only
// this repository and what `make setup` installed: installing the plugin
// into packer and removing it, the pinned packer, kubenode-capi-render.
// The commands that need a control plane run in TestJoinRealControlPlane
// (cmd/joiner).
func TestJourneys(t *testing.T) {
	packer := harness.Packer(t)
	// packer from PATH, as `eval "$(scripts/setup.sh env)"` leaves it.
	path := "PATH=" + filepath.Dir(packer) + ":" + os.Getenv("PATH")

	t.Run("README.md: make dev joiner installs the plugin into packer, packer plugins remove removes it", func(t *testing.T) {
		// The reader's plugin folder: a temporary one, so the test
		// leaves this machine's packer as it was.
		plugins := t.TempDir()
		env := append(os.Environ(), path, "PACKER_PLUGIN_PATH="+plugins)
		installed := func() []string {
			m, err := filepath.Glob(filepath.Join(plugins, "github.com", "kubenode", "kubenode", "packer-plugin-kubenode_*"))
			require.NoError(t, err)
			return m
		}

		out, err := harness.RunJourney(t, harness.Journey{Page: "README.md", ID: "install", Env: env})
		require.NoError(t, err)
		assert.Contains(t, out, "github.com/kubenode/kubenode", "make dev ends with packer plugins installed")
		assert.NotEmpty(t, installed(), "the plugin is in PACKER_PLUGIN_PATH")
		for _, bin := range []string{"packer-plugin-kubenode", "dist/kubenode-joiner", "dist/kubenode-joiner.exe"} {
			assert.FileExists(t, filepath.Join(harness.Root(), bin))
		}

		_, err = harness.RunJourney(t, harness.Journey{Page: "README.md", ID: "remove-plugin", Env: env})
		require.NoError(t, err)
		assert.Empty(t, installed(), "the plugin is gone from PACKER_PLUGIN_PATH")
	})

	t.Run("docs/lab-windows.md step 0: the pinned packer", func(t *testing.T) {
		out, err := harness.RunJourney(t, harness.Journey{Page: "docs/lab-windows.md", ID: "packer"})
		require.NoError(t, err)
		assert.Contains(t, out, "packer")
	})

	t.Run("docs/cluster-api.md: kubenode-capi-render prints a worker's user data", func(t *testing.T) {
		key := filepath.Join(t.TempDir(), "id_ed25519")
		keygen, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "reader@example", "-f", key).CombinedOutput()
		require.NoError(t, err, "ssh-keygen: %s (apt-get install openssh-client)", keygen)
		pub, err := os.ReadFile(key + ".pub")
		require.NoError(t, err)

		out, err := harness.RunJourney(t, harness.Journey{Page: "docs/cluster-api.md", ID: "capi-render", Subs: []string{
			"sha256:<hex>", "sha256:" + strings.Repeat("0a", 32),
			"~/.ssh/id_ed25519.pub", key + ".pub",
		}})
		require.NoError(t, err)
		assert.Contains(t, out, "## template: jinja\n#cloud-config\n")
		assert.Contains(t, out, strings.TrimSpace(string(pub)), "the authorized key")
		assert.Contains(t, out, "10.0.2.2:6443")
	})
}
