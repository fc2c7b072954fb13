// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

// stallingServer answers /kubelet.sha256 with a checksum and /kubelet with
// a first chunk, then stalls; any other path is accepted and never
// answered, not even with headers.
func stallingServer(t *testing.T) *httptest.Server {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/kubelet.sha256":
			w.Write([]byte(sum("real kubelet")))
			return
		case "/kubelet":
			w.Write([]byte("real "))
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv
}

// resolveWithin resolves arts and fails the test when that takes longer
// than limit (a download that hangs).
func resolveWithin(t *testing.T, limit time.Duration, arts []versions.Artifact) error {
	t.Helper()
	o := Options{CacheDir: t.TempDir()}
	done := make(chan error, 1)
	go func() {
		_, err := o.Resolve(context.Background(), packersdk.TestUi(t), arts)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("the download still waits after %s", limit)
		return nil
	}
}

func shrinkDownloadTimeouts(t *testing.T) {
	saved := downloadTimeouts
	t.Cleanup(func() { downloadTimeouts = saved })
	downloadTimeouts.Connect, downloadTimeouts.TLS, downloadTimeouts.Header, downloadTimeouts.Idle = time.Second, time.Second, 200*time.Millisecond, 300*time.Millisecond
}

// A server that accepts the connection and never sends headers fails the
// download instead of hanging the build.
func TestDownloadGivesUpOnAServerThatNeverAnswers(t *testing.T) {
	shrinkDownloadTimeouts(t)
	srv := stallingServer(t)
	err := resolveWithin(t, 5*time.Second, []versions.Artifact{{Name: "kubelet", FileName: "kubelet", URL: srv.URL + "/kubelet", ChecksumURL: srv.URL + "/never.sha256"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "artifact kubelet: reading the published checksum: GET "+srv.URL+"/never.sha256")
	assert.Contains(t, err.Error(), "timeout awaiting response headers")
}

// A body that stops coming fails after the idle timeout; a slow one that
// keeps coming is not cut (there is no whole-download timeout).
func TestDownloadGivesUpOnABodyThatStops(t *testing.T) {
	shrinkDownloadTimeouts(t)
	srv := stallingServer(t)
	err := resolveWithin(t, 5*time.Second, []versions.Artifact{{Name: "kubelet", FileName: "kubelet", URL: srv.URL + "/kubelet", ChecksumURL: srv.URL + "/kubelet.sha256"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "artifact kubelet: downloading "+srv.URL+"/kubelet")
	assert.Contains(t, err.Error(), "no data for 300ms")

	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/kubelet.sha256" {
			w.Write([]byte(sum("real kubelet")))
			return
		}
		for _, b := range []byte("real kubelet") {
			w.Write([]byte{b})
			w.(http.Flusher).Flush()
			time.Sleep(100 * time.Millisecond) // 1.2 s in all, each pause under Idle
		}
	}))
	defer slow.Close()
	err = resolveWithin(t, 10*time.Second, []versions.Artifact{{Name: "kubelet", FileName: "kubelet", URL: slow.URL + "/kubelet", ChecksumURL: slow.URL + "/kubelet.sha256"}})
	require.NoError(t, err)
}

// A cached file swapped after the download verified it is refused, by
// name, rather than baked in under its new hash: whether it was just
// downloaded or found in the cache.
func TestResolveRefusesAFileSwappedAfterTheDownload(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/kubelet":
			w.Write([]byte("real kubelet"))
		case "/kubelet.sha256":
			w.Write([]byte(sum("real kubelet")))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	arts := []versions.Artifact{{Name: "kubelet", FileName: "kubelet", URL: srv.URL + "/kubelet", ChecksumURL: srv.URL + "/kubelet.sha256"}}
	o := Options{CacheDir: t.TempDir()}
	for _, name := range []string{"downloaded", "cached"} {
		t.Run(name, func(t *testing.T) {
			var swapped string
			afterDownload = func(path string) {
				swapped = path
				require.NoError(t, os.WriteFile(path, []byte("evil kubelet"), 0o755))
			}
			defer func() { afterDownload = func(string) {} }()
			got, err := o.Resolve(context.Background(), packersdk.TestUi(t), arts)
			require.Error(t, err, "resolved to %+v", got)
			assert.Contains(t, err.Error(), "artifact kubelet: "+swapped+" has sha256 "+sum("evil kubelet")+", not the "+sum("real kubelet")+" verified against "+srv.URL+"/kubelet.sha256")
			// The real file back: the next resolve finds it in the cache.
			require.NoError(t, os.WriteFile(swapped, []byte("real kubelet"), 0o755))
		})
	}
	got, err := o.Resolve(context.Background(), packersdk.TestUi(t), arts)
	require.NoError(t, err)
	assert.Equal(t, sum("real kubelet"), got[0].SHA256, "the guest checks the published sha256")
}

// An artifact whose publisher prints no checksum file (cloudbase-init's
// MSI) is checked against the sha256 the version table pins; a file that
// differs is refused with both digests, and a pin that is no sha256 is
// refused before any download.
func TestDownloadChecksAPinnedSHA256(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		w.Write([]byte("msi"))
	}))
	defer srv.Close()
	o := Options{CacheDir: t.TempDir()}
	good := versions.Artifact{Name: versions.ArtifactCloudbaseInit, FileName: "setup.msi", URL: srv.URL + "/setup.msi", PinnedSHA256: sum("msi")}
	got, err := o.Resolve(context.Background(), packersdk.TestUi(t), []versions.Artifact{good})
	require.NoError(t, err)
	assert.Equal(t, sum("msi"), got[0].SHA256)

	bad := good
	bad.PinnedSHA256 = sum("other")
	_, err = o.Resolve(context.Background(), packersdk.TestUi(t), []versions.Artifact{bad})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "artifact cloudbase-init: "+srv.URL+"/setup.msi has sha256 "+sum("msi")+" but the version table pins "+sum("other"))

	before := hits
	bad.PinnedSHA256 = ""
	_, err = o.Resolve(context.Background(), packersdk.TestUi(t), []versions.Artifact{bad})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "artifact cloudbase-init: no published checksum and no sha256 pinned for "+srv.URL+"/setup.msi; give the file as artifacts.cloudbase-init")
	assert.Equal(t, before, hits, "nothing is downloaded without a checksum")
}

func sum(data string) string {
	h := sha256.Sum256([]byte(data))
	return hex.EncodeToString(h[:])
}

func TestResolveLocalArtifactsAndChecksums(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kubelet"), []byte("kubelet"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kubeadm"), []byte("kubeadm"), 0o755))
	o := Options{Dir: dir, Checksums: map[string]string{"kubeadm": sum("something else")}}
	_, err := o.Resolve(context.Background(), packersdk.TestUi(t), []versions.Artifact{
		{Name: "kubelet", FileName: "kubelet"},
		{Name: "kubeadm", FileName: "kubeadm"},
		{Name: "joiner", FileName: "kubenode-joiner"},
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "artifact kubeadm: "+filepath.Join(dir, "kubeadm")+" has sha256 "+sum("kubeadm")+", artifact_checksums.kubeadm says")
	assert.Contains(t, err.Error(), "artifact joiner: kubenode-joiner is not in artifacts_dir")
	assert.NotContains(t, err.Error(), "artifact kubelet", "a good artifact is not reported")

	o.Checksums = nil
	got, err := o.Resolve(context.Background(), packersdk.TestUi(t), []versions.Artifact{{Name: "kubelet", FileName: "kubelet"}})
	require.NoError(t, err)
	assert.Equal(t, sum("kubelet"), got[0].SHA256)
}

func TestDownloadChecksAgainstThePublishedChecksum(t *testing.T) {
	files := map[string]string{
		"/kubelet":                     "real kubelet",
		"/kubelet.sha256":              sum("real kubelet"),
		"/containerd.tar.gz":           "tarball",
		"/containerd.tar.gz.sha256sum": sum("tarball") + "  containerd.tar.gz\n",
		"/tampered":                    "evil",
		"/tampered.sha256":             sum("good"),
	}
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits[r.URL.Path]++
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	}))
	defer srv.Close()
	o := Options{CacheDir: t.TempDir()}
	arts := []versions.Artifact{
		{Name: "kubelet", FileName: "kubelet", URL: srv.URL + "/kubelet", ChecksumURL: srv.URL + "/kubelet.sha256"},
		{Name: "containerd", FileName: "containerd.tar.gz", URL: srv.URL + "/containerd.tar.gz", ChecksumURL: srv.URL + "/containerd.tar.gz.sha256sum"},
	}
	got, err := o.Resolve(context.Background(), packersdk.TestUi(t), arts)
	require.NoError(t, err)
	data, _ := os.ReadFile(got[1].Local)
	assert.Equal(t, "tarball", string(data))
	_, err = o.Resolve(context.Background(), packersdk.TestUi(t), arts)
	require.NoError(t, err)
	assert.Equal(t, 1, hits["/kubelet"], "a second build uses the cache")

	_, err = o.Resolve(context.Background(), packersdk.TestUi(t), []versions.Artifact{
		{Name: "cni-plugins", FileName: "tampered", URL: srv.URL + "/tampered", ChecksumURL: srv.URL + "/tampered.sha256"},
		{Name: "runc", FileName: "runc", URL: srv.URL + "/missing", ChecksumURL: srv.URL + "/missing.sha256"},
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "artifact cni-plugins: "+srv.URL+"/tampered has sha256 "+sum("evil")+" but "+srv.URL+"/tampered.sha256 publishes "+sum("good"))
	assert.Contains(t, err.Error(), "artifact runc: reading the published checksum: GET "+srv.URL+"/missing.sha256: 404")
	entries, _ := os.ReadDir(filepath.Join(o.CacheDir, sum("good")))
	for _, e := range entries {
		assert.False(t, strings.HasPrefix(e.Name(), "."), "no partial download is left: %s", e.Name())
	}
}

// Prepare names each bad key, writes the checksums as Resolve compares
// them, and puts the cache in Packer's by default.
func TestPrepare(t *testing.T) {
	t.Setenv("PACKER_CACHE_DIR", t.TempDir())
	o := Options{
		Dir:       "/nonexistent",
		Artifacts: map[string]string{"kubelet": "/nonexistent/kubelet", "kube-proxy": "/x"},
		Checksums: map[string]string{"kubeadm": "SHA256:" + strings.ToUpper(sum("kubeadm")), "kubectl": "abc", "etcd": sum("etcd")},
	}
	var msgs []string
	for _, err := range o.Prepare() {
		msgs = append(msgs, err.Error())
	}
	assert.Equal(t, []string{
		`artifacts_dir: "/nonexistent" is not a directory`,
		`artifacts: unknown artifact "kube-proxy" (known: ` + strings.Join(versions.ArtifactNames, ", ") + ")",
		"artifacts.kubelet: stat /nonexistent/kubelet: no such file or directory",
		`artifact_checksums: unknown artifact "etcd" (known: ` + strings.Join(versions.ArtifactNames, ", ") + ")",
		"artifact_checksums.kubectl: want 64 hex digits of a sha256",
	}, msgs)
	assert.Equal(t, sum("kubeadm"), o.Checksums["kubeadm"])
	assert.Equal(t, filepath.Join(os.Getenv("PACKER_CACHE_DIR"), "kubenode-bake"), o.CacheDir)
}
