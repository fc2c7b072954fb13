// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	joinerconfig "github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

// afterJoin is the kubelet service's command line once the joiner has
// re-registered it after kubeadm join on a clone of the image the double
// holds: the joiner reads its baked configuration, gives the kubelet
// kubeadm's flags then its own, and keeps how the image runs the kubelet.
func afterJoin(t *testing.T, g *guesttest.Windows) []string {
	t.Helper()
	cfg := joinerconfig.New()
	require.NoError(t, cfg.Merge("the image's joiner.yaml", g.Files[remote.UploadPath(joinerConf)]))
	cfg.SetDefaults("win-node-1", "")
	kubeadm, err := units.ParseKubeadmFlags(`KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=npipe:////./pipe/containerd-containerd --hostname-override=win-node-1"`)
	require.NoError(t, err)
	return units.KubeletServiceArgv(units.SplitCommandLine(g.Services[units.KubeletServiceName]), append(kubeadm, cfg.KubeletFlags()...)...)
}

// The image's priority class and reserves are the kubelet's before the
// join and stay after the joiner has re-registered the service with
// kubeadm's flags, beside the log rotation.
func TestKubeletPriorityAndReservesSurviveTheJoin(t *testing.T) {
	for name, tc := range map[string]struct {
		plan func(Plan) Plan
		want []string
	}{
		"defaults": {func(p Plan) Plan { return p }, []string{"--windows-priorityclass=ABOVE_NORMAL_PRIORITY_CLASS", "--system-reserved=memory=2Gi"}},
		"set": {func(p Plan) Plan {
			p.KubeletPriorityClass = "HIGH_PRIORITY_CLASS"
			p.KubeletSystemReserved = map[string]string{"memory": "4Gi", "cpu": "1"}
			p.KubeletKubeReserved = map[string]string{"memory": "500Mi"}
			return p
		}, []string{"--windows-priorityclass=HIGH_PRIORITY_CLASS", "--system-reserved=cpu=1,memory=4Gi", "--kube-reserved=memory=500Mi"}},
	} {
		t.Run(name, func(t *testing.T) {
			g := bakeOnDouble(t, tc.plan(basePlan(t)))
			image := units.SplitCommandLine(g.Services[units.KubeletServiceName])
			joined := afterJoin(t, g)
			for _, flag := range append(tc.want, "--log-file-size=100Mi") {
				assert.Contains(t, image, flag, "the image's service")
				assert.Contains(t, joined, flag, "the service after the join")
			}
			assert.Contains(t, joined, "--hostname-override=win-node-1")
		})
	}
}

func TestKubeletResourcesAreChecked(t *testing.T) {
	p := basePlan(t)
	p.KubeletPriorityClass = "ABOVE_NORMAL"
	p.KubeletSystemReserved = map[string]string{"memory": "two gigs", "gpu": "1", "pid": "-5", "cpu": "-1"}
	p.KubeletKubeReserved = map[string]string{"ephemeral-storage": "1Gi"}
	p.KubeletExtraArgs = map[string]string{"windows-priorityclass": "HIGH_PRIORITY_CLASS", "system-reserved": "memory=1Gi"}
	err := p.Validate()
	require.Error(t, err)
	for _, want := range []string{
		`kubelet_priority_class: "ABOVE_NORMAL" is not a priority class the kubelet knows (IDLE_PRIORITY_CLASS, BELOW_NORMAL_PRIORITY_CLASS, NORMAL_PRIORITY_CLASS, ABOVE_NORMAL_PRIORITY_CLASS, HIGH_PRIORITY_CLASS, REALTIME_PRIORITY_CLASS)`,
		`kubelet_system_reserved["memory"]: "two gigs" is not a quantity such as 500m (cpu) or 2Gi`,
		`kubelet_system_reserved["gpu"]: not a resource the kubelet reserves (cpu, memory, ephemeral-storage, pid)`,
		`kubelet_system_reserved["pid"]: "-5" is not a number of process IDs`,
		`kubelet_system_reserved["cpu"]: "-1" is negative`,
		`kubelet_extra_args["windows-priorityclass"]: on Windows kubelet_priority_class sets it; remove it from kubelet_extra_args`,
		`kubelet_extra_args["system-reserved"]: on Windows kubelet_system_reserved sets it; remove it from kubelet_extra_args`,
	} {
		assert.ErrorContains(t, err, want)
	}
	assert.NotContains(t, err.Error(), "kubelet_kube_reserved")

	// An empty reserve reserves nothing: no flag.
	p = basePlan(t)
	p.KubeletSystemReserved = map[string]string{}
	require.NoError(t, p.Validate())
	assert.Equal(t, []string{"--windows-priorityclass=ABOVE_NORMAL_PRIORITY_CLASS"}, p.kubeletImageFlags())
}
