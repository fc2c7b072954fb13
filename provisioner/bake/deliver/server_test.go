// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package deliver

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

func serve(t *testing.T) (*Server, versions.Artifact) {
	t.Helper()
	local := filepath.Join(t.TempDir(), "kubelet")
	require.NoError(t, os.WriteFile(local, []byte("the kubelet's bytes"), 0o644))
	a := versions.Artifact{Name: "kubelet", FileName: "kubelet", Local: local}
	srv, err := Start("127.0.0.1", 0, "127.0.0.1", []versions.Artifact{a})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv, a
}

func do(t *testing.T, method, url string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// The server answers GET, HEAD and ranges for the listed files under its
// secret prefix, and nothing else: no listing, no other path, no other
// method, no file outside the list.
func TestServerServesOnlyTheListedFilesUnderItsSecretPath(t *testing.T) {
	srv, a := serve(t)
	url := srv.URL(a)
	require.True(t, strings.HasPrefix(url, srv.Origin()+"/"))
	secret := strings.TrimSuffix(strings.TrimPrefix(url, srv.Origin()+"/"), "/kubelet")
	assert.Len(t, secret, 32, "128 random bits, hex")
	assert.NotContains(t, srv.Origin(), secret)

	code, body := do(t, http.MethodGet, url)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "the kubelet's bytes", body)
	code, body = do(t, http.MethodHead, url)
	assert.Equal(t, http.StatusOK, code)
	assert.Empty(t, body)
	code, body = do(t, http.MethodGet, url, "Range", "bytes=4-10")
	assert.Equal(t, http.StatusPartialContent, code, "a download can resume")
	assert.Equal(t, "kubelet", body)

	for _, p := range []string{
		"/kubelet",         // no secret
		"/" + secret + "/", // no listing
		"/" + secret,       // the prefix alone
		"/" + strings.Repeat("0", 32) + "/kubelet", // another secret
		"/" + secret + "/kubeadm",                  // not listed
		"/" + secret + "/../" + secret + "/kubelet",
		"/" + secret + "/x/kubelet",
	} {
		code, _ := do(t, http.MethodGet, srv.Origin()+p)
		assert.Equal(t, http.StatusNotFound, code, p)
	}
	code, _ = do(t, http.MethodPost, url)
	assert.Equal(t, http.StatusMethodNotAllowed, code)
	code, _ = do(t, http.MethodPut, url)
	assert.Equal(t, http.StatusMethodNotAllowed, code)

	requests, bytes := srv.Served()
	assert.Equal(t, int64(3), requests, "GET, HEAD and the range")
	assert.Equal(t, int64(len("the kubelet's bytes")+len("kubelet")), bytes)
}

func TestServerCloseStopsServing(t *testing.T) {
	srv, a := serve(t)
	require.NoError(t, srv.Close())
	require.NoError(t, srv.Close(), "a second Close does nothing")
	_, err := http.Get(srv.URL(a))
	assert.Error(t, err, "nothing listens once closed")
}

// Every Start has its own secret.
func TestEachServerHasItsOwnSecret(t *testing.T) {
	one, a := serve(t)
	two, _ := serve(t)
	assert.NotEqual(t, strings.TrimPrefix(one.URL(a), one.Origin()), strings.TrimPrefix(two.URL(a), two.Origin()))
}

func TestStartRefusesWhatItCannotServe(t *testing.T) {
	_, err := Start("127.0.0.1", 0, "build-host", nil)
	assert.ErrorContains(t, err, `"build-host" is not an IP address`)
	_, err = Start("127.0.0.1", 0, "127.0.0.1", []versions.Artifact{{Name: "kubelet", FileName: "kubelet"}})
	assert.ErrorContains(t, err, "artifact kubelet: no file to serve")
	_, err = Start("192.0.2.1", 0, "192.0.2.1", nil)
	assert.Error(t, err, "an address this machine does not have")
}

func TestBindAddress(t *testing.T) {
	assert.Equal(t, "127.0.0.1", BindAddress(UserNetGateway), "QEMU user networking reaches this machine's loopback")
	assert.Equal(t, "192.168.122.1", BindAddress("192.168.122.1"), "a libvirt network's own address")
}
