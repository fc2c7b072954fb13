// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

func TestMirrorURL(t *testing.T) {
	mirrors, errs := CleanMirrors(map[string]string{
		"https://dl.k8s.io/":                  "http://mirror.example:8080/dl.k8s.io/",
		"https://github.com":                  "http://mirror.example:8080/github.com",
		"https://github.com/containerd/":      "https://containerd-mirror.example/gh",
		"https://github.com/opencontainers/x": "http://unused.example",
	})
	require.Empty(t, errs)
	for in, want := range map[string][2]string{
		// The longest matching prefix wins.
		"https://github.com/containerd/containerd/releases/download/v2.1.4/containerd-2.1.4-linux-amd64.tar.gz": {"https://containerd-mirror.example/gh/containerd/releases/download/v2.1.4/containerd-2.1.4-linux-amd64.tar.gz", "https://github.com/containerd"},
		"https://github.com/opencontainers/runc/releases/download/v1.3.0/runc.amd64":                            {"http://mirror.example:8080/github.com/opencontainers/runc/releases/download/v1.3.0/runc.amd64", "https://github.com"},
		// Trailing slashes on either side make no difference.
		"https://dl.k8s.io/release/v1.33.13/bin/linux/amd64/kubelet.sha256": {"http://mirror.example:8080/dl.k8s.io/release/v1.33.13/bin/linux/amd64/kubelet.sha256", "https://dl.k8s.io"},
		"https://dl.k8s.io": {"http://mirror.example:8080/dl.k8s.io", "https://dl.k8s.io"},
		// No match, or a match that is not on a path segment: unchanged.
		"https://cdn.dl.k8s.io/release/v1.33.13/bin/linux/amd64/kubelet": {"https://cdn.dl.k8s.io/release/v1.33.13/bin/linux/amd64/kubelet", ""},
		"https://github.company.com/x":                                   {"https://github.company.com/x", ""},
		"http://github.com/x":                                            {"http://github.com/x", ""},
	} {
		got, prefix := mirrorURL(mirrors, in)
		assert.Equal(t, want[0], got, in)
		assert.Equal(t, want[1], prefix, in)
	}

	// No download_mirrors: every URL unchanged.
	a := versions.Artifact{Name: "kubelet", URL: "https://dl.k8s.io/k", ChecksumURL: "https://dl.k8s.io/k.sha256"}
	got, used := Options{}.mirrored(a)
	assert.Equal(t, a, got)
	assert.Empty(t, used)
}

// upstreamLayout serves files under the paths the official sites use,
// below /dl.k8s.io and /github.com, with the checksum files each publisher
// prints: a bare digest for dl.k8s.io's .sha256 and the CNI plugins' and
// crictl's .sha256, sha256sum lines otherwise (runc's one file for all its
// assets). It records the paths asked for.
func upstreamLayout(t *testing.T, arts []versions.Artifact) (*httptest.Server, func() []string) {
	files := map[string]string{}
	local := func(u string) string {
		for _, host := range []string{"https://dl.k8s.io", "https://github.com"} {
			if strings.HasPrefix(u, host+"/") {
				return "/" + strings.TrimPrefix(host, "https://") + strings.TrimPrefix(u, host)
			}
		}
		t.Fatalf("%s is on no site the test mirrors", u)
		return ""
	}
	for _, a := range arts {
		body := "the real " + a.FileName
		files[local(a.URL)] = body
		if strings.HasSuffix(a.ChecksumURL, ".sha256") {
			files[local(a.ChecksumURL)] = sum(body) + "\n"
		} else {
			files[local(a.ChecksumURL)] += sum(body) + "  " + a.FileName + "\n"
		}
	}
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), asked...) }
}

// Every official Linux download (Kubernetes binaries, containerd, runc,
// CNI plugins, crictl) and its checksum file come from the mirror, which
// serves the upstream layout; each is verified against the mirror's
// checksum file and artifact_checksums, the UI names each mirror once,
// and a second resolve finds the files in the cache. (The test's mirror is
// plain HTTP on 127.0.0.1: trust_http_mirror_checksums lets its checksum
// files count.)
func TestDownloadMirrorsServeEveryOfficialDownload(t *testing.T) {
	k8s, err := versions.LookupKubernetes("v1.33.13")
	require.NoError(t, err)
	ctr, err := versions.LookupContainerd("2.1.4")
	require.NoError(t, err)
	cni, err := versions.LookupCNIPlugins("v1.6.2")
	require.NoError(t, err)
	crictl, err := versions.LookupCrictl("", k8s)
	require.NoError(t, err)
	arts := append(append(k8s.LinuxArtifacts(), ctr.LinuxArtifacts()...), cni.LinuxArtifact(), crictl.LinuxArtifact())
	srv, asked := upstreamLayout(t, arts)

	mirrors, errs := CleanMirrors(map[string]string{
		"https://dl.k8s.io":  srv.URL + "/dl.k8s.io",
		"https://github.com": srv.URL + "/github.com/",
	})
	require.Empty(t, errs)
	o := Options{CacheDir: t.TempDir(), Mirrors: mirrors, Checksums: map[string]string{"kubeadm": sum("the real kubeadm")}, TrustHTTPMirrorChecksums: true}
	ui := &recordingUi{Ui: packersdk.TestUi(t)}
	got, err := o.Resolve(context.Background(), ui, arts)
	require.NoError(t, err)
	require.Len(t, got, len(arts))
	for i, a := range got {
		assert.Equal(t, sum("the real "+arts[i].FileName), a.SHA256, a.Name)
		assert.True(t, strings.HasPrefix(a.URL, srv.URL+"/"), "%s: %s", a.Name, a.URL)
		body, err := os.ReadFile(a.Local)
		require.NoError(t, err)
		assert.Equal(t, "the real "+arts[i].FileName, string(body))
	}
	for _, p := range asked() {
		assert.True(t, strings.HasPrefix(p, "/dl.k8s.io/release/") || strings.HasPrefix(p, "/github.com/"), p)
	}
	assert.Len(t, asked(), 2*len(arts), "each file and its checksum file, once")
	said := strings.Join(ui.said, "\n")
	assert.Equal(t, 1, strings.Count(said, "download_mirrors: https://dl.k8s.io/... is downloaded from "+srv.URL+"/dl.k8s.io/..."), said)
	assert.Equal(t, 1, strings.Count(said, "download_mirrors: https://github.com/... is downloaded from "+srv.URL+"/github.com/..."), said)

	// Cached: only the checksum files are read again.
	before := len(asked())
	_, err = o.Resolve(context.Background(), ui, arts)
	require.NoError(t, err)
	for _, p := range asked()[before:] {
		assert.True(t, strings.HasSuffix(p, ".sha256") || strings.HasSuffix(p, ".sha256sum"), p)
	}

	// A mirror whose file does not match its own checksum file fails, by
	// name, with the mirror's URLs.
	o.CacheDir = t.TempDir()
	bad := arts[0]
	bad.ChecksumURL = arts[1].ChecksumURL // kubeadm's digest for the kubelet
	_, err = o.Resolve(context.Background(), ui, []versions.Artifact{bad})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "artifact kubelet: "+srv.URL+"/dl.k8s.io/release/v1.33.13/bin/linux/amd64/kubelet has sha256 "+sum("the real kubelet")+" but "+srv.URL+"/dl.k8s.io/release/v1.33.13/bin/linux/amd64/kubeadm.sha256 publishes "+sum("the real kubeadm"))
	_, err = os.Stat(filepath.Join(o.CacheDir, sum("the real kubeadm"), "kubelet"))
	assert.True(t, os.IsNotExist(err), "nothing is cached under the wrong digest")
}

// recordingUi keeps what Say printed.
type recordingUi struct {
	packersdk.Ui
	mu   sync.Mutex
	said []string
}

func (u *recordingUi) Say(s string) {
	u.mu.Lock()
	u.said = append(u.said, s)
	u.mu.Unlock()
	u.Ui.Say(s)
}

// What validation cannot see (a Windows guest found at build time) is
// refused before the download: the checksum over plain HTTP is never the
// only proof.
func TestPlainHTTPChecksumIsNeverTheOnlyProof(t *testing.T) {
	k8s, err := versions.LookupKubernetes("v1.33.13")
	require.NoError(t, err)
	arts := k8s.WindowsArtifacts()
	srv, asked := upstreamLayout(t, arts)
	sums := map[string]string{}
	for _, a := range arts[:3] {
		sums[a.Name] = sum("the real " + a.FileName)
	}
	o := Options{CacheDir: t.TempDir(), Mirrors: map[string]string{"https://dl.k8s.io": srv.URL + "/dl.k8s.io"}, Checksums: sums}
	_, err = o.Resolve(context.Background(), packersdk.TestUi(t), arts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "artifact kube-log-runner: download_mirrors fetches its checksum file "+srv.URL+"/dl.k8s.io/release/v1.33.13/bin/windows/amd64/kube-log-runner.exe.sha256 over plain HTTP, which proves nothing about the download: give its sha256 as artifact_checksums.kube-log-runner")
	for _, p := range asked() {
		assert.NotContains(t, p, "kube-log-runner", "nothing of it was fetched")
	}

	// A mirror changing a file and its checksum file together fails
	// against artifact_checksums.
	o.Checksums["kube-log-runner"] = sum("what upstream publishes")
	_, err = o.Resolve(context.Background(), packersdk.TestUi(t), arts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "artifact kube-log-runner: ")
	assert.Contains(t, err.Error(), "artifact_checksums.kube-log-runner says "+sum("what upstream publishes"))
}
