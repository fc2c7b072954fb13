// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build integration

package labimages_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
	"github.com/kubenode/packer-plugin-kubenode/internal/labimages"
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
	src, err := labimages.KubernetesSourceDir(ctx, "v1.37.2")
	require.NoError(t, err)
	imgs, err := labimages.Build(ctx, labimages.Options{PauseRef: "registry.k8s.io/pause:3.10.2", KubernetesSourceDir: src, CacheDir: t.TempDir()})
	require.NoError(t, err)

	sock := harness.StartContainerd(t)
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
	assert.Equal(t, "pause.c v3.10.2-v1.37.2\n", strings.ReplaceAll(out, "\r", ""), "the pause binary compiled from that release's source")

	busybox := imgs[1].Ref
	out = ctr("run", "--rm", busybox, "labimages-test-echo", "/bin/sh", "-c", "echo hello from $(hostname -s 2>/dev/null || echo busybox); cat /proc/1/cmdline | tr '\\0' ' '")
	assert.Contains(t, out, "hello from")
	assert.Contains(t, out, "/bin/sh -c")
}
