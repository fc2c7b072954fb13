// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package lab

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const twoContexts = `apiVersion: v1
kind: Config
clusters:
- {name: prod, cluster: {server: "https://prod.example.com:6443"}}
- {name: lab, cluster: {server: "https://192.168.150.1:6443"}}
users: [{name: admin, user: {token: t}}]
contexts:
- {name: prod-admin, context: {cluster: prod, user: admin}}
- {name: kind-lab, context: {cluster: lab, user: admin}}
current-context: kind-lab
`

func writeKubeconfig(t *testing.T, data string) string {
	p := filepath.Join(t.TempDir(), "admin.conf")
	require.NoError(t, os.WriteFile(p, []byte(data), 0o600))
	return p
}

func TestDescribeKubeconfigNamesTheCurrentContextsCluster(t *testing.T) {
	// $KUBECONFIG names another file: only the one given counts.
	t.Setenv("KUBECONFIG", writeKubeconfig(t, strings.ReplaceAll(twoContexts, "current-context: kind-lab", "current-context: prod-admin")))
	got, err := DescribeKubeconfig(writeKubeconfig(t, twoContexts))
	require.NoError(t, err)
	assert.Equal(t, Target{Context: "kind-lab", Server: "https://192.168.150.1:6443"}, got)

	_, err = DescribeKubeconfig(writeKubeconfig(t, "current-context: [\n"))
	assert.Error(t, err)
	_, err = DescribeKubeconfig(writeKubeconfig(t, strings.ReplaceAll(twoContexts, "current-context: kind-lab", "current-context: gone")))
	assert.Error(t, err, "a current-context that does not exist")
}

func TestExportedKubeconfigIsIgnoredAndSaysSo(t *testing.T) {
	assert.Empty(t, IgnoredKubeconfig(""))
	msg := IgnoredKubeconfig("/home/u/.kube/prod")
	assert.Contains(t, msg, "KUBECONFIG=/home/u/.kube/prod is ignored")
	assert.Contains(t, msg, `make lab LAB_FLAGS="-kubeconfig /home/u/.kube/prod"`)

	// -kubeconfig takes one file: of a list, it suggests one.
	msg = IgnoredKubeconfig("/home/u/.kube/prod:/home/u/.kube/dev")
	assert.Contains(t, msg, "KUBECONFIG=/home/u/.kube/prod:/home/u/.kube/dev is ignored")
	assert.Contains(t, msg, "pass one of the 2 files it lists, the one that sets current-context (kubectl takes the first that does), such as the first: -kubeconfig /home/u/.kube/prod (")
	assert.Contains(t, msg, `make lab LAB_FLAGS="-kubeconfig /home/u/.kube/prod"`)
}

// Without -kubeconfig, Options.Kubeconfig is empty whatever $KUBECONFIG
// says; with it, a file that does not load is refused naming the flag
// before anything starts.
func TestKubeconfigThatDoesNotLoadIsRefusedNamingTheFlag(t *testing.T) {
	o := Options{Root: t.TempDir(), Joiner: "/nonexistent", KubernetesDir: t.TempDir(), SkipBuild: true,
		ImageDir: t.TempDir(), WorkDir: t.TempDir(), Kubeconfig: filepath.Join(t.TempDir(), "missing.conf")}
	err := o.defaults()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-kubeconfig "+o.Kubeconfig+": ")
}

// With -kubeconfig, the cluster stage prints the context and server it is
// about to change, and starts no control plane.
func TestClusterStageNamesTheExternalCluster(t *testing.T) {
	var out bytes.Buffer
	path := writeKubeconfig(t, twoContexts)
	l := &Lab{opts: Options{Kubeconfig: path, Nodes: 2, Out: &out}, id: "abc", began: time.Now()}
	require.NoError(t, l.cluster(context.Background()))
	assert.Equal(t, path, l.Kubeconfig)
	assert.Contains(t, out.String(), `using the external cluster of -kubeconfig `+path+`: context "kind-lab", API server https://192.168.150.1:6443`)
	assert.Contains(t, out.String(), "about to change that cluster: 2 bootstrap token(s)")
	assert.Empty(t, l.undo, "nothing was started")
}

func TestSeedChecksTheImageAgainstTheCluster(t *testing.T) {
	l := &Lab{opts: Options{Labels: map[string]string{"kubenode.io/lab": "true"}}, Kubeconfig: "/k/admin.conf", Manifest: "/img/kubenode-manifest.json"}
	n := &Node{Name: "kubenode-lab-abc-1", seedISO: "/w/seed.iso"}
	assert.Equal(t, []string{"token", "--kubeconfig", "/k/admin.conf", "--seed-iso", "/w/seed.iso", "--ttl", "2h",
		"--description", "kubenode lab node kubenode-lab-abc-1", "--node-name", "kubenode-lab-abc-1",
		"--image-manifest", "/img/kubenode-manifest.json", "--label", "kubenode.io/lab=true"}, l.tokenArgs(n, []string{"kubenode.io/lab"}))
}

// The last JoinSeedOnlyNodes nodes boot with their join seed alone and
// name themselves; the others get a cloud-init seed that names them and
// lets the lab in.
func TestJoinSeedOnlyNodesAreTheLastOnesAndNameThemselves(t *testing.T) {
	work := t.TempDir()
	l := &Lab{opts: Options{Nodes: 2, JoinSeedOnlyNodes: 1, WorkDir: work}, id: "abc", Kubeconfig: "/k/admin.conf"}
	var err error
	_, l.vms.authorized, err = newSSHKey(filepath.Join(work, "id_ed25519"))
	require.NoError(t, err)
	named, seedless := l.joinerNode(0), l.joinerNode(1)

	assert.False(t, named.JoinSeedOnly)
	args := l.tokenArgs(named, nil)
	assert.Equal(t, []string{"--node-name", "kubenode-lab-abc-1"}, args[len(args)-2:])
	discs, err := l.seedDiscs(named)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(work, "kubenode-lab-abc-1-cidata.iso"), filepath.Join(work, "kubenode-lab-abc-1-join-seed.iso")}, discs,
		"a cloud-init seed, then its join seed")

	assert.True(t, seedless.JoinSeedOnly)
	args = l.tokenArgs(seedless, nil)
	assert.NotContains(t, args, "--node-name")
	assert.Equal(t, []string{"--label", LabVMLabel + "=kubenode-lab-abc-2"}, args[len(args)-2:])
	discs, err = l.seedDiscs(seedless)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(work, "kubenode-lab-abc-2-join-seed.iso")}, discs, "no cloud-init seed")

	for seedlessNodes, want := range map[int][]bool{0: {false, false}, 2: {true, true}} {
		l.opts.JoinSeedOnlyNodes = seedlessNodes
		assert.Equal(t, want, []bool{l.joinerNode(0).JoinSeedOnly, l.joinerNode(1).JoinSeedOnly}, "JoinSeedOnlyNodes %d", seedlessNodes)
	}
}

// A build from release files passes the variables the template declares:
// the production example's cloud image, the lab templates' base disk and
// Kubernetes binaries, and the mirror and releases to both.
func TestReleasesTemplateVars(t *testing.T) {
	r := &Releases{Mirrors: map[string]string{"https://github.com": "http://127.0.0.1:1/github.com", "https://dl.k8s.io": "http://127.0.0.1:1/dl.k8s.io"},
		Containerd: "2.3.7", CNIPlugins: "v1.1.1"}
	root := filepath.Join("..", "..", "..")
	cloud, err := declaredVariables(filepath.Join(root, "examples", "debian-12-cloud-node.pkr.hcl"))
	require.NoError(t, err)
	mirror := []string{"-var", `download_mirrors={"https://dl.k8s.io" = "http://127.0.0.1:1/dl.k8s.io", "https://github.com" = "http://127.0.0.1:1/github.com"}`,
		"-var", "trust_http_mirror_checksums=true",
		"-var", "containerd_version=2.3.7", "-var", "cni_plugins_version=v1.1.1"}
	assert.Equal(t, append([]string{"-var", "cloud_image=/d/base.qcow2", "-var", "cloud_image_checksum=none"}, mirror...),
		r.templateVars(cloud, "/d/base.qcow2", "/d/k8s"))
	for _, lab := range []string{"debian-12-node.pkr.hcl", "debian-12-capi.pkr.hcl"} {
		declared, err := declaredVariables(filepath.Join(root, "examples", lab))
		require.NoError(t, err)
		assert.Equal(t, append([]string{"-var", "base_disk=/d/base.qcow2", "-var", "kubernetes_dir=/d/k8s"}, mirror...),
			r.templateVars(declared, "/d/base.qcow2", "/d/k8s"), lab)
	}
	r.NodeLabels = map[string]string{"kubenode.io/pool": "b", "kubenode.io/image": "a"}
	assert.Contains(t, r.templateVars(cloud, "/d/base.qcow2", "/d/k8s"), `node_labels={"kubenode.io/image" = "a", "kubenode.io/pool" = "b"}`)
	assert.Empty(t, r.templateVars(map[string]bool{}, "/d/base.qcow2", "/d/k8s"), "nothing the template does not declare")
}

func TestLabOptionsRefuseWhatCannotWork(t *testing.T) {
	for want, o := range map[string]Options{
		"the lab's CNI is for its own control plane":                       {ClusterCNI: true, Kubeconfig: "/k/config"},
		"a join seed alone is the joiner's":                                {JoinSeedOnlyNodes: 1, Bootstrap: BootstrapClusterAPI},
		"lab: 3 nodes with their join seed alone, of 2 nodes: want 0 to 2": {JoinSeedOnlyNodes: 3, Nodes: 2},
		"lab: -1 nodes with their join seed alone":                         {JoinSeedOnlyNodes: -1},
		"lab: -cpus 9: want 1 to 8":                                        {CPUs: 9},
	} {
		t.Run(want, func(t *testing.T) { assert.ErrorContains(t, o.defaults(), want) })
	}
}

// Under TCG a node gets 2 vCPUs while the host has 2 cores for each node,
// 1 beyond that; KVM nodes get 2.
func TestNodeCPUs(t *testing.T) {
	for _, c := range []struct {
		accel        string
		nodes, cores int
		want         int
	}{
		{"tcg", 1, 2, 2}, {"tcg", 2, 2, 1}, {"tcg", 3, 2, 1}, {"tcg", 2, 4, 2}, {"tcg", 3, 4, 1},
		{"tcg", 1, 1, 1}, {"kvm", 4, 2, 2},
	} {
		assert.Equal(t, c.want, NodeCPUs(c.accel, c.nodes, c.cores), "%s, %d nodes, %d cores", c.accel, c.nodes, c.cores)
	}
}
