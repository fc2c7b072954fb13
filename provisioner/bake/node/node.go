// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package node is the description of a node image (Image): what the bake
// resolved from its configuration (releases from the version table, the
// artifacts with their checked digests, images, registry hosts, the proxy,
// the node basics and what the self-check expects), as plain data that the
// operating systems' packages, provisioner/bake/linux and
// provisioner/bake/windows, render into the steps they run on the guest.
// It imports neither of them.
package node

import (
	"unicode"
)

// Proxy settings for downloads and containerd.
type Proxy struct{ HTTP, HTTPS, No string }

// Step is one script run on the guest.
type Step struct {
	Name   string
	Script []byte
}

// OneLine says why a value cannot go into a generated script, or "".
func OneLine(s string) string {
	for _, r := range s {
		if unicode.IsControl(r) || r == '\uFFFE' || r == '\uFFFF' {
			return "contains a control character (newline, tab, NUL, ...), which is not allowed here"
		}
	}
	return ""
}
