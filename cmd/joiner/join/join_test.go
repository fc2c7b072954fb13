// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package join_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/internal/jointest"
	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/join"
	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/seed"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmscheme "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/scheme"
	kubeadmv1beta3 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta3"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	"sigs.k8s.io/yaml"
)

// fakeHost stands for the machine: kubeadm join "succeeds" by writing
// kubelet.conf and registering a Ready Node in the fake cluster.
type fakeHost struct {
	mu        sync.Mutex
	t         *testing.T
	paths     config.Paths
	client    *fake.Clientset
	calls     []string
	joinFails bool
	notReady  string // the kubelet reports NotReady with this message
	// kubeadmConfigMode is the mode of kubeadm's config when kubeadm ran.
	kubeadmConfigMode os.FileMode
	kubeadmConfig     []byte
	prepared, applied []string
	flagsEnv          string
	// service is what the kubelet service is registered with;
	// restartFails makes RestartKubelet fail (the run dies there).
	service      []string
	restartFails bool
	// version is what the kubelet and kubeadm report.
	version string
}

func (h *fakeHost) record(s string) { h.mu.Lock(); h.calls = append(h.calls, s); h.mu.Unlock() }

func (h *fakeHost) Preflight(*config.Config) error        { h.record("preflight"); return nil }
func (h *fakeHost) DialCRI(context.Context, string) error { h.record("dial-cri"); return nil }
func (h *fakeHost) DisableFirstBoot() error               { h.record("disable-first-boot"); return nil }
func (h *fakeHost) PrepareKubelet(_ context.Context, f []string) error {
	h.record("prepare-kubelet")
	h.prepared, h.service = f, f
	return nil
}
func (h *fakeHost) RestartKubelet(_ context.Context, f []string) error {
	h.record("restart-kubelet")
	if h.restartFails {
		return fmt.Errorf("service kubelet: the service did not respond to the start or control request in a timely fashion")
	}
	h.applied, h.service = f, f
	return nil
}

// KubeletHasFlags only reads: it is not recorded.
func (h *fakeHost) KubeletHasFlags(_ context.Context, f []string) (bool, error) {
	return slices.Equal(h.service, f), nil
}

func (h *fakeHost) Output(_ context.Context, _ []string, path string, args ...string) (string, error) {
	h.record(path + " " + strings.Join(args, " "))
	if path == "kubelet" {
		return "Kubernetes " + h.version, nil
	}
	return h.version, nil
}

func (h *fakeHost) Run(_ context.Context, _ []string, w io.Writer, path string, args ...string) error {
	h.record(path + " " + strings.Join(args, " "))
	fi, err := os.Stat(h.paths.KubeadmConfig)
	require.NoError(h.t, err, "kubeadm runs with its config on disk")
	h.kubeadmConfigMode = fi.Mode().Perm()
	h.kubeadmConfig, _ = os.ReadFile(h.paths.KubeadmConfig)
	fmt.Fprintln(w, "[preflight] Running pre-flight checks")
	if h.joinFails {
		fmt.Fprintln(w, "error execution phase kubelet-start: timed out waiting for the condition")
		return fmt.Errorf("exit status 1")
	}
	// Read as kubeadm reads it, whichever API version it is in.
	obj, err := runtime.Decode(kubeadmscheme.Codecs.UniversalDecoder(), h.kubeadmConfig)
	require.NoError(h.t, err)
	jc := obj.(*kubeadmapi.JoinConfiguration)
	require.NoError(h.t, os.WriteFile(h.paths.KubeletConf, []byte(kubeletConf), 0o600))
	if h.flagsEnv != "" {
		require.NoError(h.t, os.WriteFile(h.paths.KubeadmFlags, []byte(h.flagsEnv), 0o644))
	}
	labels := map[string]string{}
	for _, a := range jc.NodeRegistration.KubeletExtraArgs {
		if a.Name == "node-labels" {
			for _, kv := range strings.Split(a.Value, ",") {
				k, v, _ := strings.Cut(kv, "=")
				labels[k] = v
			}
		}
	}
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}
	if h.notReady != "" {
		ready = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: h.notReady}
	}
	_, err = h.client.CoreV1().Nodes().Create(context.Background(), &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: jc.NodeRegistration.Name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: jc.NodeRegistration.Taints},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}},
	}, metav1.CreateOptions{})
	return err
}

const kubeletConf = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://10.0.2.2:6443"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {}}]
`

type env struct {
	paths  config.Paths
	client *fake.Clientset
	host   *fakeHost
	ca     jointest.CA
	log    bytes.Buffer
	opts   join.Options
}

func newEnv(t *testing.T, seedConfig string) *env {
	dir := t.TempDir()
	e := &env{ca: jointest.NewCA(t)}
	e.paths = config.Paths{
		Config:        filepath.Join(dir, "etc/kubenode/joiner.yaml"),
		KubeadmConfig: filepath.Join(dir, "etc/kubenode/kubeadm-join.yaml"),
		KubeletConf:   filepath.Join(dir, "kubelet.conf"),
		KubeadmFlags:  filepath.Join(dir, "kubeadm-flags.env"),
		Hosts:         filepath.Join(dir, "hosts"),
	}
	require.NoError(t, os.WriteFile(e.paths.Hosts, []byte("127.0.0.1 localhost\n"), 0o644))
	e.client = fake.NewClientset(jointest.ClusterInfo(t, e.ca, "https://10.0.2.2:6443", jointest.Token))
	e.client.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.33.13", Major: "1", Minor: "33"}
	e.host = &fakeHost{t: t, paths: e.paths, client: e.client, version: "v1.33.13"}
	require.NoError(t, os.MkdirAll(filepath.Dir(e.paths.Config), 0o755))
	require.NoError(t, os.WriteFile(e.paths.Config, []byte(strings.ReplaceAll(seedConfig, "HASH", e.ca.Hash())), 0o600))
	e.opts = join.Options{
		Paths: e.paths, Log: &e.log, Host: e.host, Interval: 10 * time.Millisecond,
		Hostname:  func() (string, error) { return "Win-Node-1", nil },
		NewClient: func(*rest.Config) (kubernetes.Interface, error) { return e.client, nil },
	}
	return e
}

const goodConfig = `
apiServerEndpoint: 10.0.2.2:6443
token: abcdef.0123456789abcdef
caCertHashes: [HASH]
labels: {example.com/pool: lab}
taints: [{key: os, value: windows, effect: NoSchedule}]
extraHosts: [{ip: 192.168.122.1, hostnames: [kind-control-plane]}]
kubeletExtraArgs: [{name: v, value: "2"}]
timeouts: {discovery: 1s, nodeReady: 1s, seed: 1s}
`

func TestJoinEndToEndOnFakes(t *testing.T) {
	e := newEnv(t, goodConfig)
	require.NoError(t, join.Run(context.Background(), e.opts), e.log.String())

	assert.Equal(t, []string{
		"dial-cri", "preflight", "kubelet --version", "kubeadm version -o short",
		"prepare-kubelet", "kubeadm join --config " + e.paths.KubeadmConfig, "restart-kubelet", "disable-first-boot",
	}, e.host.calls)
	assert.Equal(t, os.FileMode(0o600), e.host.kubeadmConfigMode, "kubeadm's config holds the token")

	var jc kubeadmv1.JoinConfiguration
	require.NoError(t, yaml.UnmarshalStrict(e.host.kubeadmConfig, &jc))
	assert.Equal(t, "kubeadm.k8s.io/v1beta4", jc.APIVersion)
	assert.Equal(t, "JoinConfiguration", jc.Kind)
	assert.Equal(t, "win-node-1", jc.NodeRegistration.Name)
	assert.Equal(t, []string{e.ca.Hash()}, jc.Discovery.BootstrapToken.CACertHashes)
	assert.False(t, jc.Discovery.BootstrapToken.UnsafeSkipCAVerification)
	assert.Equal(t, jointest.Token, jc.Discovery.BootstrapToken.Token)
	assert.Equal(t, []kubeadmv1.Arg{{Name: "v", Value: "2"}, {Name: "node-labels", Value: "example.com/pool=lab"}}, jc.NodeRegistration.KubeletExtraArgs)
	assert.Equal(t, "os=windows:NoSchedule", jc.NodeRegistration.Taints[0].ToString())

	hosts, _ := os.ReadFile(e.paths.Hosts)
	assert.Equal(t, "127.0.0.1 localhost\n# BEGIN kubenode-joiner extraHosts\n192.168.122.1 kind-control-plane\n# END kubenode-joiner extraHosts\n", string(hosts))

	_, err := os.Stat(e.paths.KubeadmConfig)
	assert.ErrorIs(t, err, os.ErrNotExist, "kubeadm's config (with the token) is removed")
	cfg, _ := os.ReadFile(e.paths.Config)
	assert.NotContains(t, string(cfg), "0123456789abcdef", "the token is scrubbed from the config file")
	assert.Contains(t, string(cfg), "example.com/pool", "the rest of the config stays")
	fi, _ := os.Stat(e.paths.Config)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	assert.Equal(t, []string{"--hostname-override=win-node-1", "--node-labels=example.com/pool=lab", "--register-with-taints=os=windows:NoSchedule", "--v=2"}, e.host.prepared)
	assert.Contains(t, e.log.String(), "node win-node-1 joined the cluster and is Ready")
	assert.Contains(t, e.log.String(), "[discovery] cluster-info signed for token abcdef")
	assert.Contains(t, e.log.String(), "[kubeadm-config] wrote "+e.paths.KubeadmConfig+": a kubeadm.k8s.io/v1beta4 JoinConfiguration, for kubeadm v1.33.13\n")

	// Again: already a member, nothing runs but the (idempotent) disable.
	before := len(e.host.calls)
	e.log.Reset()
	require.NoError(t, join.Run(context.Background(), e.opts))
	assert.Equal(t, []string{"disable-first-boot"}, e.host.calls[before:], "a second join runs nothing else on the host")
	assert.Contains(t, e.log.String(), "nothing changed")
	assert.Contains(t, e.log.String(), "already a member")
	after, _ := os.ReadFile(e.paths.Hosts)
	assert.Equal(t, hosts, after)
}

// kubeadm v1.30 refuses v1beta4 in `kubeadm join --config` (an
// experimental API there): a node with kubeadm v1.30 gets v1beta3, with the
// same settings, and its token is gone just the same afterwards.
func TestJoinWithKubeadmV130WritesV1beta3(t *testing.T) {
	e := newEnv(t, strings.Replace(goodConfig, "seed: 1s}", "seed: 1s, tlsBootstrap: 10m}", 1))
	e.host.version = "v1.30.14"
	e.client.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.30.14", Major: "1", Minor: "30"}
	require.NoError(t, join.Run(context.Background(), e.opts), e.log.String())

	assert.Contains(t, e.host.calls, "kubeadm version -o short")
	var jc kubeadmv1beta3.JoinConfiguration
	require.NoError(t, yaml.UnmarshalStrict(e.host.kubeadmConfig, &jc), "a v1beta3 document with no field v1beta3 lacks")
	assert.Equal(t, "kubeadm.k8s.io/v1beta3", jc.APIVersion)
	assert.Equal(t, "win-node-1", jc.NodeRegistration.Name)
	assert.Equal(t, map[string]string{"v": "2", "node-labels": "example.com/pool=lab"}, jc.NodeRegistration.KubeletExtraArgs)
	assert.Equal(t, &metav1.Duration{Duration: time.Second}, jc.Discovery.Timeout)
	assert.Equal(t, []string{e.ca.Hash()}, jc.Discovery.BootstrapToken.CACertHashes)
	assert.Contains(t, e.log.String(), "a kubeadm.k8s.io/v1beta3 JoinConfiguration, for kubeadm v1.30.14\n")
	assert.Contains(t, e.log.String(), "[kubeadm-config] NOTE: kubeadm v1.30.14 waits a fixed 5m0s for the kubelet's TLS bootstrap "+
		"(a kubeadm.k8s.io/v1beta3 JoinConfiguration cannot set it): timeouts.tlsBootstrap 10m0s is not used")

	node, err := e.client.CoreV1().Nodes().Get(context.Background(), "win-node-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "lab", node.Labels["example.com/pool"])
	_, err = os.Stat(e.paths.KubeadmConfig)
	assert.ErrorIs(t, err, os.ErrNotExist, "kubeadm's config (with the token) is removed")
	cfg, _ := os.ReadFile(e.paths.Config)
	assert.NotContains(t, string(cfg), "0123456789abcdef", "the token is scrubbed from the config file")
}

// A kubeadm that does not say its version stops the join in preflight,
// naming the binary, before anything holding the token is written.
func TestUnreadableKubeadmVersionFailsPreflight(t *testing.T) {
	e := newEnv(t, goodConfig+"kubeadmPath: /opt/bin/kubeadm\n")
	e.host.version = "garbage"
	err := join.Run(context.Background(), e.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "phase preflight: ")
	assert.Contains(t, err.Error(), "kubeadm: `/opt/bin/kubeadm version -o short` printed \"garbage\", not a version vX.Y.Z")
	assert.NotContains(t, e.host.calls, "/opt/bin/kubeadm join --config "+e.paths.KubeadmConfig, "kubeadm join never ran")
	_, statErr := os.Stat(e.paths.KubeadmConfig)
	assert.ErrorIs(t, statErr, os.ErrNotExist)
}

func TestKubeletServiceGetsKubeadmFlagsThenOurs(t *testing.T) {
	e := newEnv(t, goodConfig)
	e.host.flagsEnv = "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=npipe:////./pipe/containerd-containerd --pod-infra-container-image=registry.k8s.io/pause:3.10\"\n"
	require.NoError(t, join.Run(context.Background(), e.opts), e.log.String())
	assert.Equal(t, []string{
		"--container-runtime-endpoint=npipe:////./pipe/containerd-containerd", "--pod-infra-container-image=registry.k8s.io/pause:3.10",
		"--hostname-override=win-node-1", "--node-labels=example.com/pool=lab", "--register-with-taints=os=windows:NoSchedule", "--v=2",
	}, e.host.applied)
}

func TestWrongCAHashIsRefusedBeforeAnythingIsWritten(t *testing.T) {
	e := newEnv(t, strings.Replace(goodConfig, "HASH", "sha256:"+strings.Repeat("0", 64), 1))
	err := join.Run(context.Background(), e.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "phase discovery: the cluster's CA is "+e.ca.Hash()+", which is not in caCertHashes")
	assert.Contains(t, err.Error(), "nothing was written to this node")
	assert.Empty(t, e.host.calls, "kubeadm never ran")
	_, statErr := os.Stat(e.paths.KubeadmConfig)
	assert.ErrorIs(t, statErr, os.ErrNotExist)
	hosts, _ := os.ReadFile(e.paths.Hosts)
	assert.Equal(t, "127.0.0.1 localhost\n", string(hosts), "no hosts entry for a cluster the pin did not verify")
}

// A seed disc that points the node at another address may give that
// address only the API server's own names: the image's, or the one the
// cluster-info discovery verified against the CA pin uses (kind's
// kind-control-plane, which the TLS bootstrap connects to). Any other name
// (registry.k8s.io) is refused, and a seed that names it correctly but
// meets a cluster with another CA leaves the hosts file as it was.
func TestSeedHostsEntriesNeedTheAPIServersNamesAndAVerifiedCluster(t *testing.T) {
	for name, c := range map[string]struct {
		image, seed string
		server      string // cluster-info's
		err         string // "": the join succeeds
		hosts       string // the hosts file's entry when it does
	}{
		// docs/lab-windows.md: an image that names no API server, a seed
		// made with `joiner token --extra-host kind-control-plane=...`.
		"the name cluster-info uses": {
			image:  "timeouts: {discovery: 1s, nodeReady: 1s}\n",
			seed:   "apiServerEndpoint: 192.168.150.1:6443\ncaCertHashes: [HASH]\nextraHosts: [{ip: 192.168.150.1, hostnames: [kind-control-plane]}]\n",
			server: "https://kind-control-plane:6443",
			hosts:  "192.168.150.1 kind-control-plane",
		},
		"another name, a verified cluster": {
			image:  "timeouts: {discovery: 1s, nodeReady: 1s}\n",
			seed:   "apiServerEndpoint: 192.168.150.1:6443\ncaCertHashes: [HASH]\nextraHosts: [{ip: 192.168.150.1, hostnames: [registry.k8s.io]}]\n",
			server: "https://kind-control-plane:6443",
			err: `phase hosts: ` + "SEED" + `: extraHosts[0].hostnames[0]: "registry.k8s.io" is neither the host name of the image's apiServerEndpoint nor a name the image's extraHosts lists ` +
				`(none: the image names its API server by no host name) nor the host name of the API server in the cluster's cluster-info verified against the CA pin (kind-control-plane)`,
		},
		"another name beside the image's, a verified cluster": {
			image:  "apiServerEndpoint: cp.lab:6443\ncaCertHashes: [HASH]\ntimeouts: {discovery: 1s, nodeReady: 1s}\n",
			seed:   "apiServerEndpoint: 203.0.113.7:6443\nextraHosts: [{ip: 203.0.113.7, hostnames: [cp.lab, registry.k8s.io]}]\n",
			server: "https://cp.lab:6443",
			err:    `extraHosts[0].hostnames[1]: "registry.k8s.io" is neither the host name of the image's apiServerEndpoint nor a name the image's extraHosts lists (cp.lab)`,
		},
		"the image's name, another cluster": {
			image:  "apiServerEndpoint: cp.lab:6443\ncaCertHashes: [sha256:" + strings.Repeat("0", 64) + "]\ntimeouts: {discovery: 1s}\n",
			seed:   "apiServerEndpoint: 203.0.113.7:6443\nextraHosts: [{ip: 203.0.113.7, hostnames: [cp.lab]}]\n",
			server: "https://cp.lab:6443",
			err:    "phase discovery: the cluster's CA is ",
		},
		"the name cluster-info uses, another cluster": {
			image:  "timeouts: {discovery: 1s}\n",
			seed:   "apiServerEndpoint: 192.168.150.1:6443\ncaCertHashes: [sha256:" + strings.Repeat("0", 64) + "]\nextraHosts: [{ip: 192.168.150.1, hostnames: [kind-control-plane]}]\n",
			server: "https://kind-control-plane:6443",
			err:    "phase discovery: the cluster's CA is ",
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, c.image)
			require.NoError(t, e.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("configmaps"),
				jointest.ClusterInfo(t, e.ca, c.server, jointest.Token), metav1.NamespacePublic))
			dir := t.TempDir()
			disc := filepath.Join(dir, "sr0")
			seedYAML := strings.ReplaceAll("token: "+jointest.Token+"\n"+c.seed, "HASH", e.ca.Hash())
			require.NoError(t, autounattend.WriteISOFile(disc, autounattend.Disc{Label: config.SeedLabel,
				Files: []autounattend.File{{Name: config.FileName, Data: []byte(seedYAML)}}}))
			e.opts.Paths.SeedDevices = []string{filepath.Join(dir, "sr*")}
			err := join.Run(context.Background(), e.opts)
			hosts, _ := os.ReadFile(e.paths.Hosts)
			if c.err == "" {
				require.NoError(t, err, e.log.String())
				assert.Equal(t, "127.0.0.1 localhost\n# BEGIN kubenode-joiner extraHosts\n"+c.hosts+"\n# END kubenode-joiner extraHosts\n", string(hosts))
				assert.Contains(t, e.log.String(), "node win-node-1 joined the cluster and is Ready")
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), strings.ReplaceAll(c.err, "SEED", disc+":"+config.FileName))
			assert.Contains(t, err.Error(), "nothing was written to this node")
			assert.Equal(t, "127.0.0.1 localhost\n", string(hosts), "the hosts file is untouched")
			assert.Empty(t, e.host.calls, "nothing ran")
		})
	}
}

// Discovery reaches an apiServerEndpoint only extraHosts resolve, before
// they are in the hosts file: its client dials their address.
func TestDiscoveryDialsTheExtraHostsAddress(t *testing.T) {
	e := newEnv(t, strings.Replace(goodConfig, "apiServerEndpoint: 10.0.2.2:6443", "apiServerEndpoint: kind-control-plane:6443", 1))
	var dials []func(context.Context, string, string) (net.Conn, error)
	e.opts.NewClient = func(rc *rest.Config) (kubernetes.Interface, error) {
		if rc.Host == "https://kind-control-plane:6443" {
			dials = append(dials, rc.Dial)
		}
		return e.client, nil
	}
	require.NoError(t, join.Run(context.Background(), e.opts), e.log.String())
	require.Len(t, dials, 2, "the unverified and the verified request")
	for _, dial := range dials {
		assert.NotNil(t, dial)
	}
	hosts := []corev1.HostAlias{{IP: "192.168.122.1", Hostnames: []string{"cp", "Kind-Control-Plane"}}, {IP: "10.9.9.9", Hostnames: []string{"kind-control-plane"}}}
	for in, want := range map[string]string{
		"kind-control-plane:6443": "192.168.122.1:6443",
		"cp:443":                  "192.168.122.1:443",
		"other:6443":              "other:6443",
		"10.0.2.2:6443":           "10.0.2.2:6443",
		"no-port":                 "no-port",
	} {
		assert.Equal(t, want, join.ExtraHostsAddress(hosts, in), in)
	}
}

func TestUnsignedTokenFailsAfterDiscoveryTimeout(t *testing.T) {
	e := newEnv(t, strings.Replace(goodConfig, "abcdef.0123456789abcdef", "zzzzzz.0123456789abcdef", 1))
	start := time.Now()
	err := join.Run(context.Background(), e.opts)
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Contains(t, err.Error(), "phase discovery: gave up after 1s")
	assert.Contains(t, err.Error(), "no jws-kubeconfig-zzzzzz key; the token does not exist, has expired or was deleted")
	assert.Empty(t, e.host.calls)
	_, statErr := os.Stat(e.paths.KubeletConf)
	assert.ErrorIs(t, statErr, os.ErrNotExist)
}

func TestWrongTokenSecretIsPermanent(t *testing.T) {
	e := newEnv(t, strings.Replace(goodConfig, "abcdef.0123456789abcdef", "abcdef.ffffffffffffffff", 1))
	e.opts.Interval = time.Hour // a retry would hang the test: the error must be final
	err := join.Run(context.Background(), e.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "signature for token abcdef does not verify")
}

func TestKubeadmFailureShowsItsOutputAndRemovesTheToken(t *testing.T) {
	e := newEnv(t, goodConfig)
	e.host.joinFails = true
	err := join.Run(context.Background(), e.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "phase kubeadm-join: `kubeadm join --config")
	assert.Contains(t, err.Error(), "error execution phase kubelet-start: timed out")
	assert.Contains(t, err.Error(), "run `kubeadm reset -f`, then run the joiner again")
	_, statErr := os.Stat(e.paths.KubeadmConfig)
	assert.ErrorIs(t, statErr, os.ErrNotExist)
}

func TestNodeNotReadyTimesOutWithItsConditions(t *testing.T) {
	e := newEnv(t, goodConfig)
	e.host.notReady = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"
	err := join.Run(context.Background(), e.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "phase node-ready: Node win-node-1 is not Ready after 1s (Ready=False (KubeletNotReady: container runtime network not ready")
	assert.Contains(t, err.Error(), "joiner doctor --node win-node-1")
}

// A join that fails after kubeadm has joined (the Node stays NotReady while
// the CNI pulls its images) must not leave the token behind: kubeadm's copy
// goes when kubeadm returns, and the rerun (Windows' service recovery, or
// by hand) finds the node joined, scrubs the token from the joiner's
// configuration and disables the first-boot service.
func TestJoinFailingInNodeReadyLeavesNoTokenAfterTheRerun(t *testing.T) {
	e := newEnv(t, goodConfig)
	e.host.notReady = "container runtime network not ready: cni plugin not initialized"
	err := join.Run(context.Background(), e.opts)
	require.ErrorContains(t, err, "phase node-ready:")
	_, statErr := os.Stat(e.paths.KubeadmConfig)
	assert.ErrorIs(t, statErr, os.ErrNotExist, "kubeadm's config (with the token) is removed once kubeadm returned")
	assert.NotContains(t, e.host.calls, "disable-first-boot", "a failed join leaves the service to run again")
	// Linux's first-boot unit never starts again once kubelet.conf exists:
	// the run that joined removes the token from the joiner's configuration.
	cfg, err := os.ReadFile(e.paths.Config)
	require.NoError(t, err)
	assert.NotContains(t, string(cfg), "token:", "the token goes once kubeadm join has succeeded")

	e.log.Reset()
	setReady(t, e.client, "win-node-1", corev1.ConditionTrue)
	require.NoError(t, join.Run(context.Background(), e.opts), e.log.String())
	assert.Contains(t, e.log.String(), "node win-node-1 is already a member of the cluster")
	_, statErr = os.Stat(e.paths.KubeadmConfig)
	assert.ErrorIs(t, statErr, os.ErrNotExist)
	cfg, err = os.ReadFile(e.paths.Config)
	require.NoError(t, err)
	assert.NotContains(t, string(cfg), "token:", "the token is scrubbed from the joiner's configuration")
	assert.Contains(t, string(cfg), "example.com/pool", "the rest of the config stays")
	assert.Equal(t, "disable-first-boot", e.host.calls[len(e.host.calls)-1], "the first-boot service is disabled")
}

func TestConfigFromSeedWhenTheImageHasNoToken(t *testing.T) {
	e := newEnv(t, "labels: {example.com/pool: baked}\n")
	e.opts.Paths.SeedDevices = []string{filepath.Join(t.TempDir(), "sr*")}
	seed.PollInterval = 10 * time.Millisecond
	e.opts.Overrides = config.New()
	e.opts.Overrides.Timeouts.Seed = &metav1.Duration{Duration: 30 * time.Millisecond}
	err := join.Run(context.Background(), e.opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "phase config: no join seed disc found")
}

// A seed disc that sets what only the image may set (here the kubelet the
// joiner runs as root) is refused before anything runs.
func TestSeedSettingAnImageOnlyKeyIsRefused(t *testing.T) {
	e := newEnv(t, "labels: {example.com/pool: baked}\n")
	dir := t.TempDir()
	require.NoError(t, autounattend.WriteISOFile(filepath.Join(dir, "sr0"), autounattend.Disc{Label: config.SeedLabel,
		Files: []autounattend.File{{Name: config.FileName, Data: []byte("apiServerEndpoint: 10.0.2.2:6443\ntoken: " + jointest.Token +
			"\ncaCertHashes: [" + e.ca.Hash() + "]\nkubeletPath: /tmp/evil\n")}}}))
	e.opts.Paths.SeedDevices = []string{filepath.Join(dir, "sr*")}
	err := join.Run(context.Background(), e.opts)
	require.ErrorIs(t, err, config.ErrImageOnly)
	assert.Contains(t, err.Error(), "phase config: "+filepath.Join(dir, "sr0")+":joiner.yaml: kubeletPath: a join seed disc may not set it")
	assert.Empty(t, e.host.calls, "nothing ran")
}

// A seed written as a file (cloud-init user data, the user's tooling)
// instead of a disc: the node joins with it, the image's settings stay, and
// the file, which held the token, is removed afterwards.
func TestConfigFromSeedFile(t *testing.T) {
	jointest.TrustSeedFiles(t)
	e := newEnv(t, "labels: {example.com/pool: baked}\ntimeouts: {discovery: 1s, nodeReady: 1s}\n")
	e.opts.Paths.SeedFile = filepath.Join(t.TempDir(), "joiner-seed.yaml")
	e.opts.Paths.SeedDevices = []string{filepath.Join(t.TempDir(), "sr*")}
	require.NoError(t, os.WriteFile(e.opts.Paths.SeedFile, []byte("apiServerEndpoint: 10.0.2.2:6443\ntoken: "+jointest.Token+
		"\ncaCertHashes: ["+e.ca.Hash()+"]\nnodeName: seeded-1\nlabels: {example.com/seed: file}\n"), 0o600))
	require.NoError(t, join.Run(context.Background(), e.opts), e.log.String())
	assert.Contains(t, e.log.String(), "[config] node seeded-1 joins 10.0.2.2:6443 (configuration from "+e.paths.Config+", "+e.opts.Paths.SeedFile+")")
	assert.Contains(t, e.log.String(), "[kubeadm-join] removed the join seed file "+e.opts.Paths.SeedFile+", which held the token", "as soon as kubeadm has joined")
	assert.NotContains(t, e.log.String(), "detach it from the VM", "no disc to detach")
	_, err := os.Stat(e.opts.Paths.SeedFile)
	assert.ErrorIs(t, err, os.ErrNotExist)
	n, err := e.client.CoreV1().Nodes().Get(context.Background(), "seeded-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "baked", n.Labels["example.com/pool"], "the image's labels stay")
	assert.Equal(t, "file", n.Labels["example.com/seed"])
}

// A seed file is held to a seed disc's rules.
func TestSeedFileSettingAnImageOnlyKeyIsRefused(t *testing.T) {
	jointest.TrustSeedFiles(t)
	e := newEnv(t, "labels: {example.com/pool: baked}\n")
	e.opts.Paths.SeedFile = filepath.Join(t.TempDir(), "joiner-seed.yaml")
	require.NoError(t, os.WriteFile(e.opts.Paths.SeedFile, []byte("apiServerEndpoint: 10.0.2.2:6443\ntoken: "+jointest.Token+
		"\ncaCertHashes: ["+e.ca.Hash()+"]\nkubeletPath: /tmp/evil\n"), 0o600))
	err := join.Run(context.Background(), e.opts)
	require.ErrorIs(t, err, config.ErrImageOnly)
	assert.Contains(t, err.Error(), "phase config: "+e.opts.Paths.SeedFile+": kubeletPath: a join seed disc may not set it")
	assert.Empty(t, e.host.calls, "nothing ran")
}

func TestHostsEntriesAreIdempotentAndKeepCRLF(t *testing.T) {
	entries := []corev1.HostAlias{{IP: "10.0.2.2", Hostnames: []string{"cp", "cp.lab"}}}
	in := "127.0.0.1 localhost\r\n"
	once := join.HostsWithEntries(in, entries)
	assert.Equal(t, "127.0.0.1 localhost\r\n# BEGIN kubenode-joiner extraHosts\r\n10.0.2.2 cp cp.lab\r\n# END kubenode-joiner extraHosts\r\n", once)
	assert.Equal(t, once, join.HostsWithEntries(once, entries))
	assert.Equal(t, in, join.HostsWithEntries(once, nil), "no entries: the block goes")
}

// setReady sets the Node's Ready condition, as its kubelet would.
func setReady(t *testing.T, client *fake.Clientset, name string, status corev1.ConditionStatus) {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "KubeletReady"}}
	_, err = client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// A rerun on a member (the first-boot service runs again after a failure)
// checks and finishes what the failed run left: it declares success only
// once the Node is Ready and carries its labels, and the kubelet service
// has kubeadm's flags.
func TestRerunVerifiesBeforeItDeclaresSuccess(t *testing.T) {
	t.Run("after a node-ready timeout", func(t *testing.T) {
		e := newEnv(t, goodConfig)
		e.host.notReady = "container runtime network not ready: cni plugin not initialized"
		require.ErrorContains(t, join.Run(context.Background(), e.opts), "phase node-ready:")

		// Still NotReady: the rerun fails in node-ready and leaves the service to run again.
		e.log.Reset()
		err := join.Run(context.Background(), e.opts)
		require.ErrorContains(t, err, "phase node-ready: Node win-node-1 is not Ready after 1s (Ready=False", e.log.String())
		assert.NotContains(t, e.host.calls, "disable-first-boot")

		// Ready, but its label was lost: the rerun sets it, then succeeds.
		setReady(t, e.client, "win-node-1", corev1.ConditionTrue)
		n, err := e.client.CoreV1().Nodes().Get(context.Background(), "win-node-1", metav1.GetOptions{})
		require.NoError(t, err)
		delete(n.Labels, "example.com/pool")
		_, err = e.client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
		require.NoError(t, err)
		e.log.Reset()
		require.NoError(t, join.Run(context.Background(), e.opts), e.log.String())
		n, err = e.client.CoreV1().Nodes().Get(context.Background(), "win-node-1", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "lab", n.Labels["example.com/pool"])
		assert.Contains(t, e.log.String(), "node win-node-1 is already a member of the cluster and is Ready: labels set")
		assert.Equal(t, "disable-first-boot", e.host.calls[len(e.host.calls)-1])
	})
	t.Run("after a run that died before kubelet-service", func(t *testing.T) {
		e := newEnv(t, goodConfig)
		e.host.flagsEnv = "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=npipe:////./pipe/containerd-containerd\"\n"
		e.host.restartFails = true
		require.ErrorContains(t, join.Run(context.Background(), e.opts), "phase kubelet-service:")
		require.Nil(t, e.host.applied)

		e.host.restartFails = false
		e.log.Reset()
		require.NoError(t, join.Run(context.Background(), e.opts), e.log.String())
		want := []string{"--container-runtime-endpoint=npipe:////./pipe/containerd-containerd",
			"--hostname-override=win-node-1", "--node-labels=example.com/pool=lab", "--register-with-taints=os=windows:NoSchedule", "--v=2"}
		assert.Equal(t, want, e.host.applied, "the rerun gives the kubelet service kubeadm's flags")
		assert.Contains(t, e.log.String(), "[kubelet-service] the kubelet service lacks the flags of "+e.paths.KubeadmFlags)
		assert.Contains(t, e.log.String(), "kubeadm's flags applied to the kubelet service")

		// A third run finds everything in place and changes nothing.
		before := len(e.host.calls)
		e.log.Reset()
		require.NoError(t, join.Run(context.Background(), e.opts), e.log.String())
		assert.Equal(t, []string{"disable-first-boot"}, e.host.calls[before:])
		assert.Contains(t, e.log.String(), "already a member of the cluster and is Ready: nothing changed")
	})
}

// dateClient stands for the HTTPS answers of an API server whose clock
// reads serverNow: each client it builds sends one request through the
// client's transport wrappers, as the real clientset does.
func dateClient(e *env, serverNow func() time.Time) func(*rest.Config) (kubernetes.Interface, error) {
	return func(rc *rest.Config) (kubernetes.Interface, error) {
		if rc.WrapTransport != nil {
			rt := rc.WrapTransport(roundTripFunc(func(*http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: 200, Header: http.Header{"Date": {serverNow().UTC().Format(http.TimeFormat)}}, Body: http.NoBody}, nil
			}))
			req, _ := http.NewRequest(http.MethodGet, rc.Host+"/api/v1/namespaces/kube-public/configmaps/cluster-info", nil)
			if _, err := rt.RoundTrip(req); err != nil {
				return nil, err
			}
		}
		return e.client, nil
	}
}

// The node's clock is compared with the Date header of an answer whose
// TLS was verified against the pinned CA, never with the first, unverified
// one, which anyone on the way could have sent.
func TestClockSkewReadsOnlyAVerifiedAnswer(t *testing.T) {
	verified := func(rc *rest.Config) bool { return !rc.TLSClientConfig.Insecure && len(rc.TLSClientConfig.CAData) > 0 }
	lying := func(e *env, liar func(*rest.Config) bool) func(*rest.Config) (kubernetes.Interface, error) {
		return func(rc *rest.Config) (kubernetes.Interface, error) {
			off := time.Duration(0)
			if liar(rc) {
				off = 2 * time.Hour
			}
			return dateClient(e, func() time.Time { return time.Now().Add(off) })(rc)
		}
	}
	e := newEnv(t, goodConfig)
	e.opts.NewClient = lying(e, func(rc *rest.Config) bool { return !verified(rc) })
	require.NoError(t, join.Run(context.Background(), e.opts), "the unverified answer's clock does not count:\n%s", e.log.String())

	e = newEnv(t, goodConfig)
	e.opts.NewClient = lying(e, verified)
	err := join.Run(context.Background(), e.opts)
	require.Error(t, err, "the verified answer's clock counts")
	assert.Regexp(t, `^phase discovery: this node's clock is (1h59m59s|2h0m0s) behind the API server's`, err.Error())
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The node's clock is compared with the API server's Date header during
// discovery: off by more than MaxClockSkew, the join fails there, before
// the TLS bootstrap, naming the skew.
func TestClockSkewFailsDiscoveryNamingTheSkew(t *testing.T) {
	e := newEnv(t, goodConfig)
	e.opts.NewClient = dateClient(e, func() time.Time { return time.Now().Add(2 * time.Hour) })
	err := join.Run(context.Background(), e.opts)
	require.Error(t, err)
	// The Date header has whole seconds.
	assert.Regexp(t, `^phase discovery: this node's clock is (1h59m59s|2h0m0s) behind the API server's \(node `, err.Error())
	assert.Contains(t, err.Error(), "at most 5m0s allowed")
	assert.Contains(t, err.Error(), "nothing was written to this node")
	assert.Empty(t, e.host.calls, "kubeadm never ran")

	// Within the threshold (a variable tests change) the join goes on.
	old := join.MaxClockSkew
	join.MaxClockSkew = 3 * time.Hour
	t.Cleanup(func() { join.MaxClockSkew = old })
	require.NoError(t, join.Run(context.Background(), e.opts), e.log.String())

	e = newEnv(t, goodConfig)
	e.opts.NewClient = dateClient(e, func() time.Time { return time.Now().Add(-10 * time.Minute) })
	join.MaxClockSkew = 5 * time.Minute
	err = join.Run(context.Background(), e.opts)
	require.Error(t, err)
	assert.Regexp(t, `this node's clock is (10m0s|10m1s) ahead of the API server's`, err.Error())
}
