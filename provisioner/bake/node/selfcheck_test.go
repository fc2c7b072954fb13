// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package node

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNormalizeImageRef(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                      "docker.io/library/busybox:latest",
		"busybox:1.36":                 "docker.io/library/busybox:1.36",
		"example/app":                  "docker.io/example/app:latest",
		"registry.k8s.io/pause:3.10":   "registry.k8s.io/pause:3.10",
		"localhost/app":                "localhost/app:latest",
		"mirror.example:5000/a/b":      "mirror.example:5000/a/b:latest",
		"mirror.example:5000/a/b:v2":   "mirror.example:5000/a/b:v2",
		"quay.io/x/y@sha256:" + sha0(): "quay.io/x/y@sha256:" + sha0(),
	} {
		assert.Equal(t, want, NormalizeImageRef(in), in)
	}
}

func sha0() string { return strings.Repeat("0", 64) }
