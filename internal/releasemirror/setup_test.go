// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package releasemirror_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
)

// The releases the setup tests fetch: the defaults of scripts/setup.sh,
// scripts/k8s-binaries.sh and the version table.
const (
	setupPacker     = "1.16.0"
	setupPackerMPL  = "1.9.4"
	setupKubernetes = "v1.37.2"
)

// runScript runs scripts/NAME with this process's environment less PATH
// and every KUBENODE_ variable, plus env; it returns what the script
// printed on stdout (trimmed) and stderr.
func runScript(t *testing.T, env []string, name string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(harness.Root(), "scripts", name)}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBENODE_") && !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "RELEASE_FILES_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("scripts/%s %s:\n%s", name, strings.Join(args, " "), stderr.String())
	return strings.TrimSpace(stdout.String()), stderr.String(), err
}

// fakeGo writes a stand-in for go into a new directory, which it returns:
// it appends its arguments to the file log and, for go build and go
// install, writes a small script at each output path instead of compiling
// (every stub prints the etcd image kubeadm v1.37 names, so a stub kubeadm
// answers `config images list`). `go mod download -json` prints an empty
// module directory.
func fakeGo(t *testing.T, log string) string {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/bash
set -eu
echo "go $*" >> "$FAKE_GO_LOG"
stub() { mkdir -p "$(dirname "$1")"; printf '#!/bin/sh\necho registry.k8s.io/etcd:3.7.0-0\n' > "$1"; chmod 0755 "$1"; }
mode=$1; shift
case $mode in
  mod)
    if [ "$1" = download ]; then
      d=$(mktemp -d "$FAKE_GO_TMP/mod.XXXXXX"); echo 'module k8s.io/kubernetes' > "$d/go.mod"
      printf '{\n\t"Dir": "%s",\n}\n' "$d"
    fi ;;
  build|install)
    out="" pkgs=()
    while [ $# -gt 0 ]; do
      case $1 in
        -o) out=$2; shift 2 ;;
        -ldflags|-tags) shift 2 ;;
        -*) shift ;;
        *) pkgs+=("$1"); shift ;;
      esac
    done
    for p in "${pkgs[@]}"; do
      p=${p%@*}
      if [ "$mode" = install ]; then stub "$GOBIN/${p##*/}"
      elif [ "${out%/}" != "$out" ]; then stub "$out${p##*/}"
      else stub "$out"; fi
    done ;;
esac
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755))
	t.Setenv("FAKE_GO_LOG", log)
	t.Setenv("FAKE_GO_TMP", t.TempDir()) // its module directories, removed with the test
	return dir
}

// closedURL is an http URL on 127.0.0.1 where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	return u
}

// unreachable matches what the scripts say when base+path cannot be
// fetched (connection refused), up to what they do instead.
func unreachable(base, path string) string {
	return regexp.QuoteMeta("not downloaded ("+base+path+": curl: (7) ") + `[^)]*\): `
}

// TestSetupBuildsWhenDownloadsAreUnreachable: with the release downloads
// unreachable (a mirror URL on a closed port), scripts/setup.sh and
// scripts/k8s-binaries.sh say so for each binary and build it from the Go
// module proxy instead (here a stand-in for go that writes stubs), into
// the cache layout the downloads fill. (scripts/release-files.sh's build
// path: TestReleaseFilesBuildWhenDownloadsAreUnreachable, integration.)
func TestSetupBuildsWhenDownloadsAreUnreachable(t *testing.T) {
	closed := closedURL(t)
	tmp := t.TempDir()
	cache := filepath.Join(tmp, "cache")
	goLog := filepath.Join(tmp, "go.log")
	env := []string{"KUBENODE_CACHE=" + cache, "KUBENODE_RELEASE_MIRROR=" + closed, "PATH=" + fakeGo(t, goLog) + ":/usr/sbin:/usr/bin:/sbin:/bin"}

	_, stderr, err := runScript(t, env, "setup.sh", "packer")
	require.NoError(t, err)
	assert.Regexp(t, "packer v"+setupPacker+": "+unreachable(closed, "/releases.hashicorp.com/packer/"+setupPacker+"/packer_"+setupPacker+"_SHA256SUMS")+
		"building from the Go module proxy instead", stderr)
	assert.FileExists(t, filepath.Join(cache, "packer", "v"+setupPacker, "packer"))

	_, stderr, err = runScript(t, env, "setup.sh", "packer-mpl")
	require.NoError(t, err)
	assert.Regexp(t, "packer v"+setupPackerMPL+": "+unreachable(closed, "/releases.hashicorp.com/packer/"+setupPackerMPL+"/packer_"+setupPackerMPL+"_SHA256SUMS")+
		"building from the Go module proxy instead", stderr)
	assert.FileExists(t, filepath.Join(cache, "packer", "v"+setupPackerMPL, "packer"))

	k8sDir, stderr, err := runScript(t, env, "k8s-binaries.sh", setupKubernetes)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(cache, "kubernetes", setupKubernetes), k8sDir)
	assert.Regexp(t, "kubeadm kubelet kube-apiserver kube-controller-manager kube-scheduler kubectl "+setupKubernetes+": "+
		unreachable(closed, "/dl.k8s.io/release/"+setupKubernetes+"/bin/linux/amd64/kubeadm.sha256")+"building from the Go module proxy instead", stderr)
	assert.Regexp(t, "etcd: "+unreachable(closed, "/github.com/etcd-io/etcd/releases/download/v3.7.0/SHA256SUMS")+"building", stderr)
	for _, b := range []string{"kubeadm", "kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "etcd"} {
		assert.FileExists(t, filepath.Join(k8sDir, b))
	}

	built, err := os.ReadFile(goLog)
	require.NoError(t, err)
	for _, want := range []string{
		"go mod download -json github.com/hashicorp/packer@v" + setupPacker,
		"go mod download -json github.com/hashicorp/packer@v" + setupPackerMPL,
		"go mod download -json k8s.io/kubernetes@" + setupKubernetes,
		"./cmd/kubeadm ./cmd/kubelet", "./cmd/kubenode-etcd",
	} {
		assert.Contains(t, string(built), want, "what the stand-in for go was asked to build")
	}
}
