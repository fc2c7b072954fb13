// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/packer-plugin-sdk/multistep/commonsteps"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
)

func TestArtifactDeliveryKeysAreChecked(t *testing.T) {
	var c Config
	err := c.Prepare(map[string]any{
		"download_cache_dir": t.TempDir(), "artifact_delivery": "scp", "artifact_http_ip": "build-host",
		"artifact_http_bind_address": "::x", "artifact_http_port": 70000,
	})
	require.Error(t, err)
	for _, want := range []string{
		`artifact_delivery: "scp" is not http or communicator`,
		`artifact_http_ip: "build-host" is not an IP address`,
		`artifact_http_bind_address: "::x" is not an IP address`,
		"artifact_http_port: 70000 is not a TCP port",
	} {
		assert.Contains(t, err.Error(), want)
	}
	c = Config{}
	err = c.Prepare(map[string]any{"download_cache_dir": t.TempDir(), "artifact_delivery": "communicator", "artifact_http_ip": "192.168.122.1"})
	assert.ErrorContains(t, err, `artifact_delivery: "communicator" uploads the artifacts, so artifact_http_ip`)
}

// Which way the artifacts go, from the keys and the builder's {{ .HTTPIP }}.
func TestArtifactServerFollowsTheKeysAndTheBuilder(t *testing.T) {
	local := filepath.Join(t.TempDir(), "kubelet")
	require.NoError(t, os.WriteFile(local, []byte("kubelet"), 0o644))
	arts := []versions.Artifact{{Name: "kubelet", FileName: "kubelet", Local: local}}
	prepare := func(raw map[string]any) *Config {
		var c Config
		raw["download_cache_dir"] = t.TempDir()
		require.NoError(t, c.Prepare(raw))
		return &c
	}
	notSet := map[string]interface{}{"PackerHTTPIP": commonsteps.HttpIPNotImplemented}

	// The builder says nothing: uploaded, and the UI says why.
	ui := guesttest.NewUI()
	srv, err := prepare(map[string]any{}).artifactServer(ui, notSet, arts)
	require.NoError(t, err)
	assert.Nil(t, srv)
	assert.Contains(t, ui.Out.String(), "uploaded through the communicator (artifact_http_ip serves them over HTTP)")
	// Asked for http without an address: an error naming the keys.
	_, err = prepare(map[string]any{"artifact_delivery": "http"}).artifactServer(guesttest.NewUI(), nil, arts)
	assert.ErrorContains(t, err, `artifact_delivery: "http" needs the address at which the guest reaches this machine`)
	assert.ErrorContains(t, err, "set artifact_http_ip")
	// communicator wins over the builder's address.
	srv, err = prepare(map[string]any{"artifact_delivery": "communicator"}).artifactServer(guesttest.NewUI(), map[string]interface{}{"PackerHTTPIP": "127.0.0.1"}, arts)
	require.NoError(t, err)
	assert.Nil(t, srv)

	// QEMU user networking: the guest's 10.0.2.2 is this machine's
	// loopback, where the server listens; the URL names 10.0.2.2.
	srv, err = prepare(map[string]any{}).artifactServer(guesttest.NewUI(), map[string]interface{}{"PackerHTTPIP": "10.0.2.2"}, arts)
	require.NoError(t, err)
	require.NotNil(t, srv)
	defer srv.Close()
	assert.Regexp(t, `^http://10\.0\.2\.2:\d+/[0-9a-f]{32}/kubelet$`, srv.URL(arts[0]))
	resp, err := http.Get("http://127.0.0.1" + srv.Origin()[len("http://10.0.2.2"):] + srv.URL(arts[0])[len(srv.Origin()):])
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "kubelet", string(body))

	// artifact_http_ip and the bind address from the keys.
	srv2, err := prepare(map[string]any{"artifact_http_ip": "192.0.2.7", "artifact_http_bind_address": "127.0.0.1"}).artifactServer(guesttest.NewUI(), nil, arts)
	require.NoError(t, err)
	defer srv2.Close()
	assert.Regexp(t, `^http://192\.0\.2\.7:\d+/`, srv2.URL(arts[0]))
	// An address this machine does not have: the error names the keys.
	_, err = prepare(map[string]any{"artifact_http_ip": "192.0.2.7"}).artifactServer(guesttest.NewUI(), nil, arts)
	assert.ErrorContains(t, err, "serving the artifacts to the guest on 192.0.2.7 (artifact_http_bind_address, artifact_http_port)")
}
