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
// bootstrap = "cluster-api" (examples/debian-12-capi.pkr.hcl, exported as
// a zstd qcow2 and a KubeVirt containerDisk) joins a cluster through the
// kubeadm bootstrap data Cluster API's own code renders
// (kubenode-capi-render), as a Cluster API infrastructure provider would
// deliver it: one clone from the qcow2 with a NoCloud disc, one from the
// disk inside the containerDisk (imported into a containerd of the test's
// own) with a config drive. Each Node is named by its metadata, goes
// Ready, writes Cluster API's sentinel, carries the uninitialized taint
// until the lab removes it, and runs a Job. The negative control: the
// lab's joiner image, given the same kind of config drive, must not join
// in the time the Cluster API image took: what makes the config drive
// clone join is the cluster-api bake's datasource list.
func TestClusterAPI(t *testing.T) {
	harness.RequireRoot(t)
	root := harness.Root()
	bin := t.TempDir()
	k8s := harness.KubernetesRelease(t, productionKubernetes)
	base := lab.Options{
		Root: root, Packer: harness.Packer(t),
		Plugin:        goBuild(t, filepath.Join(bin, "packer-plugin-kubenode"), "."),
		Joiner:        goBuild(t, filepath.Join(bin, "kubenode-joiner"), "./cmd/joiner"),
		KubernetesDir: k8s, BaseDisk: harness.BaseDisk(t),
		Out: testWriter{t},
	}
	render := goBuildIn(t, filepath.Join(bin, "kubenode-capi-render"), filepath.Join(root, "cmd", "lab", "capirender"), ".")
	// The negative control's image first: a cached one when TestEndToEnd
	// ran with the same recipe, else built here.
	joiner := base
	joiner.Releases = serveProductionReleases(t, k8s).Releases
	joiner.Releases.NodeLabels = map[string]string{"kubenode.io/image": "debian-12-cloud-node"}
	joinerImage := qcow2Of(t, cachedLabImage(t, joiner))

	before := hostState(t)
	ctx := context.Background()
	o := base
	o.Bootstrap, o.CAPIRender, o.Nodes = lab.BootstrapClusterAPI, render, 2
	o.ImageDir = t.TempDir()
	o.WorkDir = filepath.Join(t.TempDir(), "build-work")
	began := time.Now()
	image, manifestPath, err := lab.BuildImage(ctx, o)
	require.NoError(t, err)
	built := time.Since(began)
	var m export.Manifest
	data, err := os.ReadFile(manifestPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &m))

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

	o.SkipBuild = true
	o.NodeDisks = []string{"", fromContainerDisk} // node 1: NoCloud, the qcow2; node 2: ConfigDrive, the containerDisk's disk
	o.WorkDir = filepath.Join(t.TempDir(), "work")
	l, err := lab.Start(ctx, o)
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			l.Close()
		}
	})
	// The negative control boots beside them: the lab's joiner image, given
	// the same kind of config drive. Its cloud-init keeps the base disk's
	// datasource_list (NoCloud, None): only bootstrap = "cluster-api" lists
	// ConfigDrive, so the bootstrap data must leave it alone. Nodes that
	// join are checked after Finish.
	known := map[string]bool{}
	client, err := l.Client()
	require.NoError(t, err)
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, n := range nodes.Items {
		known[n.Name] = true
	}
	neg, err := l.BootClusterAPINode(ctx, joinerImage, lab.DatasourceConfigDrive)
	require.NoError(t, err)
	negStarted := time.Now()
	require.NoError(t, l.Finish(ctx))
	require.Equal(t, image, l.Image)
	require.Len(t, l.Nodes, 2)
	for _, n := range l.Nodes {
		known[n.Name] = true
	}

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

			status, err := node.CloudInit(ctx, 2*time.Minute)
			require.NoError(t, err)
			assert.Contains(t, status, "status: done")
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

	// It gets as long as the slower Cluster API clone took from its start
	// to Ready, counted from its own start.
	t.Run("negative control: the joiner image does not join from a config drive", func(t *testing.T) {
		wait := max(l.Nodes[0].BootToReady, l.Nodes[1].BootToReady, 2*time.Minute)
		for {
			nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			for _, n := range nodes.Items {
				require.True(t, known[n.Name], "node %s joined: the joiner image took a config drive's bootstrap data", n.Name)
			}
			if time.Since(negStarted) > wait {
				break
			}
			time.Sleep(5 * time.Second)
		}
		serial, err := os.ReadFile(neg.SerialLog)
		require.NoError(t, err)
		assert.Contains(t, string(serial), "login:", "the VM booted to a login prompt all the same")
		t.Logf("negative control: %s (the lab's joiner image, config drive) booted and had not joined %s after its start; its serial console ends:\n%s",
			neg.Name, time.Since(negStarted).Round(time.Second), tail(string(serial), 15))
	})

	require.NoError(t, l.Close())
	closed = true
	assertTornDown(t, o.WorkDir, before)
	t.Logf("cluster-api figures: image build (qcow2 + containerDisk) %s; boot → Ready: %s (NoCloud, qcow2) %s, %s (ConfigDrive, containerDisk) %s",
		built.Round(time.Second), l.Nodes[0].Name, l.Nodes[0].BootToReady.Round(100*time.Millisecond),
		l.Nodes[1].Name, l.Nodes[1].BootToReady.Round(100*time.Millisecond))
}

// qcow2Of is the qcow2 image of an image directory, found through its manifest.
func qcow2Of(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, export.ManifestFile))
	require.NoError(t, err)
	var m export.Manifest
	require.NoError(t, json.Unmarshal(data, &m))
	for _, out := range m.Outputs {
		if out.Format == "qcow2" {
			return filepath.Join(dir, out.File)
		}
	}
	t.Fatalf("%s lists no qcow2 output", dir)
	return ""
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
