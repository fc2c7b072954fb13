// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package baked

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteThenTakeOnce(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv("PACKER_RUN_UUID", "8d3f-run")
	f := Record{
		Facts: Facts{Kubernetes: "v1.33.13", Containerd: "1.6.20", Bootstrap: "cluster-api", Checksums: map[string]string{"kubelet": "ab"}},
		OS:    GuestOS{ID: "debian", Version: "12", Name: "Debian GNU/Linux 12 (bookworm)"},
	}
	require.NoError(t, Write("kubenode-libvirt.debian/../x", f))
	assert.NotContains(t, Path("kubenode-libvirt.debian/../x"), "/../", "build names cannot escape the directory")

	read, err := Read("kubenode-libvirt.debian/../x")
	require.NoError(t, err)
	assert.Equal(t, &f, read)
	got, err := Take("kubenode-libvirt.debian/../x")
	require.NoError(t, err)
	assert.Equal(t, &f, got)
	again, err := Take("kubenode-libvirt.debian/../x")
	require.NoError(t, err)
	assert.Nil(t, again, "taken once")
	gone, err := Read("kubenode-libvirt.debian/../x")
	require.NoError(t, err)
	assert.Nil(t, gone, "Take removes the record Read leaves")

	other, err := Take("another-build")
	require.NoError(t, err)
	assert.Nil(t, other)

	t.Setenv("PACKER_RUN_UUID", "")
	require.NoError(t, Write("b", f), "outside packer: nothing to hand over")
	none, err := Take("b")
	require.NoError(t, err)
	assert.Nil(t, none)
}
