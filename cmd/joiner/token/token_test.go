// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package token_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/internal/jointest"
	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/token"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
)

// signer plays the bootstrapsigner controller: once a token secret exists,
// cluster-info reads come back signed for it.
func signer(t *testing.T, c *fake.Clientset, ca jointest.CA) {
	c.PrependReactor("get", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() != metav1.NamespacePublic {
			return false, nil, nil
		}
		cm := jointest.ClusterInfo(t, ca, "https://192.168.122.10:6443")
		secrets, _ := c.Tracker().List(corev1.SchemeGroupVersion.WithResource("secrets"), corev1.SchemeGroupVersion.WithKind("Secret"), metav1.NamespaceSystem)
		for _, s := range secrets.(*corev1.SecretList).Items {
			bt, err := bootstraptokenv1.BootstrapTokenFromSecret(&s)
			require.NoError(t, err)
			jointest.Sign(t, cm, bt.Token.String())
		}
		return true, cm, nil
	})
}

func TestCreateTokenPinsTheCA(t *testing.T) {
	ca := jointest.NewCA(t)
	c := fake.NewClientset()
	signer(t, c, ca)
	node := config.New()
	node.Labels = map[string]string{"example.com/pool": "win"}
	cfg, err := token.Create(context.Background(), c, token.Options{
		TTL: time.Hour, Usages: token.DefaultUsages, Groups: token.DefaultGroups, Description: "test",
		Node: node, SignedTimeout: 5 * time.Second, Interval: 10 * time.Millisecond, Log: io.Discard,
	})
	require.NoError(t, err)

	assert.Equal(t, []string{ca.Hash()}, cfg.CACertHashes)
	assert.Equal(t, "192.168.122.10:6443", cfg.APIServerEndpoint, "taken from cluster-info when not given")
	assert.Equal(t, "win", cfg.Labels["example.com/pool"])

	secrets, err := c.CoreV1().Secrets(metav1.NamespaceSystem).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, secrets.Items, 1)
	s := secrets.Items[0]
	assert.Equal(t, bootstrapapi.SecretTypeBootstrapToken, s.Type)
	bt, err := bootstraptokenv1.BootstrapTokenFromSecret(&s)
	require.NoError(t, err)
	assert.Equal(t, cfg.Token, bt.Token.String())
	assert.Equal(t, []string{"authentication", "signing"}, bt.Usages)
	assert.Equal(t, token.DefaultGroups, bt.Groups)
	assert.WithinDuration(t, time.Now().Add(time.Hour), bt.Expires.Time, time.Minute)

	cfg.SetDefaults("node", config.DefaultCRISocket)
	require.NoError(t, cfg.Validate(), "the output is a complete join configuration")
}

func TestCreateFailsWhenNobodySigns(t *testing.T) {
	ca := jointest.NewCA(t)
	c := fake.NewClientset(jointest.ClusterInfo(t, ca, "https://192.168.122.10:6443"))
	_, err := token.Create(context.Background(), c, token.Options{
		TTL: time.Hour, Usages: token.DefaultUsages, Groups: token.DefaultGroups,
		SignedTimeout: 100 * time.Millisecond, Interval: 10 * time.Millisecond, Log: io.Discard,
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "has no signature for token")
	assert.Contains(t, err.Error(), "--controllers=*,bootstrapsigner,tokencleaner")
}

func TestCreateRejectsBadUsagesAndGroups(t *testing.T) {
	_, err := token.Create(context.Background(), fake.NewClientset(), token.Options{Usages: []string{"fly"}, Log: io.Discard})
	require.ErrorContains(t, err, "--usages")
	_, err = token.Create(context.Background(), fake.NewClientset(), token.Options{Usages: token.DefaultUsages, Groups: []string{"admins"}, Log: io.Discard})
	require.ErrorContains(t, err, "--groups")
}

// kubeadm's secret gets an expiry only for a positive TTL: a negative one
// would be a token that never expires, and a shared one that never
// expires joins any number of machines for ever. Neither is made.
func TestCreateRefusesATokenThatWouldNeverExpireByMistake(t *testing.T) {
	c := fake.NewClientset()
	_, err := token.Create(context.Background(), c, token.Options{TTL: -time.Hour, Usages: token.DefaultUsages, Groups: token.DefaultGroups, Log: io.Discard})
	require.ErrorContains(t, err, "--ttl -1h0m0s: a negative lifetime")
	_, err = token.CreateMany(context.Background(), c, token.Options{Usages: token.DefaultUsages, Groups: token.DefaultGroups, Log: io.Discard}, []string{"a-1", "a-2"}, true)
	require.ErrorContains(t, err, "--ttl 0 with --shared-token")
	secrets, err := c.CoreV1().Secrets(metav1.NamespaceSystem).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, secrets.Items, "no token was made")
}

func TestSeedDiscHoldsTheConfig(t *testing.T) {
	cfg := config.New()
	cfg.Token = jointest.Token
	cfg.APIServerEndpoint = "10.0.2.2:6443"
	path := filepath.Join(t.TempDir(), "seed.iso")
	require.NoError(t, token.WriteSeed(path, cfg))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the disc holds a token")
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	disc, err := autounattend.ReadISO(f)
	require.NoError(t, err)
	assert.Equal(t, config.SeedLabel, disc.Label)
	data, err := disc.File(config.FileName)
	require.NoError(t, err)
	back := config.New()
	require.NoError(t, back.Merge("seed", data))
	assert.Equal(t, jointest.Token, back.Token)
}

// A seed disc the joiner would refuse at first boot is not written.
func TestSeedDiscRefusesWhatOnlyTheImageMaySet(t *testing.T) {
	cfg := config.New()
	cfg.Token = jointest.Token
	cfg.APIServerEndpoint = "10.0.2.2:6443"
	cfg.KubeletExtraArgs = append(cfg.KubeletExtraArgs, kubeadmv1.Arg{Name: "v", Value: "2"})
	path := filepath.Join(t.TempDir(), "seed.iso")
	err := token.WriteSeed(path, cfg)
	require.ErrorIs(t, err, config.ErrImageOnly)
	assert.Contains(t, err.Error(), "kubeletExtraArgs: a join seed disc may not set it")
	assert.Contains(t, err.Error(), "--output")
	_, statErr := os.Stat(path)
	assert.ErrorIs(t, statErr, os.ErrNotExist)
}

func TestCreateManyTokenPerNode(t *testing.T) {
	ca := jointest.NewCA(t)
	c := fake.NewClientset()
	signer(t, c, ca)
	node := config.New()
	node.Labels = map[string]string{"example.com/pool": "win"}
	cfgs, err := token.CreateMany(context.Background(), c, token.Options{
		TTL: time.Hour, Usages: token.DefaultUsages, Groups: token.DefaultGroups, Description: "kubenode joiner",
		Node: node, SignedTimeout: 5 * time.Second, Interval: 10 * time.Millisecond, Log: io.Discard,
	}, []string{"win-1", "win-2", "win-3"}, false)
	require.NoError(t, err)
	require.Len(t, cfgs, 3)
	tokens := map[string]bool{}
	for i, cfg := range cfgs {
		assert.Equal(t, []string{"win-1", "win-2", "win-3"}[i], cfg.NodeName)
		assert.Equal(t, "win", cfg.Labels["example.com/pool"])
		assert.Equal(t, []string{ca.Hash()}, cfg.CACertHashes)
		tokens[cfg.Token] = true
	}
	assert.Len(t, tokens, 3, "a token per node")
	assert.Empty(t, node.NodeName, "the caller's configuration is not changed")

	secrets, err := c.CoreV1().Secrets(metav1.NamespaceSystem).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, secrets.Items, 3)
	var descriptions []string
	for _, s := range secrets.Items {
		bt, err := bootstraptokenv1.BootstrapTokenFromSecret(&s)
		require.NoError(t, err)
		assert.True(t, tokens[bt.Token.String()])
		descriptions = append(descriptions, bt.Description)
	}
	assert.ElementsMatch(t, []string{"kubenode joiner: node win-1", "kubenode joiner: node win-2", "kubenode joiner: node win-3"}, descriptions)
}

func TestCreateManySharedToken(t *testing.T) {
	ca := jointest.NewCA(t)
	c := fake.NewClientset()
	signer(t, c, ca)
	cfgs, err := token.CreateMany(context.Background(), c, token.Options{
		TTL: 48 * time.Hour, Usages: token.DefaultUsages, Groups: token.DefaultGroups,
		SignedTimeout: 5 * time.Second, Interval: 10 * time.Millisecond, Log: io.Discard,
	}, []string{"a-1", "a-2"}, true)
	require.NoError(t, err)
	require.Len(t, cfgs, 2)
	assert.Equal(t, cfgs[0].Token, cfgs[1].Token)
	assert.Equal(t, "a-1", cfgs[0].NodeName)
	assert.Equal(t, "a-2", cfgs[1].NodeName)
	secrets, err := c.CoreV1().Secrets(metav1.NamespaceSystem).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, secrets.Items, 1, "one token")
	bt, err := bootstraptokenv1.BootstrapTokenFromSecret(&secrets.Items[0])
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(48*time.Hour), bt.Expires.Time, time.Minute, "the ttl asked for")
}

// A seed's hosts entry for the name cluster-info uses (kind's
// kind-control-plane) is what the joiner accepts once discovery has
// verified cluster-info; any other name is refused before a token is made.
// Without such names cluster-info is not read.
func TestCheckSeedHostnamesAgainstClusterInfo(t *testing.T) {
	ca := jointest.NewCA(t)
	seed := func(name string) *config.Config {
		cfg := config.New()
		cfg.APIServerEndpoint = "192.168.150.1:6443"
		cfg.ExtraHosts = []corev1.HostAlias{{IP: "192.168.150.1", Hostnames: []string{name}}}
		return cfg
	}
	c := fake.NewClientset(jointest.ClusterInfo(t, ca, "https://kind-control-plane:6443"))
	require.NoError(t, token.CheckSeedHostnames(context.Background(), c, "--seed-iso", seed("kind-control-plane")))

	err := token.CheckSeedHostnames(context.Background(), c, "--seed-iso", seed("registry.k8s.io"))
	require.ErrorIs(t, err, config.ErrImageOnly)
	assert.Contains(t, err.Error(), `--seed-iso: extraHosts[0].hostnames[0]: "registry.k8s.io" is neither`)
	assert.Contains(t, err.Error(), "verified against the CA pin (kind-control-plane)")
	assert.Contains(t, err.Error(), "no token was made")

	empty := fake.NewClientset()
	noHosts := seed("x")
	noHosts.ExtraHosts = nil
	require.NoError(t, token.CheckSeedHostnames(context.Background(), empty, "--seed-iso", noHosts))
	assert.Empty(t, empty.Actions(), "nothing to check: cluster-info is not read")
	err = token.CheckSeedHostnames(context.Background(), empty, "--seed-iso", seed("kind-control-plane"))
	assert.ErrorContains(t, err, "--seed-iso: extraHosts: checking the names against the API server cluster-info names: reading kube-public/cluster-info")
}
