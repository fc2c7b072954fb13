//go:build e2e

package lab_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubenode/packer-plugin-kubenode/internal/filehash"
	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
	"github.com/kubenode/packer-plugin-kubenode/internal/lab"
	"github.com/kubenode/packer-plugin-kubenode/post-processor/export"
)

// TestEndToEnd is `make e2e`: the lab's chain with assertions. The real
// packer builds examples/debian-12-node.pkr.hcl (kubenode-libvirt under
// TCG → kubenode-bake → kubenode-export), a control plane starts on
// 127.0.0.1, `joiner token` makes the seed, the exported image boots with
// it under libvirt, and its first-boot joiner joins it. Then: the image
// and manifest are right, the Node is Ready with the labels asked for (one
// baked into the image, one from the seed), the joiner's service ran once
// and disabled itself, and after a reboot it does not run again while the
// node comes back Ready. Finally the teardown leaves nothing behind.
func TestEndToEnd(t *testing.T) {
	harness.RequireRoot(t)
	root := harness.Root()
	bin := t.TempDir()
	plugin := goBuild(t, filepath.Join(bin, "packer-plugin-kubenode"), ".")
	joiner := goBuild(t, filepath.Join(bin, "kubenode-joiner"), "./cmd/joiner")
	k8s := harness.Kubernetes(t)
	images := t.TempDir()
	work := filepath.Join(t.TempDir(), "work")

	labels := map[string]string{"kubenode.io/lab": "e2e"}
	opts := lab.Options{
		Root: root, Packer: harness.Packer(t), Plugin: plugin, Joiner: joiner,
		KubernetesDir: k8s, BaseDisk: harness.BaseDisk(t),
		ImageDir: images, WorkDir: work, Labels: labels,
		Out: testWriter{t},
	}
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
		assert.Equal(t, "v1.33.13", m.Baked.Kubernetes)
		assert.Equal(t, "registry.k8s.io/pause:3.10", m.Baked.PauseImage)
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

	client, err := l.Client()
	require.NoError(t, err)
	t.Run("node ready with its labels", func(t *testing.T) {
		n, err := client.CoreV1().Nodes().Get(ctx, l.NodeName, metav1.GetOptions{})
		require.NoError(t, err)
		assert.True(t, ready(n), "conditions: %+v", n.Status.Conditions)
		assert.Equal(t, "e2e", n.Labels["kubenode.io/lab"], "asked for with joiner token --label")
		assert.Equal(t, "debian-12-node", n.Labels["kubenode.io/image"], "baked in by node_labels")
		assert.Equal(t, "v1.33.13", n.Status.NodeInfo.KubeletVersion)
		assert.True(t, strings.HasPrefix(n.Status.NodeInfo.ContainerRuntimeVersion, "containerd://"), n.Status.NodeInfo.ContainerRuntimeVersion)
		table, err := l.Kubectl(ctx, "get", "nodes", "-o", "wide")
		require.NoError(t, err)
		t.Logf("kubectl get nodes -o wide:\n%s", table)
	})

	t.Run("joiner ran once and disabled itself", func(t *testing.T) {
		// The joiner labels the node before its cleanup phase, and that
		// phase disables the unit while the unit is still activating: wait
		// for the unit to be disabled and no longer activating.
		var state string
		require.Eventually(t, func() bool {
			state, _ = l.Guest(ctx, "systemctl show kubenode-joiner.service -p ActiveState,Result,NRestarts,UnitFileState")
			return strings.Contains(state, "UnitFileState=disabled") && !strings.Contains(state, "ActiveState=activating")
		}, 2*time.Minute, 3*time.Second, "unit state: %s", state)
		assert.Contains(t, state, "ActiveState=active", "a oneshot with RemainAfterExit stays active once done")
		assert.Contains(t, state, "Result=success")
		assert.Contains(t, state, "NRestarts=0")
		journal, err := l.Guest(ctx, "journalctl -b -u kubenode-joiner.service -o cat --no-pager")
		require.NoError(t, err)
		assert.Equal(t, 1, strings.Count(journal, "Starting kubenode-joiner.service"), journal)
		assert.Equal(t, 1, strings.Count(journal, "Finished kubenode-joiner.service"), journal)
		cfg, err := l.Guest(ctx, "stat -c %a /etc/kubenode/joiner.yaml; cat /etc/kubenode/joiner.yaml")
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(cfg, "600\n"), cfg)
		assert.NotRegexp(t, `(?m)^\s*token:\s*\S`, cfg, "the token is scrubbed from the node")
		_, err = l.Guest(ctx, "test -s /etc/kubernetes/kubelet.conf && ! test -e /etc/kubenode/kubeadm-join.yaml")
		assert.NoError(t, err, "kubelet.conf written, kubeadm's join config removed")
	})

	t.Run("after a reboot the joiner does not run again", func(t *testing.T) {
		bootID, err := l.Guest(ctx, "cat /proc/sys/kernel/random/boot_id")
		require.NoError(t, err)
		l.Guest(ctx, "systemctl reboot") // the connection may drop mid-command
		require.Eventually(t, func() bool {
			id, err := l.Guest(ctx, "cat /proc/sys/kernel/random/boot_id")
			return err == nil && id != bootID
		}, 10*time.Minute, 5*time.Second, "the node comes back after its reboot")
		// The kubelet reports the boot it runs in: Ready from this boot.
		readyFromNewBoot := func(within time.Duration) bool {
			for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(3 * time.Second) {
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				id, err := l.Guest(cctx, "cat /proc/sys/kernel/random/boot_id")
				cancel()
				if err != nil || id == bootID {
					continue
				}
				n, err := client.CoreV1().Nodes().Get(ctx, l.NodeName, metav1.GetOptions{})
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
			serial, _ := os.ReadFile(l.SerialLog)
			require.Contains(t, string(serial), "soft lockup", "the node did not come back Ready from a new boot within 8 minutes; serial console %s", l.SerialLog)
			t.Logf("the guest kernel locked up under TCG after its reboot (soft lockup on the serial console): resetting the VM once")
			out, err := exec.Command("virsh", "-c", "qemu:///system", "reset", l.VMName).CombinedOutput()
			require.NoError(t, err, "virsh reset: %s", out)
			ok = readyFromNewBoot(8 * time.Minute)
		}
		require.True(t, ok, "the node is Ready again, from its new boot")
		state, err := l.Guest(ctx, "systemctl show kubenode-joiner.service -p ActiveState,UnitFileState; journalctl -b -u kubenode-joiner.service -o cat --no-pager")
		require.NoError(t, err)
		assert.Contains(t, state, "ActiveState=inactive")
		assert.Contains(t, state, "UnitFileState=disabled")
		assert.NotContains(t, state, "Starting kubenode-joiner", "not started in this boot")
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
	t.Run("interrupted with the node running", func(t *testing.T) {
		o := opts
		o.SkipBuild = true // boot the image built above
		o.WorkDir = filepath.Join(t.TempDir(), "work")
		interrupt(t, o, "==> ready", before)
		_, err := os.Stat(l.Image)
		assert.NoError(t, err, "the image stays")
	})
	t.Run("interrupted during the packer build", func(t *testing.T) {
		o := opts
		o.ImageDir = filepath.Join(t.TempDir(), "image")
		o.WorkDir = filepath.Join(t.TempDir(), "work")
		interrupt(t, o, "Waiting for SSH", before)
		_, err := os.Stat(filepath.Join(o.ImageDir, export.ManifestFile))
		assert.True(t, os.IsNotExist(err), "an interrupted build exports nothing")
	})
}

// interrupt runs lab.Up and cancels its context when the lab's progress
// first prints a line containing trigger; Up must then return the
// interruption and leave the host as it was.
func interrupt(t *testing.T, o lab.Options, trigger string, before []string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := make(chan struct{})
	o.Out = cancelOn{testWriter{t}, trigger, cancel, seen}
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

// cancelOn passes the lab's progress on and cancels once a line holds trigger.
type cancelOn struct {
	w       testWriter
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
			c.w.t.Logf("test: %q seen: cancelling, as Ctrl-C does", c.trigger)
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

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func goBuild(t *testing.T, out, pkg string) string {
	t.Helper()
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = harness.Root()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s: %s", pkg, b)
	return out
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
