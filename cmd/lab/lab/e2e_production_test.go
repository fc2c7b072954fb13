// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package lab_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubenode/packer-plugin-kubenode/cmd/lab/lab"
	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
	"github.com/kubenode/packer-plugin-kubenode/internal/releasemirror"
	"github.com/kubenode/packer-plugin-kubenode/post-processor/export"
)

// The newest Kubernetes and containerd releases the production example is
// proven with.
const (
	productionKubernetes = "v1.37.2"
	productionContainerd = lab.ProductionContainerd
)

// TestProductionImage is `make e2e-production`: the production example
// (examples/debian-12-cloud-node.pkr.hcl) built as a user builds it, from
// release downloads checked against their published checksums, through
// download_mirrors: kubelet, kubeadm and kubectl of Kubernetes v1.37,
// containerd 2.3's release tarball, runc and crictl, and the CNI plugins
// tarball, all served here in their upstream layout
// (scripts/release-files.sh). The bake's self-check passes with crictl
// answering over containerd's socket. Two clones boot with their join seed
// alone (no cloud-init seed): each names itself, the joiner names its Node
// after it, both join a v1.37 control plane, the cluster's CNI (the lab's
// DaemonSet; the image has cni = "none") makes them Ready, and a Job runs
// on each.
func TestProductionImage(t *testing.T) {
	harness.RequireRoot(t)
	root := harness.Root()
	bin := t.TempDir()
	k8s := harness.KubernetesRelease(t, productionKubernetes)
	p := serveProductionReleases(t, k8s)

	o := lab.Options{
		Root: root, Packer: harness.Packer(t),
		Plugin:        harness.GoBuild(t, root, ".", filepath.Join(bin, "packer-plugin-kubenode")),
		Joiner:        harness.JoinerAsReleased(t, filepath.Join(bin, "kubenode-joiner")),
		KubernetesDir: k8s, BaseDisk: harness.BaseDisk(t),
		Releases:          p.Releases,
		JoinSeedOnlyNodes: 2, ClusterCNI: true, Nodes: 2,
		ImageDir: t.TempDir(), WorkDir: filepath.Join(t.TempDir(), "work"),
	}
	// A download cache of its own: every release file comes through the
	// mirror in this run, checked against the mirror's checksum files.
	t.Setenv("PACKER_CACHE_DIR", t.TempDir())
	var log strings.Builder
	o.Out = teeWriter{testWriter{t}, &log}
	before := hostState(t)
	ctx := context.Background()
	l, err := lab.Up(ctx, o)
	require.NoError(t, err)
	closed := false
	defer func() {
		if !closed {
			l.Close()
		}
	}()
	out := log.String()

	t.Run("built from the release downloads, through the mirror", func(t *testing.T) {
		p.assertBuiltFromMirror(t, out)
	})

	var m export.Manifest
	data, err := os.ReadFile(l.Manifest)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &m))
	t.Run("manifest", func(t *testing.T) {
		require.NotNil(t, m.Baked, "%s", data)
		assert.Equal(t, productionKubernetes, m.Baked.Kubernetes)
		assert.Equal(t, "v"+productionContainerd, "v"+strings.TrimPrefix(m.Baked.Containerd, "v"), "%s", data)
		assert.Equal(t, p.Releases.CNIPlugins, m.Baked.CNIPlugins)
		assert.Equal(t, sum(t, filepath.Join(k8s, "kubelet")), m.Baked.Checksums["kubelet"])
		assert.Equal(t, sum(t, o.Joiner), m.Baked.Checksums["joiner"])
	})

	client, err := l.Client()
	require.NoError(t, err)
	require.Len(t, l.Nodes, 2)
	t.Run("seedless clones name themselves and join v1.37", func(t *testing.T) {
		names := map[string]bool{}
		machineIDs := map[string]bool{}
		for _, node := range l.Nodes {
			assert.NotEqual(t, node.VMName, node.Name, "the node's name is the clone's own, not the lab's")
			assert.Regexp(t, `^kubenode-[0-9a-f]+$`, node.Name, "the image's host name prefix and the clone's machine-id")
			n, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.True(t, ready(n), "conditions: %+v", n.Status.Conditions)
			assert.Equal(t, node.VMName, n.Labels[lab.LabVMLabel])
			assert.Equal(t, node.Name, n.Labels[corev1.LabelHostname])
			assert.Equal(t, productionKubernetes, n.Status.NodeInfo.KubeletVersion)
			assert.Equal(t, "containerd://"+productionContainerd, strings.Replace(n.Status.NodeInfo.ContainerRuntimeVersion, "://v", "://", 1))
			assert.True(t, strings.HasPrefix(n.Name, "kubenode-") && strings.HasPrefix(n.Status.NodeInfo.MachineID, strings.TrimPrefix(n.Name, "kubenode-")),
				"the host name comes from the machine-id %s", n.Status.NodeInfo.MachineID)
			names[n.Name] = true
			machineIDs[n.Status.NodeInfo.MachineID] = true
		}
		assert.Len(t, names, 2, "distinct node names")
		assert.Len(t, machineIDs, 2, "distinct machine-ids")
	})

	t.Run("the cluster's CNI, then a Job on each node", func(t *testing.T) {
		ds, err := client.AppsV1().DaemonSets(lab.CNINamespace).Get(ctx, lab.CNIName, metav1.GetOptions{})
		require.NoError(t, err)
		assert.EqualValues(t, 2, ds.Status.NumberReady)
		_, subnets, _ := net.ParseCIDR(lab.CNISubnets)
		require.Len(t, l.Jobs, 2)
		for i, r := range l.Jobs {
			node := l.Nodes[i]
			assert.Equal(t, node.Name, r.Node)
			job, err := client.BatchV1().Jobs(lab.JobNamespace).Get(ctx, r.Job, metav1.GetOptions{})
			require.NoError(t, err)
			assert.EqualValues(t, 1, job.Status.Succeeded)
			ip := net.ParseIP(r.PodIP)
			require.NotNil(t, ip, "pod IP %q", r.PodIP)
			assert.True(t, subnets.Contains(ip), "pod IP %s from the lab CNI's range", ip)
			assert.Equal(t, "kubenode-lab probe: node="+node.Name+" pod="+r.Pod+" ip="+r.PodIP, r.Output)
		}
	})

	closed = true
	require.NoError(t, l.Close())
	assert.Equal(t, before, hostState(t), "libvirt definitions, storage and processes are as before the lab")
}

// teeWriter writes to a test's log and keeps a copy.
type teeWriter struct {
	t   testWriter
	log *strings.Builder
}

func (w teeWriter) Write(p []byte) (int, error) {
	w.log.Write(p)
	return w.t.Write(p)
}

// productionReleases are the production example's releases, served in
// their upstream layout on 127.0.0.1 for one test.
type productionReleases struct {
	Releases *lab.Releases
	Crictl   string // vX.Y.Z
}

// serveProductionReleases serves the release files of Kubernetes
// productionKubernetes (its binaries in k8s), containerd
// productionContainerd with its runc, the crictl of that Kubernetes minor
// and the CNI plugins (scripts/release-files.sh packs them; they are
// cached by version).
func serveProductionReleases(t *testing.T, k8s string) productionReleases {
	t.Helper()
	v, err := releasemirror.For(productionKubernetes, productionContainerd)
	require.NoError(t, err)
	mirrors, cni := harness.ReleaseMirror(t, k8s, v)
	return productionReleases{
		Releases: &lab.Releases{Mirrors: mirrors, Containerd: productionContainerd, CNIPlugins: cni},
		Crictl:   v.Crictl,
	}
}

// assertBuiltFromMirror: the build's output (out) shows every release
// file downloaded through the mirror and the bake's self-check passing
// with crictl answering over containerd's socket.
func (p productionReleases) assertBuiltFromMirror(t *testing.T, out string) {
	t.Helper()
	for _, a := range []string{"kubelet", "kubeadm", "kubectl", "containerd", "runc", "cni-plugins", "crictl"} {
		from := ""
		for _, prefix := range p.Releases.Mirrors {
			if strings.Contains(out, a+": downloading "+prefix) {
				from = prefix
			}
		}
		assert.NotEmpty(t, from, "the bake downloaded %s from the mirror", a)
	}
	assert.Contains(t, out, "ok: containerd v"+productionContainerd)
	assert.Contains(t, out, "ok: crictl "+p.Crictl)
	assert.Contains(t, out, "ok: containerd answers crictl info")
	assert.Contains(t, out, "ok: self-check passed")
	assert.NotContains(t, out, "CHECK FAILED")
}
