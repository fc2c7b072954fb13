// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// apiServer answers /version with gitVersion and records every other
// request (which it refuses): enough to see whether a token was made.
func apiServer(t *testing.T, gitVersion string) (kubeconfig string, requests func() []string) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			fmt.Fprintf(w, `{"major":"1","minor":"33","gitVersion":%q}`, gitVersion)
			return
		}
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"refused by the test","code":403}`, http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	kubeconfig = filepath.Join(t.TempDir(), "admin.conf")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, srv.URL)), 0o600))
	return kubeconfig, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

func manifestFile(t *testing.T, data string) string {
	p := filepath.Join(t.TempDir(), "kubenode-manifest.json")
	require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	return p
}

func TestTokenChecksTheImageManifest(t *testing.T) {
	t.Run("out of skew: refused before a token is made, naming both versions", func(t *testing.T) {
		kc, requests := apiServer(t, "v1.33.13")
		m := manifestFile(t, `{"schema_version":2,"baked":{"kubernetes":"v1.34.1"}}`)
		var stdout, stderr bytes.Buffer
		code := run([]string{"token", "--kubeconfig", kc, "--image-manifest", m, "--output", filepath.Join(t.TempDir(), "j.yaml")}, &stdout, &stderr)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr.String(), "--image-manifest "+m)
		assert.Contains(t, stderr.String(), "the image's kubelet v1.34.1 cannot join a v1.33.13 control plane")
		assert.Contains(t, stderr.String(), "no token was made")
		assert.Empty(t, requests(), "nothing but /version was asked")
	})
	t.Run("in skew: the token is made", func(t *testing.T) {
		kc, requests := apiServer(t, "v1.33.13")
		m := manifestFile(t, `{"schema_version":2,"baked":{"kubernetes":"v1.33.4"}}`)
		var stdout, stderr bytes.Buffer
		run([]string{"token", "--kubeconfig", kc, "--image-manifest", m, "--output", filepath.Join(t.TempDir(), "j.yaml")}, &stdout, &stderr)
		assert.Contains(t, stderr.String(), "[token] the image's kubelet and kubeadm v1.33.4 can join the v1.33.13 control plane")
		assert.Contains(t, requests(), "POST /api/v1/namespaces/kube-system/secrets", "went on to create the token")
	})
}

func TestImageManifestErrorsNameTheFlag(t *testing.T) {
	oversized := `{"baked":{"kubernetes":"v1.33.1"},"pad":"` + strings.Repeat("x", 1<<20) + `"}`
	for name, data := range map[string]string{
		"malformed": `{"baked": {`,
		"oversized": oversized,
		"not baked": `{"baked": null}`,
	} {
		m := manifestFile(t, data)
		for _, cmd := range [][]string{
			{"token", "--output", "-", "--kubeconfig", "/nonexistent", "--image-manifest", m},
			{"doctor", "--kubeconfig", "/nonexistent", "--image-manifest", m},
		} {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, 1, run(cmd, &stdout, &stderr), "%s %s", name, cmd[0])
			assert.Contains(t, stderr.String(), "--image-manifest "+m+": ", "%s %s", name, cmd[0])
			assert.NotContains(t, stderr.String(), "kubeconfig", "%s %s: the manifest is read before the cluster", name, cmd[0])
		}
	}
}

func TestDoctorChecksTheImageManifest(t *testing.T) {
	kc, _ := apiServer(t, "v1.33.13")
	m := manifestFile(t, `{"baked":{"kubernetes":"v1.30.2"}}`)
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 1, run([]string{"doctor", "--kubeconfig", kc, "--image-manifest", m}, &stdout, &stderr))
	assert.Contains(t, stdout.String(), "[FAIL] image-version: the image's kubeadm v1.30.2 cannot join a v1.33.13 control plane")
}

// doctor checks for --os, by default the image's OS, else the OS it runs on.
func TestDoctorChecksForTheNodesOS(t *testing.T) {
	linux := manifestFile(t, `{"os":{"family":"linux"},"baked":{"kubernetes":"v1.33.2"}}`)
	windows := manifestFile(t, `{"os":{"family":"windows"},"baked":{"kubernetes":"v1.33.2"}}`)
	unknown := manifestFile(t, `{"os":{"family":"unknown"},"baked":{"kubernetes":"v1.33.2"}}`)
	hostCNI := map[string]string{"linux": "CNI (Linux)", "windows": "CNI (Windows)"}[hostOS]
	for _, tc := range []struct {
		args []string
		want string
	}{
		{want: hostCNI},
		{args: []string{"--os", "windows"}, want: "CNI (Windows)"},
		{args: []string{"--os", "linux"}, want: "CNI (Linux)"},
		{args: []string{"--image-manifest", windows}, want: "CNI (Windows)"},
		{args: []string{"--image-manifest", linux}, want: "CNI (Linux)"},
		{args: []string{"--image-manifest", unknown}, want: hostCNI},
		{args: []string{"--image-manifest", windows, "--os", "windows"}, want: "CNI (Windows)"},
	} {
		kc, _ := apiServer(t, "v1.33.13")
		var stdout, stderr bytes.Buffer
		run(append([]string{"doctor", "--kubeconfig", kc}, tc.args...), &stdout, &stderr)
		assert.Contains(t, stdout.String(), "] "+tc.want+": ", "%v", tc.args)
		assert.Contains(t, stdout.String(), "[ok  ] API server: answers, version v1.33.13", "%v", tc.args)
		if tc.want == "CNI (Linux)" {
			assert.NotContains(t, stdout.String(), "Windows", "%v", tc.args)
		}
	}

	var stdout, stderr bytes.Buffer
	assert.Equal(t, 1, run([]string{"doctor", "--kubeconfig", "/nonexistent", "--os", "linux", "--image-manifest", windows}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "--os linux: --image-manifest "+windows+" is of a windows image (os.family): give --os windows, or the manifest of a linux image")
	assert.NotContains(t, stderr.String(), "kubeconfig", "refused before the cluster is read")
}
