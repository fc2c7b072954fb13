// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// selfCheckInput is what self-check.ps1.tmpl prints.
type selfCheckInput struct {
	Kubernetes, Containerd, Crictl string
	Joiner                         bool
	// Images are the images containerd must have, as it names them.
	Images []string

	KubeDir, ContainerdDir                                        string
	ContainerdService, KubeletService, JoinerService, TimeService string
	// Time are the time sources ntp_servers names; Features
	// windows_features.
	Time     timeSources
	Features []string
	// ClusterAPI, in a Cluster API image, are its checks.
	ClusterAPI *clusterAPISelfCheckInput
}

// SelfCheck renders the Windows self-check.
func SelfCheck(c node.SelfCheck) []byte {
	return templates.Render("self-check.ps1.tmpl", newSelfCheckInput(c))
}

// selfCheckScript is the plan's self-check: the node's checks, the time
// sources, and the Cluster API checks in a Cluster API image.
func (p Plan) selfCheckScript() []byte {
	in := newSelfCheckInput(p.selfCheck())
	in.Time = p.timeSources()
	in.Features = p.WindowsFeatures
	if p.ClusterAPI {
		in.ClusterAPI = clusterAPISelfCheck(p)
	}
	return templates.Render("self-check.ps1.tmpl", in)
}

// newSelfCheckInput is the input of the checks of c.
func newSelfCheckInput(c node.SelfCheck) selfCheckInput {
	in := selfCheckInput{
		Kubernetes: c.KubernetesVersion, Containerd: c.ContainerdVersion, Crictl: c.CrictlVersion,
		Joiner:  c.Joiner,
		KubeDir: units.WindowsKubeDir, ContainerdDir: containerdDir,
		ContainerdService: units.ContainerdServiceName, KubeletService: units.KubeletServiceName,
		JoinerService: units.JoinerServiceName, TimeService: timeService,
	}
	if len(c.Images) > 0 {
		in.Images = node.NormalizedImages(c.Images)
	}
	return in
}
