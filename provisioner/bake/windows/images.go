// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// imagesStep is the images step, when there is something to preload.
func imagesStep(p Plan) (node.Step, bool) {
	if p.Images.Empty() {
		return node.Step{}, false
	}
	return node.Step{Name: node.StepImages, Script: imagesScript(p)}, true
}

// imagesScript is the Linux images step for Windows: ctr.exe imports the archives
// and pulls pull_images (through the registry mirrors' hosts directory),
// every image is labelled pinned, and each is listed with its digest.
func imagesScript(p Plan) []byte {
	type archive struct {
		FileName, Path, Label, RefList string
		Refs                           []string
	}
	type env struct{ Name, Value string }
	data := struct {
		Namespace, Ctr, HostsDir, Pinned, ListedPrefix string
		Environment                                    []env
		Archives                                       []archive
		Pull, Refs                                     []string
	}{
		Namespace: node.ContainerdK8sNS, Ctr: containerdDir + `\ctr.exe`, HostsDir: certsDir,
		Pinned: node.PinnedLabel, ListedPrefix: node.ImageListedPrefix,
		Pull: p.Images.Pull, Refs: p.Images.Refs(),
	}
	for _, kv := range proxyEnv(p.Proxy) {
		k, v, _ := strings.Cut(kv, "=")
		data.Environment = append(data.Environment, env{k, v})
	}
	for _, a := range p.Images.Archives {
		data.Archives = append(data.Archives, archive{
			FileName: a.FileName, Path: p.Staging + `\` + a.FileName, Label: node.ArchiveLabelKey + "=" + a.SHA256,
			RefList: strings.Join(a.Refs, ", "), Refs: a.Refs,
		})
	}
	return renderStep(node.StepImages, data)
}
