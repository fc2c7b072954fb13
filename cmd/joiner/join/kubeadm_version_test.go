// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !windows

package join

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeKubeadm writes an executable shell script standing for kubeadm.
func fakeKubeadm(t *testing.T, dir, body string) string {
	t.Helper()
	path := filepath.Join(dir, "kubeadm")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return path
}

// The version comes from the kubeadm at kubeadmPath, run as the joiner runs
// programs, and picks the JoinConfiguration API that kubeadm reads.
func TestKubeadmVersionPicksTheAPIFromTheBinary(t *testing.T) {
	for _, tc := range []struct{ prints, api string }{
		{"v1.30.14", "kubeadm.k8s.io/v1beta3"},
		{"v1.31.0", "kubeadm.k8s.io/v1beta4"},
		{"v1.33.13", "kubeadm.k8s.io/v1beta4"},
		// v1.36.0's kubeadm still reads v1beta4 as its current API.
		{"v1.36.0", "kubeadm.k8s.io/v1beta4"},
	} {
		t.Run(tc.prints, func(t *testing.T) {
			path := fakeKubeadm(t, t.TempDir(), `[ "$*" = "version -o short" ] || exit 2; echo `+tc.prints)
			v, err := KubeadmVersion(context.Background(), defaultHost(), nil, path)
			require.NoError(t, err)
			assert.Equal(t, tc.prints, "v"+v.String())
			api, err := KubeadmAPIFor(v)
			require.NoError(t, err)
			assert.Equal(t, tc.api, api.GroupVersion.String())
		})
	}
}

// A bare kubeadmPath is looked up on the PATH kubeadm runs with.
func TestKubeadmVersionLooksUpABareNameOnTheEnvironmentsPath(t *testing.T) {
	dir := t.TempDir()
	fakeKubeadm(t, dir, "echo v1.30.14")
	v, err := KubeadmVersion(context.Background(), defaultHost(), []string{"PATH=" + dir}, "kubeadm")
	require.NoError(t, err)
	assert.Equal(t, "1.30.14", v.String())
}

func TestKubeadmVersionFailuresNameTheBinary(t *testing.T) {
	dir := t.TempDir()
	t.Run("garbage", func(t *testing.T) {
		path := fakeKubeadm(t, t.TempDir(), "echo garbage")
		_, err := KubeadmVersion(context.Background(), defaultHost(), nil, path)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "kubeadm: `"+path+" version -o short` printed \"garbage\", not a version vX.Y.Z")
		assert.Contains(t, err.Error(), "kubeadmPath must name kubeadm")
	})
	t.Run("fails", func(t *testing.T) {
		path := fakeKubeadm(t, t.TempDir(), "echo 'unknown flag: --output' >&2; exit 1")
		_, err := KubeadmVersion(context.Background(), defaultHost(), nil, path)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "`"+path+" version -o short`")
		assert.Contains(t, err.Error(), "unknown flag: --output")
	})
	t.Run("missing", func(t *testing.T) {
		path := filepath.Join(dir, "no-such-kubeadm")
		_, err := KubeadmVersion(context.Background(), defaultHost(), nil, path)
		require.Error(t, err)
		assert.Contains(t, err.Error(), path)
		assert.Contains(t, err.Error(), "kubenode-bake installs it")
	})
	t.Run("hangs", func(t *testing.T) {
		defer func(d time.Duration) { VersionTimeout = d }(VersionTimeout)
		VersionTimeout = 300 * time.Millisecond
		path := fakeKubeadm(t, t.TempDir(), "sleep 3")
		start := time.Now()
		_, err := KubeadmVersion(context.Background(), defaultHost(), nil, path)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "`"+path+" version -o short` did not answer within 300ms")
		assert.Less(t, time.Since(start), 2500*time.Millisecond, "the wait is bounded, even with a child holding the output open")
	})
}
