package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
	assert.Contains(t, c.Command[2], `"type": "bridge"`)
	assert.Contains(t, c.Command[2], `mv "$f.tmp" "$f"`, "containerd never reads a half-written config")
	assert.Equal(t, ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels)
}
