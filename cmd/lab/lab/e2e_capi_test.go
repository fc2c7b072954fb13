// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package lab_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubenode/packer-plugin-kubenode/cmd/lab/lab"
	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
	"github.com/kubenode/packer-plugin-kubenode/post-processor/export"
)

// TestClusterAPI is `make e2e-capi`: an image baked with
// bootstrap = "cluster-api" (the bake's guest test's image,
// harness.BakeLinux: containerd's release tarball, exported as a zstd qcow2 and a
// KubeVirt containerDisk; taken from the cache when `make integration`
// built it from the same recipe, else built here) joins a cluster through
// the kubeadm bootstrap data Cluster API's own code renders
// (kubenode-capi-render), as a Cluster API infrastructure provider would
// deliver it: one clone from the qcow2 with a NoCloud disc, one from the
// disk inside the containerDisk (imported into a containerd of the test's
// own) with a config drive. Each Node is named by its metadata, goes
// Ready, writes Cluster API's sentinel, carries the uninitialized taint
// until the lab removes it, and runs a Job. Its negative control (a clone
// of the joiner image given the same kind of config drive does not join:
// what makes the config drive clone join is the cluster-api bake's
// datasource list) runs in TestEndToEnd, which has that image.
func TestClusterAPI(t *testing.T) {
	harness.RequireRoot(t)
	root := harness.Root()
	bin := t.TempDir()
	baked := harness.BakeLinux(t, false)
	render := harness.GoBuild(t, filepath.Join(root, "cmd", "lab", "capirender"), ".", filepath.Join(bin, "kubenode-capi-render"))
	o := lab.Options{
		Root: root, Packer: harness.Packer(t),
		Joiner:        harness.JoinerAsReleased(t, filepath.Join(bin, "kubenode-joiner")),
		KubernetesDir: baked.KubernetesDir,
		Out:           testWriter{t},
		Bootstrap:     lab.BootstrapClusterAPI, CAPIRender: render, Nodes: 2,
		ImageDir: baked.Dir, SkipBuild: true,
	}
	before := hostState(t)
	ctx := context.Background()
	manifestPath := filepath.Join(baked.Dir, export.ManifestFile)
	var m export.Manifest
	data, err := os.ReadFile(manifestPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &m))
	image := ""
	for _, out := range m.Outputs {
		if out.Format == "qcow2" {
			image = filepath.Join(baked.Dir, out.File)
		}
	}
	require.NotEmpty(t, image, "the manifest lists a qcow2 output: %s", data)

	t.Run("manifest: the cluster-api bootstrap, no joiner", func(t *testing.T) {
		require.NotNil(t, m.Baked, "%s", data)
		assert.Equal(t, lab.BootstrapClusterAPI, m.Baked.Bootstrap)
		assert.NotContains(t, m.Baked.Checksums, "joiner")
		assert.Equal(t, productionKubernetes, m.Baked.Kubernetes)
	})

	// The containerDisk as KubeVirt takes it: imported into a containerd,
	// its one file disk/<name>.qcow2 owned by 107:107, checked by qemu-img.
	// The disk taken out of it boots the config drive clone below.
	archive := ""
	for _, out := range m.Outputs {
		if out.Format == "containerdisk" {
			archive = filepath.Join(filepath.Dir(manifestPath), out.File)
		}
	}
	require.NotEmpty(t, archive, "the manifest lists a containerdisk output: %s", data)
	cd := harness.ContainerDiskFromArchive(t, archive)
	t.Run("containerDisk: imported into containerd, the disk owned by 107:107", func(t *testing.T) {
		var paths []string
		for _, e := range cd.Entries {
			paths = append(paths, e.Path)
			assert.Equal(t, [2]int{107, 107}, [2]int{e.UID, e.GID}, "%s is owned by 107:107 (KubeVirt's qemu user)", e.Path)
		}
		assert.Equal(t, []string{"disk", "disk/" + filepath.Base(image)}, paths, "one layer: disk/<name>.qcow2 alone")
		t.Logf("containerDisk %s (%s) imported into containerd: %+v", cd.Ref, cd.Digest, cd.Entries)
	})
	fromContainerDisk := cd.Disk

	o.NodeDisks = []string{"", fromContainerDisk} // node 1: NoCloud, the qcow2; node 2: ConfigDrive, the containerDisk's disk
	o.WorkDir = filepath.Join(t.TempDir(), "work")
	l, err := lab.Up(ctx, o)
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			l.Close()
		}
	})
	client, err := l.Client()
	require.NoError(t, err)
	require.Equal(t, image, l.Image)
	require.Len(t, l.Nodes, 2)

	t.Run("joined by Cluster API's bootstrap data, named by their metadata", func(t *testing.T) {
		want := []string{lab.DatasourceNoCloud, lab.DatasourceConfigDrive}
		for i, node := range l.Nodes {
			assert.Equal(t, want[i], node.Datasource)
			n, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
			require.NoError(t, err, "the Node is named by its %s metadata's host name", node.Datasource)
			assert.True(t, ready(n), "conditions: %+v", n.Status.Conditions)
			assert.Equal(t, productionKubernetes, n.Status.NodeInfo.KubeletVersion)
			hostname, err := node.Guest(ctx, "hostname")
			require.NoError(t, err)
			assert.Equal(t, node.Name, strings.TrimSpace(hostname))
			assert.True(t, node.UninitializedTaintRemoved, "node %s carried %s until the lab removed it", node.Name, lab.UninitializedTaint)
			for _, taint := range n.Spec.Taints {
				assert.NotEqual(t, lab.UninitializedTaint, taint.Key)
			}

			got, err := node.Sentinel(ctx, time.Minute)
			require.NoError(t, err)
			assert.Equal(t, "success", got, "Cluster API's KubeVirt provider's check, over SSH")

			status := node.FirstBoot // read by the lab's workload stage, once cloud-init had finished
			assert.Contains(t, status, "status: done", "node %s: %s", node.Name, status)
			assert.Contains(t, status, "DataSource"+node.Datasource, "cloud-init took the bootstrap data from the %s disc", node.Datasource)
			assertNoCloudInitErrors(t, status)
			t.Logf("node %s: cloud-init status --long:\n%s", node.Name, status)

			out, err := node.Guest(ctx, "systemctl list-unit-files 'kubenode-joiner*' --no-legend | wc -l; command -v joiner kubenode-joiner || true; ls /etc/kubenode 2>/dev/null || true")
			require.NoError(t, err)
			assert.Equal(t, "0", strings.TrimSpace(out), "no joiner unit, binary or configuration on node %s", node.Name)
			joinCmd, err := node.Guest(ctx, "grep -c 'kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml' /var/lib/cloud/instance/scripts/runcmd")
			assert.NoError(t, err)
			assert.Equal(t, "1", strings.TrimSpace(joinCmd), "the runcmd Cluster API's kubeadm bootstrap provider writes")
		}
		table, err := l.Kubectl(ctx, "get", "nodes", "-o", "wide")
		require.NoError(t, err)
		t.Logf("kubectl get nodes -o wide:\n%s", table)
	})

	t.Run("a Job on each node once the taint is gone", func(t *testing.T) {
		require.Len(t, l.Jobs, 2)
		for i, r := range l.Jobs {
			node := l.Nodes[i]
			assert.Equal(t, node.Name, r.Node)
			pod, err := client.CoreV1().Pods(lab.JobNamespace).Get(ctx, r.Pod, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, node.Name, pod.Spec.NodeName)
			_, subnet, err := net.ParseCIDR(fmt.Sprintf("10.85.%d.0/24", i+1))
			require.NoError(t, err)
			assert.True(t, subnet.Contains(net.ParseIP(pod.Status.PodIP)), "pod IP %s from node %d's own subnet %s (the bootstrap data's network config)", pod.Status.PodIP, i+1, subnet)
			assert.Equal(t, fmt.Sprintf("kubenode-lab probe: node=%s pod=%s ip=%s", node.Name, pod.Name, pod.Status.PodIP), r.Output)
		}
	})

	require.NoError(t, l.Close())
	closed = true
	assertTornDown(t, o.WorkDir, before)
	t.Logf("cluster-api figures: image build (qcow2 + containerDisk; 0s: the bake's guest test built it) %s; boot → Ready: %s (NoCloud, qcow2) %s, %s (ConfigDrive, containerDisk) %s",
		baked.Took.Round(time.Second), l.Nodes[0].Name, l.Nodes[0].BootToReady.Round(100*time.Millisecond),
		l.Nodes[1].Name, l.Nodes[1].BootToReady.Round(100*time.Millisecond))
}
