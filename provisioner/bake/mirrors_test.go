package bake

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
	var c Config
	require.NoError(t, c.Prepare(map[string]any{
		"download_cache_dir": t.TempDir(),
		"download_mirrors": map[string]string{
			"https://dl.k8s.io/":                  "http://mirror.example:8080/dl.k8s.io/",
			"https://github.com":                  "http://mirror.example:8080/github.com",
			"https://github.com/containerd/":      "https://containerd-mirror.example/gh",
			"https://github.com/opencontainers/x": "http://unused.example",
		},
		"trust_http_mirror_checksums": true,
	}))
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
		got, prefix := mirrorURL(c.DownloadMirrors, in)
		assert.Equal(t, want[0], got, in)
		assert.Equal(t, want[1], prefix, in)
	}

	// No download_mirrors: every URL unchanged.
	a := versions.Artifact{Name: "kubelet", URL: "https://dl.k8s.io/k", ChecksumURL: "https://dl.k8s.io/k.sha256"}
	got, used := (&Config{}).mirrored(a)
	assert.Equal(t, a, got)
	assert.Empty(t, used)
}

func TestPrepareChecksDownloadMirrors(t *testing.T) {
	var c Config
	err := c.Prepare(map[string]any{
		"download_cache_dir": t.TempDir(),
		"download_mirrors": map[string]string{
			"dl.k8s.io":          "http://mirror.example/dl.k8s.io",
			"https://github.com": "ftp://mirror.example/github.com",
			"https://ok.example": "http:///no-host",
			"https://q.example":  "http://mirror.example/?x=1",
		},
	})
	require.Error(t, err)
	for _, want := range []string{
		`download_mirrors["dl.k8s.io"] = "http://mirror.example/dl.k8s.io": the prefix "dl.k8s.io" is not an absolute http:// or https:// URL`,
		`download_mirrors["https://github.com"] = "ftp://mirror.example/github.com": the mirror "ftp://mirror.example/github.com" is not an absolute http:// or https:// URL`,
		`download_mirrors["https://ok.example"] = "http:///no-host": the mirror "http:///no-host" names no host`,
		`download_mirrors["https://q.example"] = "http://mirror.example/?x=1": the mirror "http://mirror.example/?x=1" has a query or fragment`,
	} {
		assert.Contains(t, err.Error(), want)
	}
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

	var c Config
	require.NoError(t, c.Prepare(map[string]any{
		"download_cache_dir": t.TempDir(),
		"download_mirrors": map[string]string{
			"https://dl.k8s.io":  srv.URL + "/dl.k8s.io",
			"https://github.com": srv.URL + "/github.com/",
		},
		"artifact_checksums":          map[string]string{"kubeadm": sum("the real kubeadm")},
		"trust_http_mirror_checksums": true,
	}))
	ui := &recordingUi{Ui: packersdk.TestUi(t)}
	got, err := c.resolve(context.Background(), ui, arts)
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
	_, err = c.resolve(context.Background(), ui, arts)
	require.NoError(t, err)
	for _, p := range asked()[before:] {
		assert.True(t, strings.HasSuffix(p, ".sha256") || strings.HasSuffix(p, ".sha256sum"), p)
	}

	// A mirror whose file does not match its own checksum file fails, by
	// name, with the mirror's URLs.
	c.DownloadCacheDir = t.TempDir()
	bad := arts[0]
	bad.ChecksumURL = arts[1].ChecksumURL // kubeadm's digest for the kubelet
	_, err = c.resolve(context.Background(), ui, []versions.Artifact{bad})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "artifact kubelet: "+srv.URL+"/dl.k8s.io/release/v1.33.13/bin/linux/amd64/kubelet has sha256 "+sum("the real kubelet")+" but "+srv.URL+"/dl.k8s.io/release/v1.33.13/bin/linux/amd64/kubeadm.sha256 publishes "+sum("the real kubeadm"))
	_, err = os.Stat(filepath.Join(c.DownloadCacheDir, sum("the real kubeadm"), "kubelet"))
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

// A plain-HTTP mirror serves the checksum files too, so they prove
// nothing: packer validate wants every artifact the build downloads
// through it in artifact_checksums, or trust_http_mirror_checksums, and
// names both keys; a warning says what the mirror leaves open.
func TestPlainHTTPMirrorNeedsChecksumsFromElsewhere(t *testing.T) {
	kubelet := filepath.Join(t.TempDir(), "kubelet")
	require.NoError(t, os.WriteFile(kubelet, []byte("a local kubelet"), 0o644))
	all := map[string]string{}
	for _, name := range []string{"kubelet", "kubeadm", "kubectl", "containerd", "runc", "cni-plugins", "crictl"} {
		all[name] = sum(name)
	}
	httpMirrors := map[string]string{"https://dl.k8s.io": "http://127.0.0.1:8080/dl.k8s.io", "https://github.com": "HTTP://mirror.example/github.com"}
	for name, tc := range map[string]struct {
		cfg      map[string]any
		err      []string
		warnings []string
	}{
		"no checksums": {
			cfg: map[string]any{"download_mirrors": httpMirrors},
			err: []string{"download_mirrors: HTTP://mirror.example/github.com, http://127.0.0.1:8080/dl.k8s.io: plain HTTP, so the mirror's checksum files prove nothing",
				"give the sha256 of kubelet, kubeadm, kubectl, containerd, runc, cni-plugins, crictl in artifact_checksums",
				"or set trust_http_mirror_checksums = true"},
		},
		"some checksums, a local kubelet": {
			cfg: map[string]any{"download_mirrors": httpMirrors, "artifacts": map[string]string{"kubelet": kubelet},
				"artifact_checksums": map[string]string{"kubeadm": sum("kubeadm"), "containerd": sum("containerd")}},
			err: []string{"give the sha256 of kubectl, runc, cni-plugins, crictl in artifact_checksums"},
		},
		"only the plain-HTTP mirror's downloads": {
			cfg: map[string]any{"download_mirrors": map[string]string{"https://github.com": "http://mirror.example/github.com", "https://dl.k8s.io": "https://mirror.example/dl.k8s.io"},
				"install_crictl": false},
			err: []string{"download_mirrors: http://mirror.example/github.com: plain HTTP", "give the sha256 of containerd, runc, cni-plugins in artifact_checksums"},
		},
		"a Windows guest's": {
			cfg: map[string]any{"download_mirrors": httpMirrors, "guest_os_type": "windows", "artifact_checksums": all},
			err: []string{"give the sha256 of kube-log-runner in artifact_checksums"},
		},
		"every checksum": {
			cfg:      map[string]any{"download_mirrors": httpMirrors, "artifact_checksums": all},
			warnings: []string{`download_mirrors["https://dl.k8s.io"] = "http://127.0.0.1:8080/dl.k8s.io": plain HTTP: artifact_checksums, not the mirror's checksum files, proves each download`},
		},
		"trusted": {
			cfg:      map[string]any{"download_mirrors": httpMirrors, "trust_http_mirror_checksums": true},
			warnings: []string{`download_mirrors["https://dl.k8s.io"] = "http://127.0.0.1:8080/dl.k8s.io": plain HTTP, and trust_http_mirror_checksums takes its checksum files on trust: they catch a damaged download, not a changed one`},
		},
		"https": {
			cfg: map[string]any{"download_mirrors": map[string]string{"https://dl.k8s.io": "https://mirror.example/dl.k8s.io"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			tc.cfg["download_cache_dir"] = t.TempDir()
			var c Config
			err := c.Prepare(tc.cfg)
			if tc.err == nil {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				for _, want := range tc.err {
					assert.Contains(t, err.Error(), want)
				}
				return
			}
			for _, want := range tc.warnings {
				assert.Contains(t, strings.Join(c.warnings, "\n"), want)
			}
			if tc.warnings == nil {
				assert.Empty(t, c.warnings)
			}
		})
	}
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
	var c Config
	require.NoError(t, c.Prepare(map[string]any{
		"download_cache_dir": t.TempDir(),
		"download_mirrors":   map[string]string{"https://dl.k8s.io": srv.URL + "/dl.k8s.io"},
		"install_crictl":     false,
		"containerd_source":  "package",
		"artifact_checksums": sums,
	}))
	_, err = c.resolve(context.Background(), packersdk.TestUi(t), arts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "artifact kube-log-runner: download_mirrors fetches its checksum file "+srv.URL+"/dl.k8s.io/release/v1.33.13/bin/windows/amd64/kube-log-runner.exe.sha256 over plain HTTP, which proves nothing about the download: give its sha256 as artifact_checksums.kube-log-runner")
	for _, p := range asked() {
		assert.NotContains(t, p, "kube-log-runner", "nothing of it was fetched")
	}

	// A mirror changing a file and its checksum file together fails
	// against artifact_checksums.
	c.ArtifactChecksums["kube-log-runner"] = sum("what upstream publishes")
	_, err = c.resolve(context.Background(), packersdk.TestUi(t), arts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "artifact kube-log-runner: ")
	assert.Contains(t, err.Error(), "artifact_checksums.kube-log-runner says "+sum("what upstream publishes"))
}
