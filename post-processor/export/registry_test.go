// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package export

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/builder/libvirt"
)

// containerdisk_insecure turned on both plain HTTP and unverified TLS, with
// the docker config's credentials: it is refused, naming the keys that
// replace it.
func TestContainerDiskInsecureIsRefused(t *testing.T) {
	err := (&PostProcessor{}).Configure(map[string]interface{}{
		"formats": []string{"containerdisk"}, "containerdisk_repository": "registry.example.com/nodes/x", "containerdisk_insecure": true,
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "containerdisk_insecure:")
	assert.Contains(t, err.Error(), "containerdisk_plain_http_hosts")
	assert.Contains(t, err.Error(), "containerdisk_ca_file")
}

// authRegistry is a registry that asks for Basic credentials and records
// every Authorization header it is sent.
type authRegistry struct {
	srv  *httptest.Server
	mu   sync.Mutex
	auth []string
}

func newAuthRegistry(t *testing.T, tls bool) *authRegistry {
	r := &authRegistry{}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		a := req.Header.Get("Authorization")
		if a == "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		r.mu.Lock()
		r.auth = append(r.auth, a)
		r.mu.Unlock()
		reg.ServeHTTP(w, req)
	})
	if tls {
		r.srv = httptest.NewTLSServer(h)
	} else {
		r.srv = httptest.NewServer(h)
	}
	t.Cleanup(r.srv.Close)
	return r
}

func (r *authRegistry) host() string {
	return strings.TrimPrefix(strings.TrimPrefix(r.srv.URL, "http://"), "https://")
}

func (r *authRegistry) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auth...)
}

// dockerConfig points DOCKER_CONFIG at a config holding user:pass for host.
func dockerConfig(t *testing.T, host string) {
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte("user:pass"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, host, auth)), 0o600))
	t.Setenv("DOCKER_CONFIG", dir)
}

// A loopback registry is pushed to over plain HTTP, and then without the
// docker config's credentials: they never cross plain HTTP.
func TestPushSendsNoCredentialsOverPlainHTTP(t *testing.T) {
	r := newAuthRegistry(t, false)
	dockerConfig(t, r.host())
	disk := blankQcow2(t)
	p := &PostProcessor{}
	require.NoError(t, p.Configure(map[string]interface{}{
		"formats": []string{"containerdisk"}, "output_directory": filepath.Join(t.TempDir(), "out"),
		"containerdisk_repository": r.host() + "/nodes/x",
	}))
	ui, logs := uiForTest()
	_, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{disk}})
	assert.Empty(t, r.seen(), "no credentials were sent over plain HTTP")
	require.Error(t, err, logs.String())
	assert.Contains(t, err.Error(), "plain HTTP")
}

// containerdisk_ca_file trusts a private CA: the push goes over verified
// TLS, with the docker config's credentials.
func TestPushTrustsContainerDiskCAFile(t *testing.T) {
	r := newAuthRegistry(t, true)
	dockerConfig(t, r.host())
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw}), 0o644))
	disk := blankQcow2(t)
	p := &PostProcessor{}
	require.NoError(t, p.Configure(map[string]interface{}{
		"formats": []string{"containerdisk"}, "output_directory": filepath.Join(t.TempDir(), "out"),
		"containerdisk_repository": r.host() + "/nodes/x", "containerdisk_ca_file": ca,
	}))
	ui, logs := uiForTest()
	a, _, _, err := p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{disk}})
	require.NoError(t, err, logs.String())
	assert.NotEmpty(t, a.(*Artifact).manifest.Outputs[0].Reference)
	assert.Contains(t, r.seen(), "Basic "+base64.StdEncoding.EncodeToString([]byte("user:pass")), "the credentials went over verified TLS")

	// Without the CA the certificate is not trusted, and nothing falls
	// back to plain HTTP with the credentials.
	r.mu.Lock()
	r.auth = nil
	r.mu.Unlock()
	p = &PostProcessor{}
	require.NoError(t, p.Configure(map[string]interface{}{
		"formats": []string{"containerdisk"}, "output_directory": filepath.Join(t.TempDir(), "out"),
		"containerdisk_repository": r.host() + "/nodes/x",
	}))
	_, _, _, err = p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{disk}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate")
	assert.Empty(t, r.seen())
}

// failTransport fails the test when a request gets past registryTransport.
type failTransport struct{ t *testing.T }

func (f failTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f.t.Errorf("%s %s was sent", req.Method, req.URL)
	return nil, fmt.Errorf("not sent")
}

// go-containerregistry tries plain HTTP for a registry at a private
// address or a .local name whatever name.Insecure says: the push's
// transport refuses it, as it refuses plain HTTP to a listed host while
// credentials are in use.
func TestRegistryTransportRefusesPlainHTTP(t *testing.T) {
	c := &Config{}
	require.NoError(t, c.Prepare(map[string]interface{}{
		"formats": []string{"containerdisk"}, "containerdisk_repository": "10.1.2.3:5000/nodes/x",
		"containerdisk_plain_http_hosts": []string{"Registry.Lab:5000", "mirror.lab"},
	}))
	assert.Empty(t, c.warnings, "a registry at a private address is not reached over plain HTTP unless listed")
	for _, tc := range []struct {
		url   string
		plain bool
		want  string
	}{
		{"http://10.1.2.3:5000/v2/", true, "only a loopback registry or one listed in containerdisk_plain_http_hosts"},
		{"http://192.168.1.1/v2/", true, "containerdisk_plain_http_hosts"},
		{"http://registry.local:5000/v2/", true, "containerdisk_plain_http_hosts"},
		{"http://registry.lab:5001/v2/", true, "containerdisk_plain_http_hosts"},
		{"http://registry.lab:5000/v2/", false, "credentials, which never cross plain HTTP"},
		{"http://127.0.0.1:5000/v2/", false, "credentials, which never cross plain HTTP"},
	} {
		rt := c.newRegistryTransport(tc.plain)
		rt.base = failTransport{t}
		req, err := http.NewRequest(http.MethodGet, tc.url, nil)
		require.NoError(t, err)
		_, err = rt.RoundTrip(req)
		require.Error(t, err, tc.url)
		assert.Contains(t, err.Error(), "refusing plain HTTP to "+req.URL.Host, tc.url)
		assert.Contains(t, err.Error(), tc.want, tc.url)
	}
	for _, u := range []string{"http://registry.lab:5000/v2/", "http://mirror.lab:8080/v2/", "http://localhost:5000/v2/", "http://[::1]:5000/v2/", "https://10.1.2.3:5000/v2/"} {
		sent := false
		rt := c.newRegistryTransport(true)
		rt.base = roundTripFunc(func(*http.Request) (*http.Response, error) { sent = true; return nil, fmt.Errorf("stop") })
		req, err := http.NewRequest(http.MethodGet, u, nil)
		require.NoError(t, err)
		rt.RoundTrip(req)
		assert.True(t, sent, u)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Prepare warns when the repository may be pushed to over plain HTTP, and
// when upload_uri is qemu+tcp://, with the builder's words for it.
func TestPrepareWarnings(t *testing.T) {
	c := &Config{}
	require.NoError(t, c.Prepare(map[string]interface{}{"formats": []string{"containerdisk"}, "containerdisk_repository": "localhost:5000/nodes/x"}))
	require.Len(t, c.warnings, 1)
	assert.Contains(t, c.warnings[0], "containerdisk_repository: localhost:5000 is a loopback registry")
	c = &Config{}
	require.NoError(t, c.Prepare(map[string]interface{}{"formats": []string{"containerdisk"}, "containerdisk_repository": "registry.lab/nodes/x", "containerdisk_plain_http_hosts": []string{"registry.lab"}}))
	require.Len(t, c.warnings, 1)
	assert.Contains(t, c.warnings[0], "containerdisk_repository: registry.lab is listed in containerdisk_plain_http_hosts")
	assert.Contains(t, c.warnings[0], "without the docker config's credentials")

	c = &Config{}
	require.NoError(t, c.Prepare(map[string]interface{}{"upload_pool": "images", "upload_uri": "qemu+tcp://hv.example/system"}))
	require.Len(t, c.warnings, 1)
	assert.Equal(t, libvirt.TCPURIWarning("upload_uri", "qemu+tcp://hv.example/system", "the uploaded image and the password hash and keys it holds"), c.warnings[0])
	assert.Contains(t, c.warnings[0], `upload_uri: "qemu+tcp://hv.example/system" is unencrypted and unauthenticated`)
	for _, uri := range []string{"qemu+ssh://root@hv.example/system", "qemu:///system", ""} {
		c = &Config{}
		require.NoError(t, c.Prepare(map[string]interface{}{"upload_pool": "images", "upload_uri": uri}))
		assert.Empty(t, c.warnings, uri)
	}

	// PostProcess prints them first.
	p := &PostProcessor{}
	require.NoError(t, p.Configure(map[string]interface{}{"upload_pool": "images", "upload_uri": "qemu+tcp://hv.example/system"}))
	ui, logs := uiForTest()
	p.PostProcess(context.Background(), ui, &fakeArtifact{files: []string{"/x/serial.log"}})
	assert.Contains(t, logs.String(), `kubenode-export: warning: upload_uri: "qemu+tcp://hv.example/system" is unencrypted`)
}
