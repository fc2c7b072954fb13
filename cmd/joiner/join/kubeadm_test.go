// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package join_test

import (
	"testing"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/join"
	"github.com/kubenode/packer-plugin-kubenode/internal/golden"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	kubeadmv1beta3 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta3"
	kubeadmv1beta4 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	"sigs.k8s.io/yaml"
)

func TestKubeadmAPIForEachMinor(t *testing.T) {
	for _, tc := range []struct{ kubeadm, api string }{
		{"v1.22.0", "kubeadm.k8s.io/v1beta3"},
		{"v1.30.0", "kubeadm.k8s.io/v1beta3"},
		{"v1.30.14", "kubeadm.k8s.io/v1beta3"},
		{"v1.31.0", "kubeadm.k8s.io/v1beta4"},
		{"v1.33.13", "kubeadm.k8s.io/v1beta4"},
		{"v1.35.4", "kubeadm.k8s.io/v1beta4"},
	} {
		api, err := join.KubeadmAPIFor(utilversion.MustParseGeneric(tc.kubeadm))
		require.NoError(t, err, tc.kubeadm)
		assert.Equal(t, tc.api, api.GroupVersion.String(), tc.kubeadm)
	}
	_, err := join.KubeadmAPIFor(utilversion.MustParseGeneric("v1.21.14"))
	assert.EqualError(t, err, "kubeadm v1.21.14 reads no JoinConfiguration the joiner writes (kubeadm.k8s.io/v1beta3 is read from kubeadm v1.22); "+
		"bake the node with a newer kubernetes_version")
}

// renderConfig is a node's configuration with every key the
// JoinConfiguration carries set.
func renderConfig() *config.Config {
	c := config.New()
	c.APIServerEndpoint = "10.0.2.2:6443"
	c.Token = "abcdef.0123456789abcdef"
	c.CACertHashes = []string{"sha256:7c4b0c5c4bbcc9d5c37bc1fc0d8e2c4a5b9cc3bd6c4f3e7fb2c4c6a1b5d8e9f0"}
	c.Labels = map[string]string{"example.com/pool": "lab", "example.com/os": "windows"}
	c.Taints = []corev1.Taint{{Key: "os", Value: "windows", Effect: corev1.TaintEffectNoSchedule}}
	c.KubeletExtraArgs = []kubeadmv1beta4.Arg{kubeletArg("v", "2"), kubeletArg("pod-infra-container-image", "registry.k8s.io/pause:3.9")}
	c.IgnorePreflightErrors = []string{"Swap"}
	c.Timeouts.Discovery = &metav1.Duration{Duration: 90 * time.Second}
	c.Timeouts.TLSBootstrap = &metav1.Duration{Duration: 10 * time.Minute}
	c.SetDefaults("Win-Node-1", "npipe:////./pipe/containerd-containerd")
	return c
}

func api(t *testing.T, version string) join.KubeadmAPI {
	t.Helper()
	a, err := join.KubeadmAPIFor(utilversion.MustParseGeneric(version))
	require.NoError(t, err)
	return a
}

// Each document is what that kubeadm reads: it decodes strictly (no field
// unknown to the version) into kubeadm's type of that version, with every
// setting where the version keeps it.
func TestKubeadmJoinConfigurationPerAPI(t *testing.T) {
	cfg := renderConfig()

	t.Run("v1beta3", func(t *testing.T) {
		data, err := join.RenderKubeadmJoinConfiguration(cfg, api(t, "v1.30.14"))
		require.NoError(t, err)
		golden.Assert(t, "kubeadm-join-v1beta3.yaml", data)
		var jc kubeadmv1beta3.JoinConfiguration
		require.NoError(t, yaml.UnmarshalStrict(data, &jc))
		assert.Equal(t, "kubeadm.k8s.io/v1beta3", jc.APIVersion)
		assert.Equal(t, "JoinConfiguration", jc.Kind)
		assert.Equal(t, "win-node-1", jc.NodeRegistration.Name)
		assert.Equal(t, "npipe:////./pipe/containerd-containerd", jc.NodeRegistration.CRISocket)
		assert.Equal(t, map[string]string{"v": "2", "pod-infra-container-image": "registry.k8s.io/pause:3.9",
			"node-labels": "example.com/os=windows,example.com/pool=lab"}, jc.NodeRegistration.KubeletExtraArgs)
		assert.Equal(t, cfg.Taints, jc.NodeRegistration.Taints)
		assert.Equal(t, []string{"Swap"}, jc.NodeRegistration.IgnorePreflightErrors)
		assert.Equal(t, &kubeadmv1beta3.BootstrapTokenDiscovery{Token: cfg.Token, APIServerEndpoint: "10.0.2.2:6443", CACertHashes: cfg.CACertHashes},
			jc.Discovery.BootstrapToken)
		assert.Equal(t, cfg.Token, jc.Discovery.TLSBootstrapToken)
		assert.Equal(t, &metav1.Duration{Duration: 90 * time.Second}, jc.Discovery.Timeout)
	})

	t.Run("v1beta4", func(t *testing.T) {
		data, err := join.RenderKubeadmJoinConfiguration(cfg, api(t, "v1.33.13"))
		require.NoError(t, err)
		golden.Assert(t, "kubeadm-join-v1beta4.yaml", data)
		var jc kubeadmv1beta4.JoinConfiguration
		require.NoError(t, yaml.UnmarshalStrict(data, &jc))
		assert.Equal(t, "kubeadm.k8s.io/v1beta4", jc.APIVersion)
		assert.Equal(t, "JoinConfiguration", jc.Kind)
		assert.Equal(t, "win-node-1", jc.NodeRegistration.Name)
		assert.Equal(t, "npipe:////./pipe/containerd-containerd", jc.NodeRegistration.CRISocket)
		assert.Equal(t, []kubeadmv1beta4.Arg{{Name: "v", Value: "2"}, {Name: "pod-infra-container-image", Value: "registry.k8s.io/pause:3.9"},
			{Name: "node-labels", Value: "example.com/os=windows,example.com/pool=lab"}}, jc.NodeRegistration.KubeletExtraArgs)
		assert.Equal(t, cfg.Taints, jc.NodeRegistration.Taints)
		assert.Equal(t, []string{"Swap"}, jc.NodeRegistration.IgnorePreflightErrors)
		assert.Equal(t, &kubeadmv1beta4.BootstrapTokenDiscovery{Token: cfg.Token, APIServerEndpoint: "10.0.2.2:6443", CACertHashes: cfg.CACertHashes},
			jc.Discovery.BootstrapToken)
		assert.Equal(t, cfg.Token, jc.Discovery.TLSBootstrapToken)
		assert.Equal(t, &kubeadmv1beta4.Timeouts{Discovery: &metav1.Duration{Duration: 90 * time.Second}, TLSBootstrap: &metav1.Duration{Duration: 10 * time.Minute}},
			jc.Timeouts)
	})
}

// No taints is an empty list, not an absent one: kubeadm reads an absent
// list as its default taints.
func TestKubeadmJoinConfigurationWithoutTaintsOrArgs(t *testing.T) {
	cfg := config.New()
	cfg.APIServerEndpoint, cfg.Token, cfg.UnsafeSkipCAVerification = "cp.example:6443", "abcdef.0123456789abcdef", true
	cfg.SetDefaults("node", "unix:///run/containerd/containerd.sock")
	for _, v := range []string{"v1.30.14", "v1.33.13"} {
		data, err := join.RenderKubeadmJoinConfiguration(cfg, api(t, v))
		require.NoError(t, err, v)
		assert.Contains(t, string(data), "  taints: []\n", v)
		assert.NotContains(t, string(data), "kubeletExtraArgs", v)
		assert.Contains(t, string(data), "unsafeSkipCAVerification: true", v)
	}
}

// v1beta3 keeps kubelet flags in a map: a flag given twice would lose one
// value without a word, so it is refused; v1beta4 passes both.
func TestRepeatedKubeletFlagNeedsV1beta4(t *testing.T) {
	cfg := renderConfig()
	cfg.KubeletExtraArgs = append(cfg.KubeletExtraArgs, kubeletArg("v", "4"))
	_, err := join.RenderKubeadmJoinConfiguration(cfg, api(t, "v1.30.14"))
	assert.EqualError(t, err, "kubeletExtraArgs: --v is given more than once, which a kubeadm.k8s.io/v1beta3 JoinConfiguration cannot say "+
		"(kubeletExtraArgs is a map before kubeadm.k8s.io/v1beta4): give it once, or bake the node with kubeadm v1.31 or later")
	data, err := join.RenderKubeadmJoinConfiguration(cfg, api(t, "v1.31.0"))
	require.NoError(t, err)
	var jc kubeadmv1beta4.JoinConfiguration
	require.NoError(t, yaml.UnmarshalStrict(data, &jc))
	assert.Contains(t, jc.NodeRegistration.KubeletExtraArgs, kubeadmv1beta4.Arg{Name: "v", Value: "4"})
	assert.Contains(t, jc.NodeRegistration.KubeletExtraArgs, kubeadmv1beta4.Arg{Name: "v", Value: "2"})
}

func kubeletArg(name, value string) kubeadmv1beta4.Arg {
	return kubeadmv1beta4.Arg{Name: name, Value: value}
}
