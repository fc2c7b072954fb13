package harness

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// ReleaseVersions are the releases a ReleaseMirror serves.
type ReleaseVersions struct {
	Kubernetes string // vX.Y.Z, the binaries in the directory given
	Containerd string // X.Y.Z
	Runc       string // vX.Y.Z
	Crictl     string // vX.Y.Z
}

// ReleaseMirror serves, on 127.0.0.1 until the test ends, the release
// files kubenode-bake downloads, in their upstream layout and checksum
// format (scripts/release-files.sh says which file came from where: none
// is an upstream asset). It returns the bake's `download_mirrors` for it
// and the CNI plugins version it serves.
func ReleaseMirror(t testing.TB, kubernetesDir string, v ReleaseVersions) (map[string]string, string) {
	t.Helper()
	root := t.TempDir()
	cni := script(t, "release-files.sh", root, kubernetesDir, v.Kubernetes, v.Containerd, v.Runc, v.Crictl)
	srv := httptest.NewServer(http.FileServer(http.Dir(root))) // 127.0.0.1
	t.Cleanup(srv.Close)
	return map[string]string{
		"https://dl.k8s.io":  srv.URL + "/dl.k8s.io",
		"https://github.com": srv.URL + "/github.com",
	}, cni
}
