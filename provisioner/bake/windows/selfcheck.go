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
	// ClusterAPI, in a Cluster API image, are its checks.
	ClusterAPI *clusterAPISelfCheckInput
}

// SelfCheck renders the Windows self-check.
func SelfCheck(c node.SelfCheck) []byte { return selfCheck(c, nil) }

// selfCheckScript is the plan's self-check, with the Cluster API checks
// in a Cluster API image.
func (p Plan) selfCheckScript() []byte {
	if p.ClusterAPI {
		return selfCheck(p.selfCheck(), clusterAPISelfCheck(p))
	}
	return selfCheck(p.selfCheck(), nil)
}

// selfCheck renders the checks of c, then the Cluster API ones, if any.
func selfCheck(c node.SelfCheck, clusterAPI *clusterAPISelfCheckInput) []byte {
	in := selfCheckInput{
		Kubernetes: c.KubernetesVersion, Containerd: c.ContainerdVersion, Crictl: c.CrictlVersion,
		Joiner:  c.Joiner,
		KubeDir: units.WindowsKubeDir, ContainerdDir: containerdDir,
		ContainerdService: units.ContainerdServiceName, KubeletService: units.KubeletServiceName,
		JoinerService: units.JoinerServiceName, TimeService: timeService,
		ClusterAPI: clusterAPI,
	}
	if len(c.Images) > 0 {
		in.Images = node.NormalizedImages(c.Images)
	}
	return templates.Render("self-check.ps1.tmpl", in)
}
