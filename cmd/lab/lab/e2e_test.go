// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package lab_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubenode/packer-plugin-kubenode/cmd/lab/lab"
	"github.com/kubenode/packer-plugin-kubenode/internal/attest/attesttest"
	"github.com/kubenode/packer-plugin-kubenode/internal/filehash"
	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
	"github.com/kubenode/packer-plugin-kubenode/internal/labimages"
	"github.com/kubenode/packer-plugin-kubenode/post-processor/export"
)

// TestEndToEnd is `make e2e`: the lab's chain with assertions, on the
// production example. The real packer builds
// examples/debian-12-cloud-node.pkr.hcl (kubenode-libvirt under TCG →
// kubenode-bake → kubenode-export) the way a user builds it: Kubernetes
// v1.37's kubelet, kubeadm and kubectl, containerd 2.3's release tarball,
// runc, crictl and the CNI plugins downloaded through download_mirrors
// from their upstream layout served here, each checked against its
// published checksum format; cni = "none", the build account locked,
// generalized. Its input is the test base disk networked as a cloud image
// is (scripts/base-disk.sh netplan): netplan on systemd-networkd, where
// cloud-init's fallback matches the build VM's NIC by MAC address. A v1.37
// control plane starts on 127.0.0.1 with the lab's CNI DaemonSet (the
// cluster's CNI), `joiner token` makes the seeds, two clones of the
// exported image boot under libvirt, each with a MAC of its own, and
// their first-boot joiner joins them: the first with a cloud-init seed
// that names it and lets the test in over SSH, the second with its join
// seed alone, as a clone a user's tooling hands out: no datasource, so
// cloud-init stays disabled and nothing but what generalize left gives it
// a network. Then: the image and manifest are right, the Nodes are Ready
// with the labels asked for (one baked into the image, one from the seed),
// each its own machine, a Job runs on each node, the seedless clone's
// network came from the clone netplan; on the clone with SSH, the
// joiner's service ran once and disabled itself, and after a reboot it
// does not run again while the node comes back Ready. Beside those checks
// runs the negative control of TestClusterAPI: a clone of this joiner
// image given Cluster API's kubeadm bootstrap data on a config drive must
// leave it alone. Finally the teardown leaves nothing behind.
func TestEndToEnd(t *testing.T) {
	harness.RequireRoot(t)
	root := harness.Root()
	bin := t.TempDir()
	plugin := harness.GoBuild(t, root, ".", filepath.Join(bin, "packer-plugin-kubenode"))
	joiner := harness.JoinerAsReleased(t, filepath.Join(bin, "kubenode-joiner"))
	render := harness.GoBuild(t, filepath.Join(root, "cmd", "lab", "capirender"), ".", filepath.Join(bin, "kubenode-capi-render"))
	k8s := harness.KubernetesRelease(t, productionKubernetes)
	p := serveProductionReleases(t, k8s)
	p.Releases.NodeLabels = map[string]string{"kubenode.io/image": "debian-12-cloud-node"}
	images := t.TempDir()
	work := filepath.Join(t.TempDir(), "work")

	labels := map[string]string{"kubenode.io/lab": "e2e"}
	var log strings.Builder
	opts := lab.Options{
		Root: root, Packer: harness.Packer(t), Plugin: plugin, Joiner: joiner,
		KubernetesDir: k8s, BaseDisk: harness.BaseDiskNetplan(t),
		Releases: p.Releases, ClusterCNI: true, CAPIRender: render,
		ImageDir: images, WorkDir: work, Labels: labels, Nodes: 2, JoinSeedOnlyNodes: 1,
		Out: teeWriter{testWriter{t}, &log},
	}
	// A download cache of its own: every release file comes through the
	// mirror in this run.
	t.Setenv("PACKER_CACHE_DIR", t.TempDir())
	before := hostState(t)
	began := time.Now()
	l, err := lab.Up(context.Background(), opts)
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			l.Close()
		}
	})
	t.Logf("build → boot → join → Ready: %s", time.Since(began).Round(time.Second))
	ctx := context.Background()

	// The negative control boots now, beside the checks and the reboot
	// below: a clone of this joiner image, given Cluster API's kubeadm
	// bootstrap data on a config drive, as TestClusterAPI's config drive
	// clone is. Its cloud-init keeps the base disk's datasource_list
	// (NoCloud, OpenStack, None): only bootstrap = "cluster-api" lists
	// ConfigDrive, so the clone must leave the drive alone. cloud-init reads a
	// datasource's host name and user data together, and sets the host
	// name before the login prompt: a prompt without the drive's host name
	// shows the data was not taken, and its runcmd (kubeadm join) will not
	// run. The clone is powered off there.
	neg, err := l.BootClusterAPINode(ctx, l.Image, lab.DatasourceConfigDrive)
	require.NoError(t, err)
	negPrompt := make(chan string, 1)
	negStarted := time.Now()
	var negAfter time.Duration
	go func() {
		prompt := regexp.MustCompile(`(?m)^(\S+) login:`)
		for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
			serial, _ := os.ReadFile(neg.SerialLog)
			if m := prompt.FindSubmatch(serial); m != nil {
				negAfter = time.Since(negStarted)
				l.PowerOff(neg)
				negPrompt <- string(m[1])
				return
			}
		}
		close(negPrompt)
	}()

	t.Run("built from the release downloads, through the mirror", func(t *testing.T) {
		p.assertBuiltFromMirror(t, log.String())
	})

	t.Run("image and manifest", func(t *testing.T) {
		data, err := os.ReadFile(l.Manifest)
		require.NoError(t, err)
		var m export.Manifest
		require.NoError(t, json.Unmarshal(data, &m))
		require.NotNil(t, m.Baked, "%s", data)
		// The OS as the guest reported it to the bake, not the seed's flavor.
		assert.Equal(t, "linux", m.OS.Family)
		assert.Equal(t, "debian", m.OS.ID, "%s", data)
		assert.Equal(t, "12", m.OS.Version, "%s", data)
		assert.Equal(t, "cloud-init", m.OS.SeedFlavor)
		assert.Equal(t, productionKubernetes, m.Baked.Kubernetes)
		assert.Equal(t, "registry.k8s.io/pause:3.10.2", m.Baked.PauseImage)
		assert.Equal(t, productionContainerd, strings.TrimPrefix(m.Baked.Containerd, "v"), "%s", data)
		assert.Equal(t, p.Releases.CNIPlugins, m.Baked.CNIPlugins)
		assert.Equal(t, sum(t, filepath.Join(k8s, "kubelet")), m.Baked.Checksums["kubelet"])
		assert.Equal(t, sum(t, joiner), m.Baked.Checksums["joiner"])
		require.Len(t, m.Outputs, 1)
		out := m.Outputs[0]
		assert.Equal(t, "qcow2", out.Format)
		assert.Equal(t, "zstd", out.Compression)
		assert.Equal(t, sum(t, l.Image), out.SHA256, "the manifest's checksum is the image's")
		side, err := os.ReadFile(l.Image + ".sha256")
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(side), out.SHA256), "the .sha256 file: %s", side)
	})

	t.Run("SBOM and provenance", func(t *testing.T) {
		data, err := os.ReadFile(l.Manifest)
		require.NoError(t, err)
		var m export.Manifest
		require.NoError(t, json.Unmarshal(data, &m))
		require.NotNil(t, m.Baked, "%s", data)
		require.NotNil(t, m.SBOM, "the manifest lists the SBOM: %s", data)
		require.NotNil(t, m.Provenance, "the manifest lists the provenance: %s", data)
		dir := filepath.Dir(l.Manifest)
		sbom, prov := filepath.Join(dir, m.SBOM.File), filepath.Join(dir, m.Provenance.File)
		assert.Equal(t, sum(t, sbom), m.SBOM.SHA256)
		assert.Equal(t, sum(t, prov), m.Provenance.SHA256)
		// The SBOM parses with the SPDX library and names the kubelet,
		// containerd and runc at the versions baked, runc's as the guest
		// reported it.
		doc := attesttest.SBOM(t, sbom)
		require.NotEmpty(t, m.Baked.Runc, "%s", data)
		attesttest.Baked(t, doc, "kubelet", m.Baked.Kubernetes)
		attesttest.Baked(t, doc, "containerd", m.Baked.Containerd)
		attesttest.Baked(t, doc, "runc", m.Baked.Runc)
		assert.Equal(t, []string{productionKubernetes}, attesttest.Versions(doc, "kubelet"))
		assert.NotEmpty(t, attesttest.Versions(doc, "libc6"), "the guest's Debian packages")
		// The provenance's subject is the qcow2, by its sha256.
		st := attesttest.Provenance(t, prov)
		assert.Equal(t, sum(t, l.Image), st.SubjectDigest(filepath.Base(l.Image)), "the provenance's subject digest is the qcow2's sha256")
	})

	client, err := l.Client()
	require.NoError(t, err)
	require.Len(t, l.Nodes, 2)
	// The clone the test logs in to: checks that read the guest over SSH
	// run on it alone. The other booted with its join seed alone; it is
	// checked through its Node, its Jobs and what its sshd presents.
	var sshNodes []*lab.Node
	for _, node := range l.Nodes {
		if !node.JoinSeedOnly {
			sshNodes = append(sshNodes, node)
		}
	}
	require.Len(t, sshNodes, 1)
	require.True(t, l.Nodes[1].JoinSeedOnly, "the last node boots with its join seed alone")

	t.Run("nodes ready with their labels, each its own machine", func(t *testing.T) {
		names, machineIDs, hostKeys, addrs := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
		for _, node := range l.Nodes {
			n, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.True(t, ready(n), "conditions: %+v", n.Status.Conditions)
			assert.Equal(t, "e2e", n.Labels["kubenode.io/lab"], "asked for with joiner token --label")
			assert.Equal(t, "debian-12-cloud-node", n.Labels["kubenode.io/image"], "baked in by node_labels")
			assert.Equal(t, productionKubernetes, n.Status.NodeInfo.KubeletVersion)
			assert.Equal(t, "containerd://"+productionContainerd, strings.Replace(n.Status.NodeInfo.ContainerRuntimeVersion, "://v", "://", 1))
			for _, a := range n.Status.Addresses {
				if a.Type == corev1.NodeInternalIP {
					assert.Equal(t, node.GuestIP, a.Address, "node %s registers the address its VM was given", node.Name)
					addrs[a.Address] = true
				}
			}
			id := n.Status.NodeInfo.MachineID
			assert.Regexp(t, `^[0-9a-f]{32}$`, id)
			// As its sshd presents it, before any login: both clones.
			key, err := node.HostKey(ctx)
			require.NoError(t, err)
			if node.JoinSeedOnly {
				// No cloud-init seed named it: the name is the clone's own.
				assert.NotEqual(t, node.VMName, node.Name)
				assert.Equal(t, node.VMName, n.Labels[lab.LabVMLabel], "found by the label its seed asked for")
				assert.Regexp(t, `^kubenode-[0-9a-f]{12}$`, node.Name, "the image's hostname_prefix and its machine-id")
				assert.True(t, strings.HasPrefix(id, strings.TrimPrefix(node.Name, "kubenode-")), "the name comes from the machine-id %s", id)
			} else {
				hostname, err := node.Guest(ctx, "hostname")
				require.NoError(t, err)
				assert.Equal(t, node.Name, strings.TrimSpace(hostname))
				guestID, err := node.Guest(ctx, "cat /etc/machine-id")
				require.NoError(t, err)
				assert.Equal(t, guestID, id+"\n", "the kubelet reports the VM's machine-id")
				file, err := node.Guest(ctx, "ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub")
				require.NoError(t, err)
				assert.Contains(t, file, " "+key+" ", "its sshd presents its ed25519 host key")
			}
			t.Logf("node %s: %s, MAC %s, machine-id %s, host key %s", node.Name, node.GuestIP, node.MAC, id, key)
			names[n.Name], machineIDs[id], hostKeys[key] = true, true, true
		}
		assert.Len(t, names, 2, "distinct node names")
		assert.Len(t, machineIDs, 2, "distinct machine-ids: generalize removed the image's")
		assert.Len(t, hostKeys, 2, "distinct SSH host keys: generalize removed the image's")
		assert.Len(t, addrs, 2, "distinct addresses")
		table, err := l.Kubectl(ctx, "get", "nodes", "-o", "wide")
		require.NoError(t, err)
		t.Logf("kubectl get nodes -o wide:\n%s", table)
	})

	t.Run("a Job on each node, with preloaded images only", func(t *testing.T) {
		require.Len(t, l.Jobs, 2)
		assert.True(t, strings.HasPrefix(l.WorkloadImage, labimages.WorkloadRepository+":"), l.WorkloadImage)
		_, subnets, err := net.ParseCIDR(lab.CNISubnets) // the lab's CNI DaemonSet's
		require.NoError(t, err)
		for i, r := range l.Jobs {
			node := l.Nodes[i]
			assert.Equal(t, node.Name, r.Node)
			job, err := client.BatchV1().Jobs(lab.JobNamespace).Get(ctx, r.Job, metav1.GetOptions{})
			require.NoError(t, err)
			assert.EqualValues(t, 1, job.Status.Succeeded, "job %s", r.Job)
			pod, err := client.CoreV1().Pods(lab.JobNamespace).Get(ctx, r.Pod, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, node.Name, pod.Spec.NodeName, "placed by the scheduler on the node its selector names")
			assert.Equal(t, corev1.PodSucceeded, pod.Status.Phase)
			ip := net.ParseIP(pod.Status.PodIP)
			require.NotNil(t, ip, "pod IP %q", pod.Status.PodIP)
			assert.True(t, subnets.Contains(ip), "pod IP %s from the cluster CNI's range %s", ip, subnets)
			assert.Equal(t, fmt.Sprintf("kubenode-lab probe: node=%s pod=%s ip=%s", node.Name, pod.Name, pod.Status.PodIP), r.Output,
				"what the Job printed: its container log over SSH, or its termination message on the clone with no SSH")
			t.Logf("job %s on %s: %q (Ready → Succeeded %s)", r.Job, r.Node, r.Output, r.ReadyToSucceeded.Round(100*time.Millisecond))
		}
	})

	t.Run("preloaded images as containerd reports them, on the clone with SSH", func(t *testing.T) {
		var m export.Manifest
		data, err := os.ReadFile(l.Manifest)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &m))
		require.NotNil(t, m.Baked)
		want := map[string]string{}
		for _, img := range m.Baked.Images {
			want[img.Name] = img.Digest
		}
		assert.Contains(t, want, "registry.k8s.io/pause:3.10.2", "the pause image the config names is preloaded")
		assert.Contains(t, want, l.WorkloadImage)
		for _, node := range sshNodes {
			out, err := node.Guest(ctx, "ctr -n k8s.io images ls")
			require.NoError(t, err)
			got := map[string]string{}
			for _, line := range strings.Split(out, "\n")[1:] {
				if f := strings.Fields(line); len(f) >= 3 {
					got[f[0]] = f[2]
				}
			}
			for ref, digest := range want {
				assert.Equal(t, digest, got[ref], "node %s: %s as containerd has it\n%s", node.Name, ref, out)
			}
		}
	})

	t.Run("node basics: time sync and a grown root, on the clone with SSH", func(t *testing.T) {
		node := sshNodes[0]
		out, err := node.Guest(ctx, "systemctl is-enabled systemd-timesyncd.service chrony.service 2>/dev/null | grep -x enabled")
		assert.NoError(t, err, "a time sync service is enabled: %s", out)
		// The template asks for a 6G disk; the base disk's root is smaller.
		out, err = node.Guest(ctx, "df -B1 --output=size / | tail -1")
		require.NoError(t, err)
		size, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		require.NoError(t, err)
		assert.Greater(t, size, int64(5<<30), "the root file system grew to the disk's size on first boot")
	})

	// What a Cluster API provider or a user's monitoring reads first. The
	// seedless clone's cloud-init is disabled (the netplan subtest below).
	t.Run("cloud-init ended cleanly on the clone with a cloud-init seed", func(t *testing.T) {
		for _, node := range sshNodes {
			status := node.FirstBoot // read by the lab's workload stage, once cloud-init had finished
			assert.Contains(t, status, "status: done", "node %s: %s", node.Name, status)
			assertNoCloudInitErrors(t, status)
			t.Logf("node %s: cloud-init status --long:\n%s", node.Name, status)
		}
	})

	// The clone with its join seed alone has a MAC of its own (the lab's
	// 52:54:00:6b:6e:NN; the build VM had QEMU's default) and no
	// datasource: ds-identify disables cloud-init, so nothing renders a
	// network config for the new MAC. It joined (above) with what
	// generalize left: without its clone-network block, the build VM's
	// MAC-matched netplan would have left eth0 down and the node would
	// never have been Ready. A Job on each clone reads its network from
	// the host: eth0's MAC and address, the .network file networkd
	// configured it from, /etc/netplan and whether cloud-init ran.
	t.Run("a clone booted with a new MAC and its join seed alone gets a network from the netplan guest and joins", func(t *testing.T) {
		build := log.String()
		assert.Contains(t, build, "changed: /etc/netplan/50-cloud-init.yaml removed (it matched the build VM's NIC by MAC address)",
			"the build VM's cloud-init matched its NIC by MAC address, and generalize removed that")
		assert.Contains(t, build, "changed: /etc/netplan/60-kubenode-clone.yaml")
		for _, node := range l.Nodes {
			r, err := l.RunJob(ctx, node, lab.HostJob(node.Name, l.WorkloadImage, networkReport, "/etc/netplan", "/run/cloud-init", "/run/systemd/netif"))
			require.NoError(t, err)
			t.Logf("node %s (join seed alone: %t), as a Job on it read it:\n%s", node.Name, node.JoinSeedOnly, r.Output)
			out := r.Output + "\n" // one fact a line, the last one's newline trimmed
			assert.Contains(t, out, "mac "+node.MAC+"\n", "node %s: the NIC the lab gave it", node.Name)
			assert.Contains(t, out, "ipv4 "+node.GuestIP+"/24\n", "node %s: a DHCP lease", node.Name)
			assert.Contains(t, out, "netplan /etc/netplan/60-kubenode-clone.yaml 600\n", "node %s: generalize's, root's alone", node.Name)
			if node.JoinSeedOnly {
				assert.Contains(t, out, "cloud-init disabled\n", "no datasource: ds-identify disabled cloud-init, which rendered nothing")
				assert.NotContains(t, out, "by MAC", "no netplan file matches a NIC by MAC address")
				assert.Contains(t, out, "NETWORK_FILE=/run/systemd/network/10-netplan-kubenode-any.network\n", "eth0 configured from the clone netplan")
			} else {
				// The control: with the lab's seed, cloud-init rendered its
				// fallback again, matching this clone's NIC by MAC address.
				assert.Contains(t, out, "cloud-init enabled\n")
				assert.Contains(t, out, "netplan /etc/netplan/50-cloud-init.yaml 644 by MAC "+node.MAC+"\n")
			}
		}
	})

	t.Run("joiner ran once and disabled itself, on the clone with SSH", func(t *testing.T) {
		for _, node := range sshNodes {
			assertJoinerRanOnce(t, ctx, node)
		}
	})

	t.Run("after a reboot the joiner does not run again, on the clone with SSH", func(t *testing.T) {
		node := sshNodes[0]
		bootID, err := node.Guest(ctx, "cat /proc/sys/kernel/random/boot_id")
		require.NoError(t, err)
		node.Guest(ctx, "systemctl reboot") // the connection may drop mid-command
		require.Eventually(t, func() bool {
			id, err := node.Guest(ctx, "cat /proc/sys/kernel/random/boot_id")
			return err == nil && id != bootID
		}, 10*time.Minute, 5*time.Second, "the node comes back after its reboot")
		// The kubelet reports the boot it runs in: Ready from this boot.
		readyFromNewBoot := func(within time.Duration) bool {
			for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(3 * time.Second) {
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				id, err := node.Guest(cctx, "cat /proc/sys/kernel/random/boot_id")
				cancel()
				if err != nil || id == bootID {
					continue
				}
				n, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
				if err == nil && ready(n) && n.Status.NodeInfo.BootID == strings.TrimSpace(id) {
					return true
				}
			}
			return false
		}
		ok := readyFromNewBoot(8 * time.Minute)
		if !ok {
			// Seen once in six runs: after the reboot both vCPUs of the TCG
			// guest spun in nf_conntrack ("soft lockup" on the serial
			// console) and the guest never recovered. That is QEMU/TCG on
			// an overloaded host, not the node's configuration; a hard reset
			// (another reboot) is still what this subtest is about.
			serial, _ := os.ReadFile(node.SerialLog)
			require.Contains(t, string(serial), "soft lockup", "the node did not come back Ready from a new boot within 8 minutes; serial console %s", node.SerialLog)
			t.Logf("the guest kernel locked up under TCG after its reboot (soft lockup on the serial console): resetting the VM once")
			out, err := exec.Command("virsh", "-c", "qemu:///system", "reset", node.VMName).CombinedOutput()
			require.NoError(t, err, "virsh reset: %s", out)
			ok = readyFromNewBoot(8 * time.Minute)
		}
		require.True(t, ok, "the node is Ready again, from its new boot")
		state, err := node.Guest(ctx, "systemctl show kubenode-joiner.service -p ActiveState,UnitFileState; journalctl -b -u kubenode-joiner.service -o cat --no-pager")
		require.NoError(t, err)
		assert.Contains(t, state, "ActiveState=inactive")
		assert.Contains(t, state, "UnitFileState=disabled")
		assert.NotContains(t, state, "Starting kubenode-joiner", "not started in this boot")
	})

	t.Run("negative control: the joiner image leaves a config drive alone", func(t *testing.T) {
		host, ok := <-negPrompt
		require.True(t, ok, "%s reached no login prompt within 10 minutes; serial console %s", neg.Name, neg.SerialLog)
		assert.NotEqual(t, neg.Name, host, "the login prompt carries the config drive's host name: cloud-init took the drive")
		serial, err := os.ReadFile(neg.SerialLog)
		require.NoError(t, err)
		assert.NotContains(t, string(serial), "DataSourceConfigDrive")
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		var names []string
		for _, n := range nodes.Items {
			names = append(names, n.Name)
		}
		assert.ElementsMatch(t, []string{l.Nodes[0].Name, l.Nodes[1].Name}, names, "no Node but the lab's")
		t.Logf("negative control: %s (this joiner image, a config drive naming it %s) reached its login prompt as %q %s after its start; powered off there. Its serial console ends:\n%s",
			neg.Name, neg.Name, host, negAfter.Round(time.Second), tail(string(serial), 4))
	})

	// Teardown: nothing is left on the host but the image.
	require.NoError(t, l.Close())
	closed = true
	assertTornDown(t, work, before)
	_, err = os.Stat(l.Image)
	assert.NoError(t, err, "the image stays")

	// Ctrl-C: cmd/lab's signal handler cancels Up's context. Cancel it
	// here at two moments and check that Up tears down what it started.
	// By the ready stage everything is up: libvirtd, the control plane,
	// and the node's domain, pool and volumes.
	// Interrupted once its VM runs (the ready stage begins right after the
	// boot): the teardown of a running domain, its volumes and the control
	// plane. The main run's second clone already showed a seedless clone
	// naming itself and joining.
	t.Run("interrupted with the node running", func(t *testing.T) {
		o := opts
		o.SkipBuild = true // boot the image built above
		o.Nodes = 1
		o.JoinSeedOnlyNodes = 1
		o.WorkDir = filepath.Join(t.TempDir(), "work")
		interrupt(t, o, "==> ready", before)
		_, err := os.Stat(l.Image)
		assert.NoError(t, err, "the image stays")
	})
	// The lab's figures (TCG; both nodes of the main run booted at once on
	// this machine's cores).
	t.Logf("lab figures: image build %s; boot → Ready: %s (seed) and %s (join seed alone); Ready → first Job Succeeded %s",
		l.ImageBuild.Round(time.Second),
		l.Nodes[0].BootToReady.Round(100*time.Millisecond), l.Nodes[1].BootToReady.Round(100*time.Millisecond),
		l.Jobs[0].ReadyToSucceeded.Round(100*time.Millisecond))
	t.Run("interrupted during the packer build", func(t *testing.T) {
		o := opts
		o.ImageDir = filepath.Join(t.TempDir(), "image")
		o.WorkDir = filepath.Join(t.TempDir(), "work")
		o.Out = testWriter{t}
		interrupt(t, o, "Waiting for the guest's SSH server", before)
		_, err := os.Stat(filepath.Join(o.ImageDir, export.ManifestFile))
		assert.True(t, os.IsNotExist(err), "an interrupted build exports nothing")
	})
}

// networkReport is what a HostJob prints of a node's network, one fact a
// line: eth0's MAC and IPv4 address, the .network file networkd
// configured eth0 from, each netplan file with its mode and the MAC
// address it matches, if any, and whether cloud-init was enabled.
const networkReport = `echo "mac $(cat /sys/class/net/eth0/address)"
echo "ipv4 $(ip -4 -o addr show dev eth0 | awk '{print $4}')"
grep -h '^NETWORK_FILE=' "/host/run/systemd/netif/links/$(cat /sys/class/net/eth0/ifindex)"
for f in /host/etc/netplan/*; do
  mac=$(sed -n 's/^[[:space:]]*macaddress:[[:space:]]*//p' "$f" | tr -d "\"'")
  echo "netplan ${f#/host} $(stat -c %a "$f")${mac:+ by MAC $mac}"
done
for state in enabled disabled; do
  if [ -e "/host/run/cloud-init/$state" ]; then echo "cloud-init $state"; fi
done`

// assertJoinerRanOnce: the node's joiner service ran once, succeeded and
// disabled itself, and scrubbed its token.
func assertJoinerRanOnce(t *testing.T, ctx context.Context, node *lab.Node) {
	t.Helper()
	// The joiner labels the node before its cleanup phase, and that
	// phase disables the unit while the unit is still activating: wait
	// for the unit to be disabled and no longer activating.
	var state string
	require.Eventually(t, func() bool {
		state, _ = node.Guest(ctx, "systemctl show kubenode-joiner.service -p ActiveState,Result,NRestarts,UnitFileState")
		return strings.Contains(state, "UnitFileState=disabled") && !strings.Contains(state, "ActiveState=activating")
	}, 2*time.Minute, 3*time.Second, "node %s: unit state: %s", node.Name, state)
	assert.Contains(t, state, "ActiveState=active", "a oneshot with RemainAfterExit stays active once done")
	assert.Contains(t, state, "Result=success")
	assert.Contains(t, state, "NRestarts=0")
	journal, err := node.Guest(ctx, "journalctl -b -u kubenode-joiner.service -o cat --no-pager")
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(journal, "Starting kubenode-joiner.service"), journal)
	assert.Equal(t, 1, strings.Count(journal, "Finished kubenode-joiner.service"), journal)
	cfg, err := node.Guest(ctx, "stat -c %a /etc/kubenode/joiner.yaml; cat /etc/kubenode/joiner.yaml")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(cfg, "600\n"), cfg)
	assert.NotRegexp(t, `(?m)^\s*token:\s*\S`, cfg, "the token is scrubbed from the node")
	_, err = node.Guest(ctx, "test -s /etc/kubernetes/kubelet.conf && ! test -e /etc/kubenode/kubeadm-join.yaml")
	assert.NoError(t, err, "node %s: kubelet.conf written, kubeadm's join config removed", node.Name)
}

// interrupt runs lab.Up and cancels its context when the lab's progress
// first prints a line containing trigger; Up must then return the
// interruption and leave the host as it was.
func interrupt(t *testing.T, o lab.Options, trigger string, before []string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := make(chan struct{})
	if o.Out == nil {
		o.Out = testWriter{t}
	}
	o.Out = cancelOn{o.Out, t, trigger, cancel, seen}
	began := time.Now()
	l, err := lab.Up(ctx, o)
	select {
	case <-seen:
	default:
		t.Fatalf("the lab never printed %q (err: %v)", trigger, err)
	}
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "interrupted")
	assert.Nil(t, l)
	t.Logf("interrupted and torn down in %s from the start", time.Since(began).Round(time.Second))
	assertTornDown(t, o.WorkDir, before)
}

// assertTornDown: the lab's work dir is gone, and the libvirt definitions,
// pool directories and processes (hostState) are as before the lab.
func assertTornDown(t *testing.T, work string, before []string) {
	t.Helper()
	_, err := os.Stat(work)
	assert.True(t, os.IsNotExist(err), "the work dir %s is left behind", work)
	assert.Equal(t, before, hostState(t), "libvirt definitions, storage and processes are as before the lab")
}

// watch passes the lab's progress on and shows each write to fn.
type watch struct {
	w  io.Writer
	fn func(string)
}

func (w watch) Write(p []byte) (int, error) {
	w.fn(string(p))
	return w.w.Write(p)
}

// cancelOn passes the lab's progress on and cancels once a line holds trigger.
type cancelOn struct {
	w       io.Writer
	t       *testing.T
	trigger string
	cancel  context.CancelFunc
	seen    chan struct{}
}

func (c cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.trigger) {
		select {
		case <-c.seen:
		default:
			close(c.seen)
			c.t.Logf("test: %q seen: cancelling, as Ctrl-C does", c.trigger)
			c.cancel()
		}
	}
	return c.w.Write(p)
}

// hostState lists what a lab may leave behind: libvirt's domain and pool
// definitions (persistent and running), the pools' directories, and the
// QEMU and control-plane processes. It reads files, so it works with
// libvirtd stopped.
func hostState(t *testing.T) []string {
	var state []string
	for _, pattern := range []string{"/etc/libvirt/qemu/*.xml", "/run/libvirt/qemu/*.xml",
		"/etc/libvirt/storage/*.xml", "/run/libvirt/storage/*.xml", "/var/lib/libvirt/images/*"} {
		m, err := filepath.Glob(pattern)
		require.NoError(t, err)
		state = append(state, m...)
	}
	for _, name := range []string{"qemu-system", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "packer build"} {
		out, _ := exec.Command("pgrep", "-af", name).Output()
		if p := strings.TrimSpace(filterSelf(string(out))); p != "" {
			state = append(state, "process: "+p)
		}
	}
	return state
}

// assertNoCloudInitErrors: `cloud-init status --long` lists no errors
// (cloud-init 23.4 and later print errors: and recoverable_errors:, empty
// as [] or {}; older ones print neither, and say status: error instead).
func assertNoCloudInitErrors(t *testing.T, status string) {
	t.Helper()
	for _, m := range regexp.MustCompile(`(?m)^\s*(errors|recoverable_errors):[ \t]*(.*)$`).FindAllStringSubmatch(status, -1) {
		v := strings.TrimSpace(m[2])
		assert.True(t, v == "[]" || v == "{}", "cloud-init %s: %q\n%s", m[1], v, status)
	}
	assert.NotContains(t, status, "status: error")
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func sum(t *testing.T, path string) string {
	t.Helper()
	s, err := filehash.SHA256(path)
	require.NoError(t, err)
	return s
}

// filterSelf drops pgrep's view of this test binary and its go tool parents.
func filterSelf(out string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		if line == "" || strings.Contains(line, "lab.test") || strings.Contains(line, "go test") {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n")
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
