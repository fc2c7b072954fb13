// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/golden"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

func TestImagesStepPlace(t *testing.T) {
	w := basePlan(t)
	steps, err := Steps(w)
	require.NoError(t, err)
	assert.NotContains(t, guesttest.StepNames(steps), node.StepImages)
	w.Images = guesttest.Images()
	w.Images.Kubeadm = ""
	steps, err = Steps(w)
	require.NoError(t, err)
	got := guesttest.StepNames(steps)
	i := strings.Index(strings.Join(got, " "), "kubelet crictl images ")
	assert.GreaterOrEqual(t, i, 0, "images right after kubelet and crictl: %v", got)
}

// renderedImages are the images step's golden.
func renderedImages(t *testing.T) map[string][]byte {
	w := basePlan(t).WithDefaults()
	w.Images = guesttest.Images()
	w.Proxy = node.Proxy{HTTPS: "http://proxy.example:3128"}
	return map[string][]byte{"images/windows-images.ps1": imagesScript(w)}
}

func TestImagesGolden(t *testing.T) {
	for name, got := range renderedImages(t) {
		t.Run(name, func(t *testing.T) { golden.Assert(t, name, got) })
	}
}
