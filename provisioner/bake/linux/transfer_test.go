// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/deliver"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

// here is a communicator that runs commands on this machine with sh and
// writes uploads to their path: the transfer script runs with the real sh,
// curl and sha256sum, against a real artifact server.
type here struct{}

func (here) Start(ctx context.Context, cmd *packersdk.RemoteCmd) error {
	c := exec.CommandContext(ctx, "sh", "-c", cmd.Command)
	c.Stdout, c.Stderr = cmd.Stdout, cmd.Stderr
	if err := c.Start(); err != nil {
		return err
	}
	go func() {
		_ = c.Wait()
		cmd.SetExited(c.ProcessState.ExitCode())
	}()
	return nil
}

func (here) Upload(dst string, r io.Reader, _ *os.FileInfo) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o600)
}
func (here) UploadDir(string, string, []string) error   { return nil }
func (here) Download(string, io.Writer) error           { return nil }
func (here) DownloadDir(string, string, []string) error { return nil }

// artifacts writes two artifacts on the build side and returns them with
// their sha256.
func artifacts(t *testing.T) []versions.Artifact {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	dir := t.TempDir()
	var arts []versions.Artifact
	for _, name := range []string{"kubelet", "kubeadm"} {
		data := []byte("the " + name + " binary\n")
		local := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(local, data, 0o644))
		sum := sha256.Sum256(data)
		arts = append(arts, versions.Artifact{Name: name, FileName: name, Local: local, SHA256: hex.EncodeToString(sum[:])})
	}
	return arts
}

func transferHere(t *testing.T, arts []versions.Artifact, srv *deliver.Server) (string, string, error) {
	t.Helper()
	staging := t.TempDir()
	ui := guesttest.NewUI()
	err := transfer(context.Background(), ui, &remote.Remote{Comm: here{}, UI: ui}, staging, arts, srv)
	return staging, ui.Out.String() + ui.Err.String(), err
}

func TestTransferOverHTTPDownloadsAndChecksEachArtifact(t *testing.T) {
	arts := artifacts(t)
	srv, err := deliver.Start("127.0.0.1", 0, "127.0.0.1", arts)
	require.NoError(t, err)
	staging, out, err := transferHere(t, arts, srv)
	require.NoError(t, err, out)
	for _, a := range arts {
		got, err := os.ReadFile(filepath.Join(staging, a.FileName))
		require.NoError(t, err)
		assert.Equal(t, "the "+a.Name+" binary\n", string(got))
		assert.Contains(t, out, "ok: artifact "+a.Name+" sha256 "+a.SHA256)
	}
	assert.Regexp(t, `kubenode-bake: artifacts on the guest over HTTP: 2 files, 0\.0 MiB in [0-9.]+s`, out)
	requests, _ := srv.Served()
	assert.Equal(t, int64(2), requests)
	_, err = os.Stat(filepath.Join(staging, "00-fetch-artifacts.sh"))
	require.NoError(t, err)
	// The guest has them: the server is closed.
	_, err = http.Get(srv.URL(arts[0]))
	assert.Error(t, err)
}

// unreachable is a server the guest cannot reach: it listens on 127.0.0.1
// and the URLs name 127.0.0.2, where connections are refused (the port
// stays this server's, so nothing else answers there).
func unreachable(t *testing.T, arts []versions.Artifact) *deliver.Server {
	t.Helper()
	srv, err := deliver.Start("127.0.0.1", 0, "127.0.0.2", arts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// HTTP asked for explicitly: a server the guest cannot reach fails the
// transfer, naming the artifact and the server but not its secret path.
func TestTransferOverHTTPFailsWhenTheServerIsUnreachable(t *testing.T) {
	arts := artifacts(t)
	srv := unreachable(t, arts)
	_, _, err := transferHere(t, arts, srv)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "download failed: artifact kubelet from "+srv.Origin()+"/.../kubelet")
	assert.NotContains(t, err.Error(), strings.TrimPrefix(srv.URL(arts[0]), srv.Origin()), "the secret path is not shown")
}

// The file on the server is not the one checked on this machine: the
// guest's check names it, and the transfer fails before anything is
// installed.
func TestTransferOverHTTPFailsOnATamperedArtifact(t *testing.T) {
	arts := artifacts(t)
	srv, err := deliver.Start("127.0.0.1", 0, "127.0.0.1", arts)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(arts[1].Local, []byte("something else\n"), 0o644))
	_, out, err := transferHere(t, arts, srv)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the artifacts on the guest are not the ones checked on this machine, so nothing was installed")
	assert.Contains(t, err.Error(), "mismatch: artifact kubeadm: kubeadm has sha256 ")
	assert.Contains(t, err.Error(), "want "+arts[1].SHA256)
	assert.NotContains(t, err.Error(), "artifact kubelet", "the good one is not named")
	assert.Contains(t, out, "ok: artifact kubelet")
}

func TestTransferThroughTheCommunicatorChecksToo(t *testing.T) {
	arts := artifacts(t)
	staging, out, err := transferHere(t, arts, nil)
	require.NoError(t, err, out)
	assert.FileExists(t, filepath.Join(staging, "kubelet"))
	assert.Regexp(t, `artifacts on the guest over the communicator: 2 files`, out)

	require.NoError(t, os.WriteFile(arts[0].Local, []byte("changed after the check\n"), 0o644))
	_, _, err = transferHere(t, arts, nil)
	assert.ErrorContains(t, err, "mismatch: artifact kubelet")
}

// HTTP chosen by default (Fallback): a guest that cannot reach the server
// gets the artifacts through the communicator, with a warning, after one
// failed connection rather than one per artifact.
func TestTransferFallsBackToTheCommunicatorWhenTheServerIsUnreachable(t *testing.T) {
	arts := artifacts(t)
	srv := unreachable(t, arts)
	srv.Fallback = true
	staging, out, err := transferHere(t, arts, srv)
	require.NoError(t, err, out)
	assert.Contains(t, out, "kubenode-bake: warning: the guest could not download 2 artifacts from "+srv.Origin())
	assert.Contains(t, out, "download failed: artifact kubeadm from "+srv.Origin()+"/.../kubeadm: not tried, the server could not be reached")
	assert.Regexp(t, `artifacts on the guest over the communicator: 2 files`, out)
	for _, a := range arts {
		assert.FileExists(t, filepath.Join(staging, a.FileName))
	}
}

// A file that arrived but differs is never uploaded again: the build fails.
func TestTransferNeverFallsBackOnAMismatch(t *testing.T) {
	arts := artifacts(t)
	srv, err := deliver.Start("127.0.0.1", 0, "127.0.0.1", arts)
	require.NoError(t, err)
	srv.Fallback = true
	require.NoError(t, os.WriteFile(arts[0].Local, []byte("tampered\n"), 0o644))
	_, out, err := transferHere(t, arts, srv)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mismatch: artifact kubelet")
	assert.NotContains(t, out, "uploaded through the communicator instead")
}
