//go:build integration

package labimages

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testNamespace = "kubenode-labimages-test"

// TestImportIntoContainerd imports both archives into a containerd of the
// test's own (own root, state and socket under a temporary directory; the
// host's containerd, if any, is not touched), checks that containerd lists
// them under their references with the digests Build reported, and runs the
// busybox image. Needs root, containerd, ctr and runc.
func TestImportIntoContainerd(t *testing.T) {
	for _, bin := range []string{"containerd", "ctr", "runc"} {
		_, err := exec.LookPath(bin)
		require.NoError(t, err, "install it with: apt-get install containerd runc")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	src, err := KubernetesSourceDir(ctx, "v1.33.13")
	require.NoError(t, err)
	imgs, err := Build(ctx, Options{PauseRef: "registry.k8s.io/pause:3.10", KubernetesSourceDir: src, CacheDir: t.TempDir()})
	require.NoError(t, err)

	sock := startContainerd(t)
	ctr := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, "ctr", append([]string{"--address", sock, "-n", testNamespace}, args...)...).CombinedOutput()
		require.NoError(t, err, "ctr %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	t.Cleanup(func() {
		for _, im := range imgs {
			_ = exec.Command("ctr", "--address", sock, "-n", testNamespace, "images", "rm", "--sync", im.Ref).Run()
		}
		out, err := exec.Command("ctr", "--address", sock, "namespaces", "rm", testNamespace).CombinedOutput()
		assert.NoError(t, err, "removing the namespace: %s", out)
	})

	for _, im := range imgs {
		ctr("images", "import", im.Archive)
	}
	listed := map[string]string{} // ref → digest
	for _, line := range strings.Split(ctr("images", "ls"), "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 3 {
			listed[f[0]] = f[2]
		}
	}
	assert.Len(t, listed, len(imgs), "one image per archive, named by its reference: %v", listed)
	for _, im := range imgs {
		assert.Equal(t, im.Digest, listed[im.Ref], "containerd's digest of %s", im.Ref)
	}

	out := ctr("run", "--rm", imgs[0].Ref, "labimages-test-pause", "/pause", "-v")
	assert.Equal(t, "pause.c v3.10-v1.33.13\n", strings.ReplaceAll(out, "\r", ""), "the pause binary compiled from that release's source")

	busybox := imgs[1].Ref
	out = ctr("run", "--rm", busybox, "labimages-test-echo", "/bin/sh", "-c", "echo hello from $(hostname -s 2>/dev/null || echo busybox); cat /proc/1/cmdline | tr '\\0' ' '")
	assert.Contains(t, out, "hello from")
	assert.Contains(t, out, "/bin/sh -c")
}

// startContainerd starts containerd with its own directories and socket,
// stopped by PID when the test ends, and returns the socket.
func startContainerd(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "containerd.sock")
	cfg := filepath.Join(dir, "config.toml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %q
[ttrpc]
  address = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock, sock+".ttrpc")), 0o644))
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	require.NoError(t, err)
	cmd := exec.Command("containerd", "--config", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("containerd log:\n%s", b)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := exec.Command("ctr", "--address", sock, "version").Run()
		if err == nil {
			return sock
		}
		require.True(t, time.Now().Before(deadline), "containerd did not answer on %s: %v", sock, err)
		time.Sleep(100 * time.Millisecond)
	}
}
