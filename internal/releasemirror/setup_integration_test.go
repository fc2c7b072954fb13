// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build integration

package releasemirror_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
	"github.com/kubenode/packer-plugin-kubenode/internal/releasemirror"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

// kubernetesBinaries are what scripts/k8s-binaries.sh puts in its directory.
var kubernetesBinaries = []string{"kubeadm", "kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "etcd"}

// userCache is the kubenode cache the release mirror is made from (read
// only here).
func userCache(t *testing.T) string {
	t.Helper()
	if c := os.Getenv("KUBENODE_CACHE"); c != "" {
		return c
	}
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	return filepath.Join(home, ".cache", "kubenode")
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(t, err)
	return hex.EncodeToString(h.Sum(nil))
}

func urlSHA256(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, u)
	h := sha256.New()
	_, err = io.Copy(h, resp.Body)
	require.NoError(t, err)
	return hex.EncodeToString(h.Sum(nil))
}

// noGo is a directory with a go that fails: a script that builds instead
// of downloading fails with it.
func noGo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), []byte("#!/bin/sh\necho \"go $* was called: nothing should be built\" >&2\nexit 1\n"), 0o755))
	return dir
}

// setupMirror serves the release mirror with what setup downloads (the
// builds cached by `make setup` and the release files), behind a proxy
// that counts the requests and answers a wrong digest for every checksum
// file whose path ends in one of corrupt.
func setupMirror(t *testing.T, m *releasemirror.Mirror, corrupt ...string) (string, *atomic.Int64) {
	t.Helper()
	u, err := url.Parse(m.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	var n atomic.Int64
	zeros := strings.Repeat("0", 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		for _, c := range corrupt {
			if strings.HasSuffix(r.URL.Path, c) {
				// A bare digest and a sha256sum line naming every file:
				// either format finds it.
				fmt.Fprintf(w, "%s\n", zeros)
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

// TestSetupDownloadsFromTheReleaseMirror: with KUBENODE_RELEASE_MIRROR at
// the release mirror (upstream layout: releases.hashicorp.com, dl.k8s.io,
// GitHub releases), scripts/setup.sh packer, scripts/k8s-binaries.sh and
// scripts/release-files.sh download every binary, checked against its
// published sha256, into an empty cache in the layout the builds fill,
// and build nothing (go fails here); run again, they fetch nothing. A
// download whose sha256 is not the one its checksum file publishes is
// refused: the script fails and leaves nothing of it in the cache (no
// build either: that would hide a tampered mirror).
func TestSetupDownloadsFromTheReleaseMirror(t *testing.T) {
	packer := harness.Packer(t)
	k8s := harness.KubernetesRelease(t, setupKubernetes)
	v, err := releasemirror.For(setupKubernetes, versions.Defaults.Containerd)
	require.NoError(t, err)
	began := time.Now()
	m, err := releasemirror.ServeSetup(harness.Root(), k8s, packer, v, nil)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	t.Logf("release mirror with setup's files made in %s", time.Since(began).Round(time.Second))
	mirror, requests := setupMirror(t, m)

	tmp := t.TempDir()
	cache := filepath.Join(tmp, "cache")
	env := []string{"KUBENODE_CACHE=" + cache, "KUBENODE_RELEASE_MIRROR=" + mirror, "PATH=" + noGo(t) + ":/usr/sbin:/usr/bin:/sbin:/bin"}
	downloaded := func(path, checksum string) string {
		return regexp.QuoteMeta("downloaded "+mirror+path+" (sha256 ") + "[0-9a-f]{64}" + regexp.QuoteMeta(", as "+mirror+checksum+" publishes)")
	}
	p := "/releases.hashicorp.com/packer/" + setupPacker + "/packer_" + setupPacker
	k := "/dl.k8s.io/release/" + setupKubernetes + "/bin/linux/amd64/"
	gh := "/github.com/"

	run := func() (map[string]string, time.Duration) {
		began := time.Now()
		out := map[string]string{}
		var err error
		_, out["setup.sh"], err = runScript(t, env, "setup.sh", "packer")
		require.NoError(t, err)
		var dir string
		dir, out["k8s-binaries.sh"], err = runScript(t, env, "k8s-binaries.sh", setupKubernetes)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(cache, "kubernetes", setupKubernetes), dir)
		var cni string
		cni, out["release-files.sh"], err = runScript(t, env, "release-files.sh", filepath.Join(tmp, "out"), dir, v.Kubernetes, v.Containerd, v.Runc, v.Crictl, m.CNIPlugins)
		require.NoError(t, err)
		assert.Equal(t, m.CNIPlugins, cni, "the CNI plugins release served")
		return out, time.Since(began)
	}

	logs, took := run()
	t.Logf("download path into an empty cache: %s", took.Round(time.Second))
	assert.Regexp(t, downloaded(p+"_linux_amd64.zip", p+"_SHA256SUMS"), logs["setup.sh"])
	assert.Equal(t, fileSHA256(t, packer), fileSHA256(t, filepath.Join(cache, "packer", "v"+setupPacker, "packer")), "packer")
	for _, b := range kubernetesBinaries[:6] {
		assert.Regexp(t, downloaded(k+b, k+b+".sha256"), logs["k8s-binaries.sh"])
	}
	etcd := "etcd-io/etcd/releases/download/v3.7.0/"
	assert.Regexp(t, downloaded(gh+etcd+"etcd-v3.7.0-linux-amd64.tar.gz", gh+etcd+"SHA256SUMS"), logs["k8s-binaries.sh"])
	for _, b := range kubernetesBinaries {
		assert.Equal(t, fileSHA256(t, filepath.Join(k8s, b)), fileSHA256(t, filepath.Join(cache, "kubernetes", setupKubernetes, b)), b)
	}
	ctrd := "containerd/containerd/releases/download/v" + v.Containerd + "/containerd-" + v.Containerd + "-linux-amd64.tar.gz"
	runc := "opencontainers/runc/releases/download/" + v.Runc + "/runc"
	crictl := "kubernetes-sigs/cri-tools/releases/download/" + v.Crictl + "/crictl-" + v.Crictl + "-linux-amd64.tar.gz"
	cni := "containernetworking/plugins/releases/download/" + m.CNIPlugins + "/cni-plugins-linux-amd64-" + m.CNIPlugins + ".tgz"
	for _, d := range []struct{ path, checksum string }{
		{ctrd, ctrd + ".sha256sum"}, {runc + ".amd64", runc + ".sha256sum"}, {crictl, crictl + ".sha256"}, {cni, cni + ".sha256"},
	} {
		assert.Regexp(t, downloaded(gh+d.path, gh+d.checksum), logs["release-files.sh"])
	}
	built := filepath.Join(userCache(t), "release-builds")
	for _, f := range []string{
		"containerd-v" + v.Containerd + "/containerd", "containerd-v" + v.Containerd + "/containerd-shim-runc-v2", "containerd-v" + v.Containerd + "/ctr",
		"runc-seccomp-" + v.Runc + "/runc", "crictl-" + v.Crictl + "/crictl",
	} {
		assert.Equal(t, fileSHA256(t, filepath.Join(built, f)), fileSHA256(t, filepath.Join(cache, "release-builds", f)), f)
	}
	assert.Equal(t, urlSHA256(t, m.URL+gh+cni),
		fileSHA256(t, filepath.Join(cache, "release-builds", "cni-plugins-"+m.CNIPlugins, "cni-plugins-linux-amd64-"+m.CNIPlugins+".tgz")), "the CNI plugins tarball")

	before := requests.Load()
	logs, _ = run()
	assert.Equal(t, before, requests.Load(), "requests to the mirror on the second run")
	for script, l := range logs {
		assert.NotContains(t, l, "downloaded", script)
	}
	assert.Contains(t, logs["setup.sh"], "cached")
	assert.Contains(t, logs["k8s-binaries.sh"], "cached")
	assert.Contains(t, logs["release-files.sh"], "containerd v"+v.Containerd+": cached")

	// The same mirror, with a wrong digest in three checksum files (a
	// bare digest alone serves every format).
	mirror, _ = setupMirror(t, m, "_SHA256SUMS", "/kubeadm.sha256", ".tar.gz.sha256sum")
	tmp = t.TempDir()
	cache = filepath.Join(tmp, "cache")
	env = []string{"KUBENODE_CACHE=" + cache, "KUBENODE_RELEASE_MIRROR=" + mirror, "PATH=" + noGo(t) + ":/usr/sbin:/usr/bin:/sbin:/bin"}
	refused := func(path, checksum string) string {
		return regexp.QuoteMeta("refused: "+mirror+path+" has sha256 ") + "[0-9a-f]{64}" +
			regexp.QuoteMeta(", but "+mirror+checksum+" publishes "+strings.Repeat("0", 64))
	}
	noFiles := func(dir string) {
		t.Helper()
		entries, err := os.ReadDir(dir)
		if !os.IsNotExist(err) {
			require.NoError(t, err)
		}
		for _, e := range entries {
			assert.Fail(t, "left in the cache after a refused download", filepath.Join(dir, e.Name()))
		}
	}

	_, stderr, err := runScript(t, env, "setup.sh", "packer")
	assert.Error(t, err)
	assert.Regexp(t, refused(p+"_linux_amd64.zip", p+"_SHA256SUMS"), stderr)
	assert.NotContains(t, stderr, "nothing should be built")
	noFiles(filepath.Join(cache, "packer", "v"+setupPacker))

	_, stderr, err = runScript(t, env, "k8s-binaries.sh", setupKubernetes)
	assert.Error(t, err)
	assert.Regexp(t, refused(k+"kubeadm", k+"kubeadm.sha256"), stderr)
	assert.NotContains(t, stderr, "nothing should be built")
	noFiles(filepath.Join(cache, "kubernetes", setupKubernetes))

	_, stderr, err = runScript(t, env, "release-files.sh", filepath.Join(tmp, "out"), k8s, v.Kubernetes, v.Containerd, v.Runc, v.Crictl, m.CNIPlugins)
	assert.Error(t, err)
	assert.Regexp(t, refused(gh+ctrd, gh+ctrd+".sha256sum"), stderr)
	assert.NotContains(t, stderr, "nothing should be built")
	noFiles(filepath.Join(cache, "release-builds"))
}

// TestReleaseFilesBuildWhenDownloadsAreUnreachable: with the release
// downloads unreachable, scripts/release-files.sh says so for containerd,
// runc and crictl and builds each from the Go module proxy instead (here
// a stand-in for go that writes stubs) into the cache layout the
// downloads fill, and serves Debian's CNI plugins under their version.
func TestReleaseFilesBuildWhenDownloadsAreUnreachable(t *testing.T) {
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		t.Fatal("Debian's CNI plugins are missing: run scripts/setup.sh packages (containernetworking-plugins)")
	}
	closed := closedURL(t)
	tmp := t.TempDir()
	cache := filepath.Join(tmp, "cache")
	goLog := filepath.Join(tmp, "go.log")
	env := []string{"KUBENODE_CACHE=" + cache, "KUBENODE_RELEASE_MIRROR=" + closed, "PATH=" + fakeGo(t, goLog) + ":/usr/sbin:/usr/bin:/sbin:/bin"}
	v, err := releasemirror.For(setupKubernetes, versions.Defaults.Containerd)
	require.NoError(t, err)
	k8s := filepath.Join(tmp, "k8s")
	require.NoError(t, os.MkdirAll(k8s, 0o755))
	for _, b := range []string{"kubelet", "kubeadm", "kubectl"} {
		require.NoError(t, os.WriteFile(filepath.Join(k8s, b), []byte("#!/bin/sh\n"), 0o755))
	}

	cni, stderr, err := runScript(t, env, "release-files.sh", filepath.Join(tmp, "out"), k8s, v.Kubernetes, v.Containerd, v.Runc, v.Crictl, v.CNIPlugins)
	require.NoError(t, err)
	gh := "/github.com/"
	for _, c := range []struct{ name, version, checksum string }{
		{"containerd", "v" + v.Containerd, "containerd/containerd/releases/download/v" + v.Containerd + "/containerd-" + v.Containerd + "-linux-amd64.tar.gz.sha256sum"},
		{"runc-seccomp", v.Runc, "opencontainers/runc/releases/download/" + v.Runc + "/runc.sha256sum"},
		{"crictl", v.Crictl, "kubernetes-sigs/cri-tools/releases/download/" + v.Crictl + "/crictl-" + v.Crictl + "-linux-amd64.tar.gz.sha256"},
	} {
		assert.Regexp(t, regexp.QuoteMeta(c.name+" "+c.version+": ")+unreachable(closed, gh+c.checksum)+"building from the Go module proxy instead", stderr)
		assert.FileExists(t, filepath.Join(cache, "release-builds", c.name+"-"+c.version, ".complete"))
	}
	assert.Regexp(t, regexp.QuoteMeta("cni-plugins "+v.CNIPlugins+": ")+
		unreachable(closed, gh+"containernetworking/plugins/releases/download/"+v.CNIPlugins+"/cni-plugins-linux-amd64-"+v.CNIPlugins+".tgz.sha256")+
		"packing Debian's containernetworking-plugins instead", stderr)
	assert.NotEqual(t, v.CNIPlugins, cni, "Debian's CNI plugins are served under Debian's version")

	built, err := os.ReadFile(goLog)
	require.NoError(t, err)
	for _, want := range []string{
		"github.com/containerd/containerd/v2/cmd/containerd@v" + v.Containerd,
		"github.com/opencontainers/runc@" + v.Runc,
		"sigs.k8s.io/cri-tools/cmd/crictl@" + v.Crictl,
	} {
		assert.Contains(t, string(built), want, "what the stand-in for go was asked to build")
	}
}
