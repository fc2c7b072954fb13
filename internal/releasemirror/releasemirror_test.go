// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package releasemirror

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
)

func TestForTakesRuncCrictlAndCNIPluginsFromTheVersionTable(t *testing.T) {
	v, err := For("v1.37.2", "2.3.7")
	require.NoError(t, err)
	assert.Equal(t, Versions{Kubernetes: "v1.37.2", Containerd: "2.3.7", Runc: "v1.5.2", Crictl: "v1.37.0", CNIPlugins: versions.Defaults.CNIPlugins}, v)
	_, err = For("v1.99.0", "2.3.7")
	assert.ErrorContains(t, err, "kubernetes_version")
	_, err = For("v1.36.0", "9.9.9")
	assert.ErrorContains(t, err, "containerd_version")
}
