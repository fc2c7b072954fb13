// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
)

func valid(t *testing.T) *config.Config {
	c := config.New()
	require.NoError(t, c.Merge("test", []byte(`
apiVersion: joiner.kubenode.io/v1alpha1
kind: JoinerConfiguration
apiServerEndpoint: 10.0.2.2:6443
token: `+testToken+`
caCertHashes: ["sha256:`+sixtyFour+`"]
labels: {example.com/role: lab}
`)))
	c.SetDefaults("Node-1", config.DefaultCRISocket)
	return c
}

const sixtyFour = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestValidConfig(t *testing.T) {
	c := valid(t)
	require.NoError(t, c.Validate())
	assert.Equal(t, "node-1", c.NodeName, "the host name, lowercased")
	assert.Equal(t, config.DefaultDiscoveryTimeout, c.Timeouts.Discovery.Duration)
}

func TestValidateReportsEveryProblemByKey(t *testing.T) {
	c := config.New()
	require.NoError(t, c.Merge("bad", []byte(`
apiServerEndpoint: "10.0.2.2"
token: "not-a-token"
caCertHashes: ["md5:abc"]
nodeName: "Bad_Name"
labels: {node-role.kubernetes.io/worker: "", example.com/ok: "yes"}
taints: [{key: dedicated, value: win, effect: Sometimes}]
extraHosts: [{ip: "not-an-ip", hostnames: ["kind-control-plane"]}]
criSocket: "/run/containerd/containerd.sock"
kubeletExtraArgs: [{name: "--v", value: "2"}, {name: node-labels, value: a=b}]
timeouts: {nodeReady: -1s}
`)))
	err := c.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"apiServerEndpoint: Invalid value: \"10.0.2.2\": must be host:port",
		"token: Invalid value: \"<redacted>\"",
		"caCertHashes[0]: Invalid value: \"md5:abc\"",
		"nodeName: Invalid value: \"Bad_Name\"",
		"labels[node-role.kubernetes.io/worker]: Forbidden: the NodeRestriction admission plugin",
		"taints[0].effect: Unsupported value: \"Sometimes\"",
		"extraHosts[0].ip: Invalid value: \"not-an-ip\"",
		"criSocket: Invalid value: \"/run/containerd/containerd.sock\": must be a unix:// or npipe:// URL",
		"kubeletExtraArgs[0].name: Invalid value: \"--v\"",
		"kubeletExtraArgs[1].name: Forbidden: use labels / taints instead of node-labels",
		"timeouts.nodeReady: Invalid value: \"-1s\": must be positive",
	} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), "example.com/ok", "a label in the user's own namespace is fine")
	assert.NotContains(t, err.Error(), "0123456789abcdef", "the token never appears in errors")
}

// A kubelet flag's value goes into command lines split on whitespace and
// read for quotes and escapes (systemd's KUBELET_KUBEADM_ARGS, the Windows
// kubelet service's command line): it must stay one argument.
func TestKubeletArgValuesThatWouldSplitAreRefused(t *testing.T) {
	for _, value := range []string{"2 --register-node=false", "2\t--x", `"2"`, "it's", "a`b", `C:\var\lib`, "a\nb"} {
		t.Run(value, func(t *testing.T) {
			c := valid(t)
			c.KubeletExtraArgs = []kubeadmv1.Arg{{Name: "v", Value: value}}
			err := c.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), "kubeletExtraArgs[0].value: Invalid value:")
			assert.Contains(t, err.Error(), "the value of --v contains")
		})
	}
	c := valid(t)
	c.KubeletExtraArgs = []kubeadmv1.Arg{{Name: "feature-gates", Value: "A=true,B=false"}, {Name: "root-dir", Value: "C:/var/lib/kubelet"},
		{Name: "eviction-hard", Value: "memory.available<500Mi"}, {Name: "cgroups-per-qos", Value: ""}}
	require.NoError(t, c.Validate())
	c.KubeletExtraArgs = []kubeadmv1.Arg{{Name: "v=2 --x", Value: "1"}}
	require.ErrorContains(t, c.Validate(), `kubeletExtraArgs[0].name: Invalid value: "v=2 --x": a flag name is letters, digits`)
}

func TestMissingCredentialsSayWhereToGetThem(t *testing.T) {
	c := config.New()
	c.SetDefaults("node", config.DefaultCRISocket)
	err := c.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "apiServerEndpoint: Required value")
	assert.Contains(t, err.Error(), "token: Required value: a bootstrap token (`joiner token`")
	assert.Contains(t, err.Error(), "caCertHashes: Required value: pin the cluster CA")

	c.UnsafeSkipCAVerification = true
	assert.NotContains(t, c.Validate().Error(), "caCertHashes", "skipping the pin is allowed when asked for explicitly")
}

func TestMergeLayers(t *testing.T) {
	c := config.New()
	require.NoError(t, c.Merge("image", []byte(`
labels: {example.com/os: linux, example.com/pool: a}
kubeletExtraArgs: [{name: v, value: "2"}]
criSocket: unix:///run/containerd/containerd.sock
`)))
	require.NoError(t, c.Merge("seed", []byte(`
token: `+testToken+`
labels: {example.com/pool: b}
kubeletExtraArgs: [{name: max-pods, value: "50"}]
`)))
	assert.Equal(t, map[string]string{"example.com/os": "linux", "example.com/pool": "b"}, c.Labels, "labels merge key by key")
	assert.Equal(t, "max-pods", c.KubeletExtraArgs[0].Name, "lists are replaced")
	assert.Len(t, c.KubeletExtraArgs, 1)
	assert.Equal(t, "unix:///run/containerd/containerd.sock", c.CRISocket, "keys a later layer leaves out stay")
	assert.Equal(t, testToken, c.Token)
}

func TestMergeRejectsUnknownKeysAndOtherKinds(t *testing.T) {
	c := config.New()
	err := c.Merge("seed.yaml", []byte("tokn: x\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "seed.yaml")
	assert.Contains(t, err.Error(), `unknown field "tokn"`)

	err = c.Merge("kubeadm.yaml", []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "want apiVersion joiner.kubenode.io/v1alpha1, kind JoinerConfiguration")
}

func TestWriteFileIsPrivateAndRoundTrips(t *testing.T) {
	c := valid(t)
	path := filepath.Join(t.TempDir(), "etc", "joiner.yaml")
	require.NoError(t, c.WriteFile(path))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	back := config.New()
	require.NoError(t, back.MergeFile(path))
	assert.Equal(t, c.Token, back.Token)
	assert.Equal(t, c.Labels, back.Labels)
	assert.Equal(t, "abcdef.<redacted>", c.Redacted().Token)
}

const testToken = "abcdef.0123456789abcdef"

// A join seed disc is written by whoever can attach a disc to the machine:
// it may say where and how to join, not what runs as root on the node or
// what the node trusts.
func TestSeedMayNotSetImageOnlyKeys(t *testing.T) {
	c := config.New()
	require.NoError(t, c.Merge("image", []byte("apiServerEndpoint: kind-control-plane:6443\n")))
	err := c.MergeSeed("/dev/sr0:joiner.yaml", []byte(`
apiServerEndpoint: 10.0.2.2:6443
token: `+testToken+`
unsafeSkipCAVerification: true
kubeadmPath: /tmp/evil
kubeletPath: /tmp/evil
kubeletExtraArgs: [{name: pod-manifest-path, value: /tmp}]
criSocket: unix:///tmp/evil.sock
`))
	require.ErrorIs(t, err, config.ErrImageOnly)
	for _, key := range []string{"criSocket", "kubeadmPath", "kubeletExtraArgs", "kubeletPath", "unsafeSkipCAVerification"} {
		assert.Contains(t, err.Error(), "/dev/sr0:joiner.yaml: "+key+": a join seed disc may not set it, only the image may set it: "+
			"set it in the image (kubenode-bake's options, or the image's joiner.yaml) or pass it with --config as root")
	}
	assert.Empty(t, c.Token, "nothing of a refused seed is merged")
	assert.Empty(t, c.KubeletPath)

	require.NoError(t, c.MergeSeed("seed", []byte(`
apiServerEndpoint: 10.0.2.2:6443
token: `+testToken+`
caCertHashes: ["sha256:`+sixtyFour+`"]
nodeName: node-1
labels: {example.com/pool: lab}
taints: [{key: os, value: windows, effect: NoSchedule}]
extraHosts: [{ip: 10.0.2.2, hostnames: [kind-control-plane]}]
ignorePreflightErrors: [Swap]
timeouts: {nodeReady: 30m}
`)))
	assert.Equal(t, testToken, c.Token)

	// The same file through --config (root's) may set everything.
	require.NoError(t, config.New().Merge("--config", []byte("kubeletPath: /opt/kubelet\nunsafeSkipCAVerification: true\n")))
}

func TestSeedCannotOverrideTheImagesCAPin(t *testing.T) {
	other := "sha256:" + strings.Repeat("ab", 32)
	image := func() *config.Config {
		c := config.New()
		require.NoError(t, c.Merge("image", []byte(`caCertHashes: ["sha256:`+sixtyFour+`"]`)))
		return c
	}
	c := image()
	err := c.MergeSeed("seed", []byte("token: "+testToken+"\ncaCertHashes: ["+other+"]\n"))
	require.ErrorIs(t, err, config.ErrImageOnly)
	assert.Contains(t, err.Error(), "seed: caCertHashes: "+other+" is not among the CA pins the image holds (sha256:"+sixtyFour+")")
	assert.Equal(t, []string{"sha256:" + sixtyFour}, c.CACertHashes)

	c = image()
	require.NoError(t, c.MergeSeed("seed", []byte("token: "+testToken+"\ncaCertHashes: [\"sha256:"+sixtyFour+"\"]\n")))
	c = image()
	require.NoError(t, c.MergeSeed("seed", []byte("token: "+testToken+"\n")), "a seed without pins keeps the image's")
	assert.Equal(t, []string{"sha256:" + sixtyFour}, c.CACertHashes)
}

func TestSeedHostsEntriesOnlyForTheAPIServersAddress(t *testing.T) {
	err := config.New().MergeSeed("seed", []byte(`
apiServerEndpoint: 10.0.2.2:6443
extraHosts: [{ip: 10.0.2.2, hostnames: [cp]}, {ip: 203.0.113.7, hostnames: [registry.k8s.io]}]
`))
	require.ErrorIs(t, err, config.ErrImageOnly)
	assert.Contains(t, err.Error(), "seed: extraHosts[1]: 203.0.113.7 is not the API server's address (apiServerEndpoint 10.0.2.2:6443)")
	assert.NotContains(t, err.Error(), "extraHosts[0]:", "the address of entry 0 is the API server's")
}

// A seed that sets the API server's address chooses that address: it may
// give it only the API server's own names, the image's or the one the
// cluster's CA-verified cluster-info uses (kind's kind-control-plane), not
// any name (every pull from registry.k8s.io would go to the seed's host).
func TestSeedHostsEntriesOnlyForTheAPIServersNames(t *testing.T) {
	for name, c := range map[string]struct {
		image, seed string
		server      string // the server cluster-info names
		held        []string
		err         string // "": accepted
	}{
		"the image's endpoint name": {
			image:  "apiServerEndpoint: cp.lab:6443\n",
			seed:   "apiServerEndpoint: 10.0.2.2:6443\nextraHosts: [{ip: 10.0.2.2, hostnames: [CP.lab]}]\n",
			server: "https://10.0.2.2:6443",
		},
		"a name the image's extraHosts lists": {
			image:  "apiServerEndpoint: 10.0.2.2:6443\nextraHosts: [{ip: 192.168.122.1, hostnames: [kind-control-plane]}]\n",
			seed:   "apiServerEndpoint: 192.168.122.7:6443\nextraHosts: [{ip: 192.168.122.7, hostnames: [kind-control-plane]}]\n",
			server: "https://192.168.122.7:6443",
		},
		"the name cluster-info uses, in an image that names no host": {
			seed:   "apiServerEndpoint: 192.168.150.1:6443\nextraHosts: [{ip: 192.168.150.1, hostnames: [Kind-Control-Plane]}]\n",
			server: "https://kind-control-plane:6443",
			held:   []string{"Kind-Control-Plane"},
		},
		"any other name": {
			image:  "apiServerEndpoint: cp.lab:6443\ncaCertHashes: [\"sha256:" + sixtyFour + "\"]\n",
			seed:   "apiServerEndpoint: 203.0.113.7:6443\nextraHosts: [{ip: 203.0.113.7, hostnames: [cp.lab, registry.k8s.io]}]\n",
			server: "https://cp.lab:6443",
			held:   []string{"registry.k8s.io"},
			err: `seed: extraHosts[0].hostnames[1]: "registry.k8s.io" is neither the host name of the image's apiServerEndpoint nor a name the image's extraHosts lists (cp.lab) ` +
				`nor the host name of the API server in the cluster's cluster-info verified against the CA pin (cp.lab)`,
		},
		"another name beside the one cluster-info uses": {
			seed:   "apiServerEndpoint: 192.168.150.1:6443\nextraHosts: [{ip: 192.168.150.1, hostnames: [kind-control-plane, registry.k8s.io]}]\n",
			server: "https://kind-control-plane:6443",
			held:   []string{"kind-control-plane", "registry.k8s.io"},
			err: `seed: extraHosts[0].hostnames[1]: "registry.k8s.io" is neither the host name of the image's apiServerEndpoint nor a name the image's extraHosts lists ` +
				`(none: the image names its API server by no host name) nor the host name of the API server in the cluster's cluster-info verified against the CA pin (kind-control-plane)`,
		},
		"a cluster-info that names an address": {
			image:  "apiServerEndpoint: 10.0.2.2:6443\n",
			seed:   "extraHosts: [{ip: 10.0.2.2, hostnames: [cp]}]\n",
			server: "https://10.0.2.2:6443",
			held:   []string{"cp"},
			err: `seed: extraHosts[0].hostnames[0]: "cp" is neither the host name of the image's apiServerEndpoint nor a name the image's extraHosts lists (none: the image names its API server by no host name) ` +
				`nor the host name of the API server in the cluster's cluster-info verified against the CA pin (none: it names the API server https://10.0.2.2:6443)`,
		},
		// Without a pin, whoever answers on the address writes cluster-info.
		"the name cluster-info uses, but the CA is not pinned": {
			image:  "unsafeSkipCAVerification: true\n",
			seed:   "apiServerEndpoint: 192.168.150.1:6443\nextraHosts: [{ip: 192.168.150.1, hostnames: [kind-control-plane]}]\n",
			server: "https://kind-control-plane:6443",
			held:   []string{"kind-control-plane"},
			err:    `"kind-control-plane" is neither the host name of the image's apiServerEndpoint nor a name the image's extraHosts lists (none: the image names its API server by no host name) nor the host name of the API server in the cluster's cluster-info verified against the CA pin (none: unsafeSkipCAVerification is set, so cluster-info was not verified)`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := config.New()
			require.NoError(t, cfg.Merge("image", []byte(c.image)))
			require.NoError(t, cfg.MergeSeed("seed", []byte(c.seed)), "the API server's address: only the names wait for cluster-info")
			var held []string
			for _, h := range cfg.HeldSeedHostnames() {
				held = append(held, h.Name)
			}
			assert.Equal(t, c.held, held)
			err := cfg.CheckSeedHostnames(c.server)
			if c.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, config.ErrImageOnly)
			assert.Contains(t, err.Error(), c.err)
			assert.Contains(t, err.Error(), "a join seed disc may only give the API server's own name its address")
			assert.NotContains(t, err.Error(), "hostnames[0]: \"cp.lab\"", "the image's own name is accepted")
			if !cfg.UnsafeSkipCAVerification {
				assert.NotContains(t, err.Error(), "\"kind-control-plane\" is neither", "cluster-info's name is accepted when the pin verified it")
			}
		})
	}
}

// Root's later layer (flags) replaces a seed's extraHosts: nothing of the
// seed is left to check.
func TestALaterLayersExtraHostsReplaceTheHeldSeedNames(t *testing.T) {
	cfg := config.New()
	require.NoError(t, cfg.MergeSeed("seed", []byte("apiServerEndpoint: 192.168.150.1:6443\nextraHosts: [{ip: 192.168.150.1, hostnames: [registry.k8s.io]}]\n")))
	require.Error(t, cfg.CheckSeedHostnames("https://kind-control-plane:6443"))
	require.NoError(t, cfg.Merge("flags", []byte("extraHosts: [{ip: 192.168.150.1, hostnames: [cp]}]\n")))
	assert.Empty(t, cfg.HeldSeedHostnames())
	require.NoError(t, cfg.CheckSeedHostnames("https://kind-control-plane:6443"))
}

func TestConfigFilesAreBounded(t *testing.T) {
	big := []byte("labels: {example.com/a: b}\n" + "#" + strings.Repeat("x", config.MaxFileSize) + "\n")
	require.ErrorIs(t, config.New().MergeSeed("seed", big), config.ErrTooLarge)
	path := filepath.Join(t.TempDir(), "joiner.yaml")
	require.NoError(t, os.WriteFile(path, big, 0o600))
	require.ErrorIs(t, config.New().MergeFile(path), config.ErrTooLarge)
	require.NoError(t, os.WriteFile(path, big[:1000], 0o600))
	require.NoError(t, config.New().MergeFile(path))
}
