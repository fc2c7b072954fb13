// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package skew_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/skew"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/version"
)

func TestRules(t *testing.T) {
	server := &version.Info{GitVersion: "v1.33.13"}
	require.NoError(t, skew.Kubelet.Check("v1.30.0", server))
	require.NoError(t, skew.Kubeadm.Check("v1.34.1", server))
	err := skew.Kubelet.Check("v1.34.0", server)
	require.ErrorContains(t, err, "kubelet v1.34.0 cannot join a v1.33.13 control plane (supported: minor versions -3 to +0 of it)")
	require.Error(t, skew.Kubelet.Check("v1.29.9", server))
	require.Error(t, skew.Kubelet.Check("v2.33.0", server), "another major")
	require.ErrorContains(t, skew.Kubeadm.Check("garbage", server), `kubeadm reports version "garbage"`)
}

func TestCheckImage(t *testing.T) {
	for _, tc := range []struct {
		image, server string
		want          []string // empty: accepted
	}{
		{image: "v1.33.1", server: "v1.33.13"},
		{image: "1.33.0", server: "v1.33.13"},
		{image: "v1.36.0", server: "v1.36.0"},
		{image: "v1.36.0", server: "v1.35.4", want: []string{"the image's kubelet v1.36.0 cannot join a v1.35.4 control plane"}},
		// kubeadm older than the control plane.
		{image: "v1.32.4", server: "v1.33.13", want: []string{"the image's kubeadm v1.32.4 cannot join a v1.33.13 control plane"}},
		// kubelet newer than the control plane.
		{image: "v1.34.0", server: "v1.33.13", want: []string{"the image's kubelet v1.34.0 cannot join a v1.33.13 control plane"}},
		{image: "v1.29.0", server: "v1.33.13", want: []string{"kubelet v1.29.0", "kubeadm v1.29.0", "v1.33.13"}},
	} {
		err := skew.CheckImage(tc.image, &version.Info{GitVersion: tc.server})
		if len(tc.want) == 0 {
			assert.NoError(t, err, "%s on %s", tc.image, tc.server)
			continue
		}
		if assert.Error(t, err, "%s on %s", tc.image, tc.server) {
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		}
	}
}

func TestReadImageManifest(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
		return p
	}
	v, err := skew.ReadImageManifest(write("ok.json", `{"schema_version":2,"baked":{"kubernetes":"v1.33.1","containerd":"2.1.4"},"outputs":[]}`))
	require.NoError(t, err)
	assert.Equal(t, "v1.33.1", v)
	im, err := skew.ReadImage(write("windows.json", `{"schema_version":2,"os":{"family":"windows","id":"windows"},"baked":{"kubernetes":"v1.33.1"}}`))
	require.NoError(t, err)
	assert.Equal(t, skew.Image{Kubernetes: "v1.33.1", OS: "windows"}, im)

	for name, tc := range map[string]struct{ data, want string }{
		"malformed":  {`{"baked":`, "not a kubenode-manifest.json"},
		"trailing":   {`{"baked":{"kubernetes":"v1.33.1"}} {}`, "data after the JSON object"},
		"not baked":  {`{"schema_version":2,"baked":null}`, "names no baked.kubernetes"},
		"bad semver": {`{"baked":{"kubernetes":"latest"}}`, `baked.kubernetes "latest"`},
		"oversized":  {`{"baked":{"kubernetes":"v1.33.1"},"pad":"` + strings.Repeat("x", skew.MaxManifestSize) + `"}`, "larger than 1048576 bytes"},
	} {
		_, err := skew.ReadImageManifest(write(strings.ReplaceAll(name, " ", "-")+".json", tc.data))
		assert.ErrorContains(t, err, tc.want, name)
	}
	_, err = skew.ReadImageManifest(filepath.Join(dir, "missing.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
