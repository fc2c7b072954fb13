// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package lab

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestCRILogText(t *testing.T) {
	for name, tc := range map[string]struct{ log, want string }{
		"one line":              {"2026-11-23T21:00:00.1Z stdout F kubenode-lab probe: node=a pod=b ip=10.85.0.2\n", "kubenode-lab probe: node=a pod=b ip=10.85.0.2"},
		"partial lines joined":  {"2026-11-23T21:00:00.1Z stdout P hello \n2026-11-23T21:00:00.2Z stdout F world\n2026-11-23T21:00:00.3Z stderr F second\n", "hello world\nsecond"},
		"text with spaces kept": {"t stdout F a  b   c\n", "a  b   c"},
		"empty":                 {"", ""},
	} {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, CRILogText(tc.log)) })
	}
}

func TestProbeJobRunsOnceOnItsNodeWithThePreloadedImage(t *testing.T) {
	j := ProbeJob("kubenode-lab-abc-2", "localhost/kubenode-lab/busybox:1.35.0")
	assert.Equal(t, JobNamespace, j.Namespace)
	assert.EqualValues(t, 0, *j.Spec.BackoffLimit, "a failure is reported, not retried")
	pod := j.Spec.Template.Spec
	assert.Equal(t, map[string]string{"kubernetes.io/hostname": "kubenode-lab-abc-2"}, pod.NodeSelector, "placed by the scheduler on that node")
	assert.Empty(t, pod.NodeName, "not bound by hand: the scheduler places it")
	assert.Equal(t, corev1.RestartPolicyNever, pod.RestartPolicy)
	c := pod.Containers[0]
	assert.Equal(t, "localhost/kubenode-lab/busybox:1.35.0", c.Image)
	assert.Equal(t, corev1.PullNever, c.ImagePullPolicy, "no registry: only what the image holds")
	assert.Equal(t, "probe", c.Name, "its log is read at /var/log/pods/<ns>_<pod>_<uid>/probe/0.log")
}

func TestProbeJobWritesItsLineAsTheTerminationMessage(t *testing.T) {
	c := ProbeJob("n", "img").Spec.Template.Spec.Containers[0]
	assert.Contains(t, c.Command[2], `echo "$line" > /dev/termination-log`, "read from the Pod's status where there is no SSH")
	assert.Empty(t, c.TerminationMessagePath, "the default, /dev/termination-log")
	p := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{Message: "kubenode-lab probe: node=n pod=p ip=10.86.3.2\n"}}}}}}
	assert.Equal(t, "kubenode-lab probe: node=n pod=p ip=10.86.3.2", terminationMessage(p))
	assert.Empty(t, terminationMessage(&corev1.Pod{}))
}

func TestCNIDaemonSetRunsOnEveryNodeBeforeItHasANetwork(t *testing.T) {
	ds := CNIDaemonSet("localhost/kubenode-lab/busybox:1.35.0")
	pod := ds.Spec.Template.Spec
	assert.True(t, pod.HostNetwork, "no pod network before the CNI")
	assert.Equal(t, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, pod.Tolerations, "NotReady and tainted nodes too")
	c := pod.Containers[0]
	assert.Equal(t, corev1.PullNever, c.ImagePullPolicy)
	assert.Equal(t, "/host/etc/cni/net.d", c.VolumeMounts[0].MountPath)
	assert.Equal(t, "/etc/cni/net.d", pod.Volumes[0].HostPath.Path)
	assert.True(t, strings.HasPrefix(c.Command[2], cniScript), "writes the config, then stays")
	assert.Equal(t, ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels)
}

// The DaemonSet's script, run by the busybox it runs in (Debian's
// busybox-static, the lab's image), with nothing but busybox's applets on
// PATH: it writes a bridge config a CNI runtime can parse, with a /24 of
// CNISubnets that follows the node's name, atomically.
func TestCNIScriptWritesABridgeConfigWithBusyboxAlone(t *testing.T) {
	busybox, err := exec.LookPath("busybox")
	require.NoError(t, err, "busybox-static (scripts/setup.sh packages)")
	applets, err := exec.Command(busybox, "--list").Output()
	require.NoError(t, err)
	bin := t.TempDir()
	for _, a := range strings.Fields(string(applets)) {
		require.NoError(t, os.Symlink(busybox, filepath.Join(bin, a)))
	}
	_, subnets, err := net.ParseCIDR(CNISubnets)
	require.NoError(t, err)
	subnetOf := func(node string) string {
		dir := t.TempDir()
		cmd := exec.Command(busybox, "sh", "-c", strings.ReplaceAll(cniScript, cniConfDir, dir))
		cmd.Env = []string{"PATH=" + bin, "NODE_NAME=" + node}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 1, "the config alone: no temporary file left")
		data, err := os.ReadFile(filepath.Join(dir, "10-kubenode-lab.conflist"))
		require.NoError(t, err)
		var conf struct {
			CNIVersion string `json:"cniVersion"`
			Plugins    []struct {
				Type string `json:"type"`
				IPAM struct {
					Ranges [][]struct{ Subnet string } `json:"ranges"`
				} `json:"ipam"`
			} `json:"plugins"`
		}
		require.NoError(t, json.Unmarshal(data, &conf), "%s", data)
		assert.Equal(t, "1.0.0", conf.CNIVersion)
		require.Len(t, conf.Plugins, 2)
		assert.Equal(t, "bridge", conf.Plugins[0].Type)
		assert.Equal(t, "portmap", conf.Plugins[1].Type)
		subnet := conf.Plugins[0].IPAM.Ranges[0][0].Subnet
		ip, n, err := net.ParseCIDR(subnet)
		require.NoError(t, err, subnet)
		ones, _ := n.Mask.Size()
		assert.Equal(t, 24, ones)
		assert.True(t, subnets.Contains(ip), "%s in %s", subnet, CNISubnets)
		assert.Contains(t, string(out), "pods from "+subnet)
		return subnet
	}
	a := subnetOf("kubenode-5f0921b1b2ee")
	assert.Equal(t, a, subnetOf("kubenode-5f0921b1b2ee"), "the same node, the same subnet")
	assert.NotEqual(t, a, subnetOf("kubenode-634f213c3bd9"))
}

// A HostJob reads the node itself: host network, the host paths mounted
// read-only under /host, placed on its node with the preloaded image, its
// container named as the probe's so that its log is found the same way.
func TestHostJobReadsTheHostReadOnly(t *testing.T) {
	j := HostJob("kubenode-5f0921b1b2ee", "localhost/kubenode-lab/busybox:1.35.0", "ls /host/etc/netplan", "/etc/netplan", "/run/cloud-init")
	assert.Equal(t, JobNamespace, j.Namespace)
	assert.Equal(t, "kubenode-lab-host-", j.GenerateName)
	assert.EqualValues(t, 0, *j.Spec.BackoffLimit)
	pod := j.Spec.Template.Spec
	assert.True(t, pod.HostNetwork, "the host's interfaces in /sys/class/net")
	assert.Equal(t, map[string]string{"kubernetes.io/hostname": "kubenode-5f0921b1b2ee"}, pod.NodeSelector)
	c := pod.Containers[0]
	assert.Equal(t, "probe", c.Name)
	assert.Equal(t, corev1.PullNever, c.ImagePullPolicy)
	assert.Equal(t, []string{"/bin/sh", "-c", hostJobScript, "kubenode-lab-host", "ls /host/etc/netplan"}, c.Command)
	require.Len(t, pod.Volumes, 2)
	require.Len(t, c.VolumeMounts, 2)
	for i, p := range []string{"/etc/netplan", "/run/cloud-init"} {
		assert.Equal(t, p, pod.Volumes[i].HostPath.Path)
		assert.Equal(t, pod.Volumes[i].Name, c.VolumeMounts[i].Name)
		assert.Equal(t, "/host"+p, c.VolumeMounts[i].MountPath)
		assert.True(t, c.VolumeMounts[i].ReadOnly, "read-only")
	}
}

// The HostJob's wrapper, run by busybox's sh as in the lab's image: what
// the script printed, stdout and stderr, goes to the log and the
// termination message, and its exit code is the container's.
func TestHostJobScriptKeepsWhatItPrintedAndItsExitCode(t *testing.T) {
	busybox, err := exec.LookPath("busybox")
	require.NoError(t, err, "busybox-static (scripts/setup.sh packages)")
	msg := filepath.Join(t.TempDir(), "termination-log")
	wrapper := strings.ReplaceAll(hostJobScript, "/dev/termination-log", msg)
	require.NotEqual(t, hostJobScript, wrapper)
	for script, code := range map[string]int{"echo one; echo two >&2": 0, "echo one; echo two >&2; exit 3": 3} {
		cmd := exec.Command(busybox, "sh", "-c", wrapper, "kubenode-lab-host", script)
		out, err := cmd.Output()
		assert.Equal(t, code, cmd.ProcessState.ExitCode(), "%s: %v", script, err)
		assert.Equal(t, "one\ntwo\n", string(out), script)
		data, err := os.ReadFile(msg)
		require.NoError(t, err)
		assert.Equal(t, "one\ntwo\n", string(data), script)
	}
}
