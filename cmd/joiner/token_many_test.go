// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTokenManySeedsFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{args: []string{"--count", "3", "--node-name", "w"}, code: 2, want: "give --output FILE and/or --seed-iso FILE, or --output-dir DIR"},
		{args: []string{"--count", "3", "--node-name", "w", "--output", "x.yaml"}, code: 1, want: "--count 3: give --output-dir DIR"},
		{args: []string{"--format", "yaml", "--output", "x.yaml"}, code: 1, want: "--format yaml: give --output-dir DIR"},
		{args: []string{"--shared-token", "--seed-iso", "x.iso"}, code: 1, want: "--shared-token: give --output-dir DIR and --count N"},
		{args: []string{"--output-dir", dir, "--count", "3"}, code: 1, want: "--output-dir: give --node-name: a seed names its node (with --count 3, nodes are named <node-name>-1 to <node-name>-3)"},
		{args: []string{"--output-dir", dir, "--node-name", "w", "--seed-iso", "x.iso"}, code: 1, want: "--output-dir: give it instead of --output and --seed-iso"},
		{args: []string{"--output-dir", dir, "--node-name", "w", "--format", "qcow2"}, code: 1, want: `--format "qcow2": want iso or yaml`},
		{args: []string{"--output-dir", dir, "--node-name", "w", "--count", "0"}, code: 1, want: "--count 0: want 1 to 1000"},
		{args: []string{"--output-dir", dir, "--node-name", "Win_", "--count", "2"}, code: 1, want: `--node-name "Win_": node name "Win_-1"`},
		// A seed disc may not carry kubelet flags: refused before any token.
		{args: []string{"--output-dir", dir, "--node-name", "w", "--count", "2", "--kubelet-arg", "v=2", "--kubeconfig", "/nonexistent"}, code: 1, want: "kubeletExtraArgs: a join seed disc may not set it"},
		// The flags are fine: the next thing is the cluster.
		{args: []string{"--output-dir", dir, "--node-name", "w", "--count", "2", "--shared-token", "--kubeconfig", "/nonexistent"}, code: 1, want: "loading the admin kubeconfig"},
		{args: []string{"--output-dir", dir, "--node-name", "w", "--format", "yaml", "--kubeconfig", "/nonexistent"}, code: 1, want: "loading the admin kubeconfig"},
		// Nor a seed file: the node holds both to the same rules.
		{args: []string{"--output-dir", dir, "--node-name", "w", "--format", "yaml", "--kubelet-arg", "v=2", "--kubeconfig", "/nonexistent"}, code: 1, want: "--output-dir (--format yaml): kubeletExtraArgs: a join seed disc may not set it"},
		{args: []string{"--output-dir", dir, "--node-name", "w", "--count", "2", "--format", "yaml", "--cri-socket", "unix:///run/x.sock", "--kubeconfig", "/nonexistent"}, code: 1, want: "--output-dir (--format yaml): criSocket: a join seed disc may not set it"},
		{args: []string{"--seed-iso", filepath.Join(dir, "x.iso"), "--cri-socket", "unix:///run/x.sock", "--kubeconfig", "/nonexistent"}, code: 1, want: "no token was made"},
		// kubeadm writes an expiry only for a positive TTL: a negative one
		// would make a token that never expires.
		{args: []string{"--seed-iso", filepath.Join(dir, "x.iso"), "--ttl", "-1h", "--kubeconfig", "/nonexistent"}, code: 1, want: "--ttl -1h0m0s: a negative lifetime"},
		{args: []string{"--output-dir", dir, "--node-name", "w", "--count", "2", "--ttl", "-1s", "--kubeconfig", "/nonexistent"}, code: 1, want: "--ttl -1s: a negative lifetime"},
		// A shared token that never expires joins any number of machines
		// for ever.
		{args: []string{"--output-dir", dir, "--node-name", "w", "--count", "2", "--shared-token", "--ttl", "0", "--kubeconfig", "/nonexistent"}, code: 1, want: "--ttl 0 with --shared-token: "},
		// 0 for a token of one node is allowed: the flag says it never expires.
		{args: []string{"--seed-iso", filepath.Join(dir, "x.iso"), "--ttl", "0", "--kubeconfig", "/nonexistent"}, code: 1, want: "loading the admin kubeconfig"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"token"}, tc.args...), &stdout, &stderr)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, stderr.String())
		assert.Contains(t, stderr.String(), tc.want, "%v", tc.args)
		assert.NotContains(t, stderr.String(), "created bootstrap token", "%v", tc.args)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "no seed was written")
}

func TestWriteSeedsNamesEachAfterItsNode(t *testing.T) {
	for _, format := range []string{"iso", "yaml"} {
		dir := filepath.Join(t.TempDir(), "seeds")
		var cfgs []*config.Config
		for _, name := range []string{"w-1", "w-2"} {
			c := config.New()
			c.NodeName, c.Token, c.APIServerEndpoint = name, "abcdef.0123456789abcdef", "10.0.2.2:6443"
			cfgs = append(cfgs, c)
		}
		var log bytes.Buffer
		require.NoError(t, writeSeeds(dir, format, cfgs, &log))
		assert.Contains(t, log.String(), "[token] wrote 2 ")
		for _, name := range []string{"w-1", "w-2"} {
			path := filepath.Join(dir, name+"."+format)
			fi, err := os.Stat(path)
			require.NoError(t, err, format)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "it holds a token")
			var data []byte
			if format == "iso" {
				f, err := os.Open(path)
				require.NoError(t, err)
				disc, err := autounattend.ReadISO(f)
				f.Close()
				require.NoError(t, err)
				assert.Equal(t, config.SeedLabel, disc.Label)
				data, err = disc.File(config.FileName)
				require.NoError(t, err)
			} else {
				data, err = os.ReadFile(path)
				require.NoError(t, err)
			}
			back := config.New()
			require.NoError(t, back.MergeSeed(path, data), "the joiner takes it as a seed")
			assert.Equal(t, name, back.NodeName)
		}
	}
}
