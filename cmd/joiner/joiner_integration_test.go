// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build integration

package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/kubenode/packer-plugin-kubenode/internal/localcluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// These run the joiner binary against a real control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler on 127.0.0.1) and
// join THIS host as a node with the real kubeadm, kubelet and containerd.

const kubeletConf = "/etc/kubernetes/kubelet.conf"

type cluster struct {
	t      *testing.T
	joiner string
	cp     *localcluster.ControlPlane
	node   *localcluster.Node
	bin    string
	dir    string
}

func newCluster(t *testing.T) *cluster {
	harness.RequireRoot(t)
	bin := harness.Kubernetes(t)
	dir := t.TempDir()
	joiner := harness.JoinerAsReleased(t, filepath.Join(dir, "joiner"))
	cp := harness.ControlPlaneT(t, localcluster.ControlPlaneOptions{BinDir: bin, Dir: filepath.Join(dir, "cp")})
	node := harness.NodeT(t, localcluster.NodeOptions{BinDir: bin, Dir: filepath.Join(dir, "node")})
	return &cluster{t: t, joiner: joiner, cp: cp, node: node, bin: bin, dir: dir}
}

// run runs the joiner with the node's environment (kubeadm, kubelet and the
// systemctl stand-in on PATH).
func (c *cluster) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.joiner, args...)
	cmd.Env = c.node.Env()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	c.t.Logf("joiner %s:\n%s", strings.Join(args, " "), out.String())
	return out.String(), err
}

func (c *cluster) kubectl(args ...string) string {
	cmd := exec.Command(filepath.Join(c.bin, "kubectl"), append([]string{"--kubeconfig", c.cp.AdminKubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(c.t, err, "kubectl %v: %s", args, out)
	return string(out)
}

// token makes a join configuration for this host with `joiner token`.
func (c *cluster) token(name string, extra ...string) string {
	path := filepath.Join(c.dir, name)
	args := append([]string{"token", "--kubeconfig", c.cp.AdminKubeconfig, "--output", path,
		"--node-name", nodeName, "--cri-socket", c.node.CRISocket(),
		"--label", "example.com/pool=lab", "--label", "kubenode.io/image=debian-12",
		"--taint", "example.com/dedicated=kubenode:NoSchedule",
		"--discovery-timeout", "2m", "--node-ready-timeout", "2m"}, extra...)
	for _, check := range localcluster.IgnoredPreflightErrors {
		args = append(args, "--ignore-preflight-errors", check)
	}
	_, err := c.run(context.Background(), args...)
	require.NoError(c.t, err)
	return path
}

const nodeName = "kubenode-test"

func noKubeletConf(t *testing.T) {
	_, err := os.Stat(kubeletConf)
	assert.ErrorIs(t, err, os.ErrNotExist, "no credential may be written")
	_, err = os.Stat("/etc/kubernetes/bootstrap-kubelet.conf")
	assert.ErrorIs(t, err, os.ErrNotExist, "no credential may be written")
}

func TestJoinRealControlPlane(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()

	t.Run("doctor reports the missing Windows pieces on a bare cluster", func(t *testing.T) {
		out, err := c.run(ctx, "doctor", "--kubeconfig", c.cp.AdminKubeconfig, "--os", "windows", "--node", nodeName)
		require.Error(t, err, "some checks fail")
		assert.Contains(t, out, "[ok  ] cluster-info: present")
		assert.Contains(t, out, "[ok  ] bootstrap RBAC: node CSRs are auto-approved")
		assert.Contains(t, out, "[ok  ] kubeadm: kube-system/kubeadm-config present")
		assert.Contains(t, out, "[ok  ] scheduler: Lease kube-system/kube-scheduler held by")
		assert.Contains(t, out, "[FAIL] kube-proxy (Windows): no kube-proxy DaemonSet selects kubernetes.io/os=windows")
		assert.Contains(t, out, "[FAIL] CNI (Windows): no flannel or Calico found")
		assert.Contains(t, out, "[FAIL] node "+nodeName+": not registered")
	})

	// The documentation's commands, run as written but for the reader's
	// own paths, names and addresses (internal/journeys).
	//
	// docs/lab-windows.md step 6 asks a kind cluster, whose cluster-info
	// names https://kind-control-plane:6443 (the name the Windows node
	// gets a hosts entry for). A second control plane that gives its
	// nodes that URL, as kind's does, stands in for it.
	t.Run("docs/lab-windows.md step 6, against a control plane whose cluster-info names kind-control-plane", func(t *testing.T) {
		const kindServer = "https://kind-control-plane:6443"
		kind := harness.ControlPlaneT(t, localcluster.ControlPlaneOptions{BinDir: c.bin, Dir: filepath.Join(c.dir, "kind"), ServerURL: kindServer})

		out, err := harness.RunJourney(t, harness.Journey{Page: "docs/lab-windows.md", ID: "doctor", Subs: []string{
			"dist/kubenode-joiner", c.joiner,
			"kind.kubeconfig", kind.AdminKubeconfig,
		}})
		require.Error(t, err, "without Calico and kube-proxy for Windows some checks fail")
		assert.Contains(t, out, "[ok  ] cluster-info: present, names "+kindServer)
		assert.Contains(t, out, "[FAIL] kube-proxy (Windows): no kube-proxy DaemonSet selects kubernetes.io/os=windows")
		assert.Contains(t, out, "[FAIL] CNI (Windows): no flannel or Calico found")

		iso := filepath.Join(c.dir, "win-node-1-join.iso")
		_, err = harness.RunJourney(t, harness.Journey{Page: "docs/lab-windows.md", ID: "seed", Subs: []string{
			"dist/kubenode-joiner", c.joiner,
			"kind.kubeconfig", kind.AdminKubeconfig,
			"192.168.150.1:6443", kind.Endpoint,
			"192.168.150.1", "127.0.0.1",
			"win-node-1-join.iso", iso,
		}})
		require.NoError(t, err)
		cfg := seedConfig(t, iso)
		assert.Equal(t, kind.Endpoint, cfg.APIServerEndpoint)
		assert.Equal(t, "win-node-1", cfg.NodeName)
		assert.Equal(t, "windows", cfg.Labels["kubenode.io/lab"])
		assert.Equal(t, []corev1.HostAlias{{IP: "127.0.0.1", Hostnames: []string{"kind-control-plane"}}}, cfg.ExtraHosts)
		if assert.NotNil(t, cfg.Timeouts.NodeReady) {
			assert.Equal(t, 30*time.Minute, cfg.Timeouts.NodeReady.Duration)
		}
		assert.NotEmpty(t, cfg.Token)
		assert.NotEmpty(t, cfg.CACertHashes)
		// The clone's joiner takes the hosts entry once discovery has
		// verified cluster-info against the CA pin.
		require.NoError(t, cfg.CheckSeedHostnames(kindServer))
	})

	t.Run("docs/joiner.md: a token and a seed disc for one node", func(t *testing.T) {
		for id, want := range map[string]map[string]string{"example": nil, "token-one": {"example.com/pool": "lab"}} {
			iso := filepath.Join(c.dir, id+"-join-seed.iso")
			_, err := harness.RunJourney(t, harness.Journey{Page: "docs/joiner.md", ID: id, Subs: []string{
				"dist/kubenode-joiner", c.joiner,
				"admin.conf", c.cp.AdminKubeconfig,
				"join-seed.iso", iso,
			}})
			require.NoError(t, err)
			cfg := seedConfig(t, iso)
			assert.Equal(t, "10.0.2.2:6443", cfg.APIServerEndpoint, id)
			for k, v := range want {
				assert.Equal(t, v, cfg.Labels[k], id)
			}
		}
	})

	t.Run("docs/joiner.md: three nodes checked against the image, then a token deleted", func(t *testing.T) {
		var version struct {
			ServerVersion struct{ GitVersion string } `json:"serverVersion"`
		}
		require.NoError(t, json.Unmarshal([]byte(c.kubectl("version", "-o", "json")), &version))
		// What kubenode-export writes for an image baked with the control
		// plane's Kubernetes release (only these keys are read).
		manifest := filepath.Join(c.dir, "kubenode-manifest.json")
		require.NoError(t, os.WriteFile(manifest, []byte(`{"schema_version":2,"os":{"family":"windows"},"baked":{"kubernetes":"`+version.ServerVersion.GitVersion+`"}}`), 0o644))
		seeds := filepath.Join(c.dir, "seeds")
		out, err := harness.RunJourney(t, harness.Journey{Page: "docs/joiner.md", ID: "token-many", Subs: []string{
			"dist/kubenode-joiner", c.joiner,
			"admin.conf", c.cp.AdminKubeconfig,
			"output/kubenode-manifest.json", manifest,
			"seeds", seeds,
		}})
		require.NoError(t, err)
		for _, n := range []string{"win-1", "win-2", "win-3"} {
			cfg := seedConfig(t, filepath.Join(seeds, n+".iso"))
			assert.Equal(t, n, cfg.NodeName)
			assert.Equal(t, "lab", cfg.Labels["example.com/pool"])
		}
		m := regexp.MustCompile(`created bootstrap token ([a-z0-9]{6})\b`).FindStringSubmatch(out)
		require.NotNil(t, m, "joiner token prints the ID of each token it makes")

		_, err = harness.RunJourney(t, harness.Journey{Page: "docs/joiner.md", ID: "token-delete", Subs: []string{"<id>", m[1]},
			Env: append(c.node.Env(), "KUBECONFIG="+c.cp.AdminKubeconfig)})
		require.NoError(t, err)
		assert.NotContains(t, c.kubectl("-n", "kube-system", "get", "secrets", "-o", "name"), "bootstrap-token-"+m[1])
	})

	t.Run("a wrong CA hash is refused before any credential is written", func(t *testing.T) {
		path := c.token("wrong-ca.yaml")
		cfg := config.New()
		require.NoError(t, cfg.MergeFile(path))
		cfg.CACertHashes = []string{"sha256:" + strings.Repeat("ab", 32)}
		require.NoError(t, cfg.WriteFile(path))
		out, err := c.run(ctx, "join", "--config", path, "--log-file", filepath.Join(c.dir, "wrong-ca.log"))
		require.Error(t, err)
		assert.Contains(t, out, "phase discovery: the cluster's CA is sha256:")
		assert.Contains(t, out, "which is not in caCertHashes")
		assert.NotContains(t, out, "[kubeadm-join]")
		noKubeletConf(t)
	})

	t.Run("a deleted token fails clearly and leaves no kubelet.conf", func(t *testing.T) {
		path := c.token("revoked.yaml")
		cfg := config.New()
		require.NoError(t, cfg.MergeFile(path))
		id, _, _ := strings.Cut(cfg.Token, ".")
		c.kubectl("-n", "kube-system", "delete", "secret", "bootstrap-token-"+id)
		// The bootstrapsigner drops the token's signature from cluster-info.
		require.Eventually(t, func() bool {
			return !strings.Contains(c.kubectl("-n", "kube-public", "get", "configmap", "cluster-info", "-o", "json"), "jws-kubeconfig-"+id)
		}, time.Minute, time.Second)
		out, err := c.run(ctx, "join", "--config", path, "--discovery-timeout", "10s", "--log-file", filepath.Join(c.dir, "revoked.log"))
		require.Error(t, err)
		assert.Contains(t, out, "phase discovery: gave up after 10s")
		assert.Contains(t, out, "no jws-kubeconfig-"+id+" key; the token does not exist, has expired or was deleted")
		noKubeletConf(t)
	})

	path := c.token("join.yaml")
	t.Run("the joiner waits for an API server that starts 20 s late, then joins: Node Ready with labels and taints", func(t *testing.T) {
		require.NoError(t, c.cp.StopAPIServer())
		done := make(chan error, 1)
		var out string
		start := time.Now()
		go func() {
			var err error
			out, err = c.run(ctx, "join", "--config", path, "--log-file", filepath.Join(c.dir, "join.log"))
			done <- err
		}()
		select {
		case err := <-done:
			t.Fatalf("the joiner ended while the API server was down: %v", err)
		case <-time.After(20 * time.Second):
		}
		// The control plane comes up late as a whole: its controller
		// manager, which signs the kubelet's certificate, starts with it.
		require.NoError(t, c.cp.StartAPIServer(ctx))
		require.NoError(t, c.cp.RestartControllerManager())
		require.NoError(t, <-done)
		t.Logf("join with the API server 20 s late: %s", time.Since(start).Round(100*time.Millisecond))
		assert.Contains(t, out, "node "+nodeName+" joined the cluster and is Ready")

		var node corev1.Node
		require.NoError(t, json.Unmarshal([]byte(c.kubectl("get", "node", nodeName, "-o", "json")), &node))
		assert.Equal(t, "lab", node.Labels["example.com/pool"])
		assert.Equal(t, "debian-12", node.Labels["kubenode.io/image"])
		assert.Contains(t, node.Spec.Taints, corev1.Taint{Key: "example.com/dedicated", Value: "kubenode", Effect: corev1.TaintEffectNoSchedule})
		ready := false
		for _, cond := range node.Status.Conditions {
			ready = ready || cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue
		}
		assert.True(t, ready, "Node Ready")

		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.NotContains(t, string(data), "token:", "the token is removed from the config file")
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		_, err = os.Stat(config.DefaultPaths().KubeadmConfig)
		assert.ErrorIs(t, err, os.ErrNotExist, "kubeadm's config with the token is removed")
	})

	t.Run("a second join is a no-op", func(t *testing.T) {
		before, err := os.Stat(kubeletConf)
		require.NoError(t, err)
		out, err := c.run(ctx, "join", "--config", path, "--log-file", filepath.Join(c.dir, "again.log"))
		require.NoError(t, err)
		assert.Contains(t, out, "node "+nodeName+" is already a member of the cluster and is Ready: nothing changed")
		assert.NotContains(t, out, "[kubeadm-join]")
		after, err := os.Stat(kubeletConf)
		require.NoError(t, err)
		assert.Equal(t, before.ModTime(), after.ModTime())
	})

	t.Run("doctor passes a Linux node, on the cluster's own CNI and with a DaemonSet named cilium", func(t *testing.T) {
		// docs/joiner.md's and docs/troubleshooting.md's command, as written.
		doctor := func(page, name string) string {
			out, err := harness.RunJourney(t, harness.Journey{Page: page, ID: "doctor", Subs: []string{
				"dist/kubenode-joiner", c.joiner,
				"admin.conf", c.cp.AdminKubeconfig,
				name, nodeName,
			}})
			require.NoError(t, err, "doctor exits 0 on a healthy cluster")
			assert.Contains(t, out, "[ok  ] API server: answers, version v")
			assert.Contains(t, out, "[ok  ] cluster-info: present")
			assert.Contains(t, out, "[ok  ] node "+nodeName+": Ready")
			assert.NotContains(t, out, "[FAIL]")
			assert.NotContains(t, out, "Windows", "no Windows checks for a Linux node")
			return out
		}
		// The harness's CNI is a bridge configuration on this host, no
		// DaemonSet: the Ready node is what shows it.
		assert.Contains(t, doctor("docs/joiner.md", "<name>"), "[ok  ] CNI (Linux): Linux nodes Ready, so their pod network is: "+nodeName)

		// A DaemonSet shaped like Cilium's agent. Its node selector
		// matches no node, so it runs no Pods.
		ds := filepath.Join(c.dir, "cilium.yaml")
		require.NoError(t, os.WriteFile(ds, []byte(ciliumDaemonSet), 0o600))
		c.kubectl("create", "-f", ds)
		t.Cleanup(func() { c.kubectl("-n", "kube-system", "delete", "daemonset", "cilium", "--ignore-not-found") })
		out := doctor("docs/troubleshooting.md", "<node name>")
		assert.Contains(t, out, "[ok  ] CNI (Linux): DaemonSets that write the nodes' CNI configuration (they mount the host's /etc/cni/net.d): kube-system/cilium")
		assert.NotContains(t, out, "flannel or Calico")
		c.kubectl("-n", "kube-system", "delete", "daemonset", "cilium")
	})

	// The Node of a join that fails late (no pod network yet, as while a
	// CNI pulls its images) stays NotReady; the token must not outlive it.
	t.Run("a join whose Node never gets Ready leaves no token on disk", func(t *testing.T) {
		c.reset(t)
		// Without the harness's bridge config, containerd reports the pod
		// network not ready and so does the kubelet.
		aside := filepath.Join(c.dir, filepath.Base(localClusterCNIConf))
		require.NoError(t, os.Rename(localClusterCNIConf, aside))
		t.Cleanup(func() { require.NoError(t, os.Rename(aside, localClusterCNIConf)) })
		path := c.token("not-ready.yaml")

		out, err := c.run(ctx, "join", "--config", path, "--node-ready-timeout", "30s", "--log-file", filepath.Join(c.dir, "not-ready.log"))
		require.Error(t, err)
		assert.Contains(t, out, "phase node-ready: Node "+nodeName+" is not Ready after 30s")
		_, err = os.Stat(config.DefaultPaths().KubeadmConfig)
		assert.ErrorIs(t, err, os.ErrNotExist, "kubeadm's config with the token is removed once kubeadm returned")
		// The systemd unit never starts again once kubelet.conf exists, so
		// the failed run itself must have removed the token.
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.NotContains(t, string(data), "token:", "the token is removed from the config file by the run that joined")
		assert.Contains(t, out, "[kubeadm-join] removed the token from "+path)

		// The rerun finds the node joined, but declares no success while it is NotReady.
		out, err = c.run(ctx, "join", "--config", path, "--node-ready-timeout", "10s", "--log-file", filepath.Join(c.dir, "not-ready-again.log"))
		require.Error(t, err, "the rerun checks Ready")
		assert.Contains(t, out, "phase node-ready: Node "+nodeName+" is not Ready after 10s")
		data, err = os.ReadFile(path)
		require.NoError(t, err)
		assert.NotContains(t, string(data), "token:", "the token is removed from the config file")
		_, err = os.Stat(config.DefaultPaths().KubeadmConfig)
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
}

// ciliumDaemonSet is Cilium's agent as doctor sees it: a host-network
// DaemonSet named cilium in kube-system for Linux nodes, mounting the
// host's /etc/cni/net.d.
const ciliumDaemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: cilium, namespace: kube-system, labels: {k8s-app: cilium}}
spec:
  selector: {matchLabels: {k8s-app: cilium}}
  template:
    metadata: {labels: {k8s-app: cilium}}
    spec:
      hostNetwork: true
      nodeSelector: {kubernetes.io/os: linux, kubenode.io/doctor-test: no-such-node}
      containers: [{name: cilium-agent, image: registry.k8s.io/pause:3.10}]
      volumes: [{name: etc-cni-netd, hostPath: {path: /etc/cni/net.d, type: DirectoryOrCreate}}]
`

// seedConfig reads the join configuration on the seed disc at path.
func seedConfig(t *testing.T, path string) *config.Config {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	data, err := autounattend.ReadISOFile(f, config.FileName, config.MaxFileSize)
	require.NoError(t, err, "%s holds %s", path, config.FileName)
	cfg := config.New()
	require.NoError(t, cfg.MergeSeed(path, data), "the joiner takes the seed")
	return cfg
}

// localClusterCNIConf is the bridge CNI config localcluster.PrepareNode writes.
const localClusterCNIConf = "/etc/cni/net.d/10-kubenode-harness.conflist"

// reset undoes the join of this host (as the harness's Teardown does) and
// deletes its Node, so that the host can join again.
func (c *cluster) reset(t *testing.T) {
	cmd := exec.Command(filepath.Join(c.bin, "kubeadm"), "reset", "-f", "--cri-socket", c.node.CRISocket(), "--skip-phases=remove-etcd-member")
	cmd.Env = c.node.Env()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "kubeadm reset: %s", out)
	c.kubectl("delete", "node", nodeName, "--ignore-not-found")
	noKubeletConf(t)
}
