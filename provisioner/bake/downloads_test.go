// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bake

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
		"a Windows Cluster API guest's: cloudbase-init's pinned checksum is its proof": {
			cfg: map[string]any{"download_mirrors": httpMirrors, "guest_os_type": "windows", "bootstrap": "cluster-api", "artifact_checksums": all},
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
