// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/internal/jointest"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/kubenode/packer-plugin-kubenode/internal/journeys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"
)

// kindAPIServer answers what `joiner token` asks a kind cluster: it keeps
// the bootstrap token Secrets created, and serves kube-public/cluster-info
// naming server (kind's https://kind-control-plane:6443), signed for each
// token as the bootstrapsigner controller signs it. It writes an admin
// kubeconfig for it to path and returns the CA and the requests it saw.
func kindAPIServer(t *testing.T, path, server string) (jointest.CA, func() []string) {
	ca := jointest.NewCA(t)
	var mu sync.Mutex
	var seen, tokens []string
	const secrets = "/api/v1/namespaces/kube-system/secrets"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == secrets:
			// client-go sends protobuf or JSON: read it as the API server does.
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
			s, ok := obj.(*corev1.Secret)
			if err != nil || !ok {
				http.Error(w, fmt.Sprintf("not a Secret: %v", err), http.StatusBadRequest)
				return
			}
			bt, err := bootstraptokenv1.BootstrapTokenFromSecret(s)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			tokens = append(tokens, bt.Token.String())
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(s)
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/namespaces/kube-public/configmaps/"+bootstrapapi.ConfigMapClusterInfo:
			cm := jointest.ClusterInfo(t, ca, server, tokens...)
			cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
			_ = json.NewEncoder(w).Encode(cm)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
		}
	}))
	t.Cleanup(srv.Close)
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: kind-kind, cluster: {server: %q}}]
users: [{name: kind-kind, user: {token: admin}}]
contexts: [{name: kind-kind, context: {cluster: kind-kind, user: kind-kind}}]
current-context: kind-kind
`, srv.URL)), 0o600))
	return ca, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// labWindowsTokenCommand is the `joiner token` command of
// docs/lab-windows.md (its block marked `journey seed`), as written there:
// its words after the program.
func labWindowsTokenCommand(t *testing.T) []string {
	blocks, err := journeys.Load(filepath.Join("..", ".."))
	require.NoError(t, err)
	b, err := journeys.Find(blocks, "docs/lab-windows.md", "seed")
	require.NoError(t, err)
	require.Equal(t, 1, b.Commands(), "docs/lab-windows.md's seed block is one joiner token command")
	cmd := strings.ReplaceAll(b.Text, "\\\n", " ")
	words := strings.Fields(cmd)
	require.NotEmpty(t, words, "docs/lab-windows.md runs dist/kubenode-joiner token")
	require.Equal(t, "dist/kubenode-joiner", words[0])
	for _, w := range words {
		// Split on blanks as sh would: only while nothing is quoted or expanded.
		require.False(t, strings.ContainsAny(w, `<>$'"`+"`"), "%q: the command has no placeholder, variable or quoting", w)
	}
	return words[1:]
}

// docs/lab-windows.md step 6, run as written against a kind-shaped API
// server whose cluster-info names https://kind-control-plane:6443: the
// page's --extra-host for that name goes on the seed disc, and the joiner
// on the Windows clone takes the disc's hosts entry once discovery has
// verified that cluster-info.
func TestLabWindowsTokenCommandWritesTheSeed(t *testing.T) {
	args := labWindowsTokenCommand(t)
	require.Equal(t, "token", args[0])
	dir := t.TempDir()
	t.Chdir(dir)
	ca, requests := kindAPIServer(t, filepath.Join(dir, "kind.kubeconfig"), "https://kind-control-plane:6443")

	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(args, &stdout, &stderr), stderr.String())
	assert.Contains(t, stderr.String(), "[token] wrote seed disc win-node-1-join.iso (label "+config.SeedLabel+")")
	assert.Contains(t, requests(), "POST /api/v1/namespaces/kube-system/secrets")

	f, err := os.Open(filepath.Join(dir, "win-node-1-join.iso"))
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the disc holds a token")
	disc, err := autounattend.ReadISO(f)
	require.NoError(t, err)
	assert.Equal(t, config.SeedLabel, disc.Label)
	data, err := disc.File(config.FileName)
	require.NoError(t, err)

	// What the clone's joiner does with it: the image's joiner.yaml names
	// no API server; the seed's hosts entry waits for the verified
	// cluster-info, and is accepted for the name it uses.
	node := config.New()
	require.NoError(t, node.Merge("image", []byte("criSocket: npipe:////./pipe/containerd-containerd\n")))
	require.NoError(t, node.MergeSeed("D:\\joiner.yaml", data))
	assert.Equal(t, "192.168.150.1:6443", node.APIServerEndpoint)
	assert.Equal(t, []string{ca.Hash()}, node.CACertHashes)
	assert.Equal(t, "win-node-1", node.NodeName)
	assert.Equal(t, map[string]string{"kubenode.io/lab": "windows"}, node.Labels)
	assert.Equal(t, 30*time.Minute, node.Timeouts.NodeReady.Duration)
	assert.Equal(t, []corev1.HostAlias{{IP: "192.168.150.1", Hostnames: []string{"kind-control-plane"}}}, node.ExtraHosts)
	require.NoError(t, node.CheckSeedHostnames("https://kind-control-plane:6443"))
	node.SetDefaults("WIN-3F2A9C01BE4", config.DefaultCRISocket)
	require.NoError(t, node.Validate())
}

// The same command with a hosts entry for a name cluster-info does not
// use is refused before a token is made: the clone's joiner would refuse it.
func TestLabWindowsTokenCommandRefusesAnotherName(t *testing.T) {
	args := labWindowsTokenCommand(t)
	dir := t.TempDir()
	t.Chdir(dir)
	_, requests := kindAPIServer(t, filepath.Join(dir, "kind.kubeconfig"), "https://kind-control-plane:6443")
	for i, w := range args {
		if w == "kind-control-plane=192.168.150.1" {
			args[i] = "registry.k8s.io=192.168.150.1"
		}
	}
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 1, run(args, &stdout, &stderr))
	assert.Contains(t, stderr.String(), `--seed-iso: extraHosts[0].hostnames[0]: "registry.k8s.io" is neither the host name of the image's apiServerEndpoint`)
	assert.Contains(t, stderr.String(), "(kind-control-plane)")
	assert.Contains(t, stderr.String(), "no token was made")
	assert.NotContains(t, requests(), "POST /api/v1/namespaces/kube-system/secrets")
	_, err := os.Stat(filepath.Join(dir, "win-node-1-join.iso"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
