// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package node

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kubenode/packer-plugin-kubenode/internal/baked"
)

func TestParseImageListing(t *testing.T) {
	d := "sha256:" + strings.Repeat("a", 64)
	out := "ok: x\r\nimage: registry.k8s.io/pause:3.10 " + d + "\r\nimage: broken\nimage: registry.k8s.io/pause:3.10 " + d + "\n"
	assert.Equal(t, []baked.Image{{Name: "registry.k8s.io/pause:3.10", Digest: d}}, ParseImageListing(out))
	assert.Equal(t, []baked.Image{}, ParseImageListing(""), "none: an empty list, not null")
}
