// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// Every problem of registry_mirrors is named by its key.
func TestPrepareRegistryMirrors(t *testing.T) {
	dir := t.TempDir()
	ca := guesttest.CA(t, dir)
	notPEM := filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(notPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("x")}), 0o600))
	var c Config
	err := c.Prepare(map[string]any{
		"download_cache_dir": t.TempDir(),
		"registry_mirrors": []map[string]any{
			{"registry": "docker.io", "endpoints": []string{"https://mirror.example.com", "http://10.0.2.2:5000"}, "ca_file": ca},
			{"registry": "docker.io", "endpoints": []string{"https://other.example.com"}},
			{"registry": "https://quay.io", "endpoints": []string{"ftp://mirror.example.com", "https://user:pw@mirror.example.com", "https://mirror.example.com/?x=1", "mirror.example.com"}},
			{"registry": "ghcr.io", "endpoints": []string{}, "ca_file": filepath.Join(dir, "missing.pem")},
			{"registry": "_default", "endpoints": []string{"https://a.example.com", "https://a.example.com"}, "ca_file": notPEM},
		},
	})
	require.Error(t, err)
	msg := err.Error()
	assert.NotContains(t, msg, "* registry_mirrors[0]", "the good entry")
	for _, want := range []string{
		`registry_mirrors[1].registry: "docker.io" is configured already by registry_mirrors[0]`,
		`registry_mirrors[2].registry: "https://quay.io" is not a registry host`,
		`registry_mirrors[2].endpoints[0]: "ftp://mirror.example.com": want an https:// or http:// URL`,
		`registry_mirrors[2].endpoints[1]: "https://user:pw@mirror.example.com" holds user information`,
		`registry_mirrors[2].endpoints[2]: "https://mirror.example.com/?x=1" has a query or fragment`,
		`registry_mirrors[2].endpoints[3]: "mirror.example.com": want an https:// or http:// URL`,
		`registry_mirrors[3].endpoints: required`,
		`registry_mirrors[3].ca_file: open ` + filepath.Join(dir, "missing.pem"),
		`registry_mirrors[4].endpoints[1]: "https://a.example.com" is listed twice`,
		`registry_mirrors[4].ca_file: ` + notPEM + ` holds a PRIVATE KEY block`,
	} {
		assert.Contains(t, msg, want)
	}
}

// A mirror whose answers are not authenticated (http://, skip_verify) is
// named at Prepare, and only allow_resolve lets it resolve tags.
func TestUnverifiedMirrorsWarnAndPullOnly(t *testing.T) {
	for name, c := range map[string]struct {
		mirror   map[string]any
		warnings []string
		caps     []string // per endpoint: the capabilities line of hosts.toml
	}{
		"https": {
			mirror: map[string]any{"registry": "docker.io", "endpoints": []string{"https://mirror.example.com"}},
			caps:   []string{`capabilities = ["pull", "resolve"]`},
		},
		"http": {
			mirror:   map[string]any{"registry": "docker.io", "endpoints": []string{"https://mirror.example.com", "http://10.0.2.2:5000"}},
			warnings: []string{`registry_mirrors[0].endpoints[1] (http://10.0.2.2:5000): plain HTTP: the mirror is trusted to pull by digest only`},
			caps:     []string{`capabilities = ["pull", "resolve"]`, `capabilities = ["pull"]`},
		},
		"skip_verify": {
			mirror:   map[string]any{"registry": "docker.io", "endpoints": []string{"https://mirror.example.com"}, "skip_verify": true},
			warnings: []string{`registry_mirrors[0].skip_verify: the TLS certificates of registry_mirrors[0].endpoints are not checked: the mirror is trusted to pull by digest only`, `registry_mirrors[0].allow_resolve = true`},
			caps:     []string{`capabilities = ["pull"]`},
		},
		"allow_resolve": {
			mirror:   map[string]any{"registry": "docker.io", "endpoints": []string{"http://10.0.2.2:5000"}, "allow_resolve": true},
			warnings: []string{`registry_mirrors[0].endpoints[0] (http://10.0.2.2:5000): plain HTTP, and allow_resolve lets the mirror resolve tags`},
			caps:     []string{`capabilities = ["pull", "resolve"]`},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var cfg Config
			require.NoError(t, cfg.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "registry_mirrors": []map[string]any{c.mirror}}))
			if c.warnings == nil {
				assert.Empty(t, cfg.warnings)
			} else {
				require.Len(t, cfg.warnings, 1)
				for _, w := range c.warnings {
					assert.Contains(t, cfg.warnings[0], w)
				}
			}
			hosts, err := cfg.registryHosts()
			require.NoError(t, err)
			toml := node.HostsTOML(hosts[0], "")
			var got []string
			for _, l := range strings.Split(toml, "\n") {
				if strings.Contains(l, "capabilities") {
					got = append(got, strings.TrimSpace(l))
				}
			}
			assert.Equal(t, c.caps, got, toml)
		})
	}
}
