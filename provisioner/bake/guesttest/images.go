// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package guesttest

import (
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// Images are images of two archives and a pull, for the images step.
func Images() node.Images {
	return node.Images{
		Archives: []node.ImageFile{
			{FileName: "image-1-pause.tar", SHA256: strings.Repeat("1", 64), Refs: []string{"registry.k8s.io/pause:3.10"}},
			{FileName: "image-2-tools.tar", SHA256: strings.Repeat("2", 64), Refs: []string{"docker.io/library/busybox:1.36", "example.com/it's:v1"}},
		},
		Pull: []string{"registry.k8s.io/kube-proxy:v1.33.13"},
	}
}

// StepNames are the steps' names, in order.
func StepNames(steps []node.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Name)
	}
	return out
}
