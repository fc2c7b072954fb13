// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package linux

import (
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// imagesStep is the images step, when there is something to preload.
func imagesStep(p Plan) (node.Step, bool) {
	if p.Images.Empty() {
		return node.Step{}, false
	}
	return node.Step{Name: node.StepImages, Script: images(p)}, true
}

// images imports the archives, pulls pull_images (through the registry
// mirrors' hosts directory) and kubeadm's images, labels them pinned, and
// lists each with its digest, failing for one that is missing. An archive
// whose images carry its sha256 label is not imported again.
func images(p Plan) []byte { return render("images.sh.tmpl", p) }
