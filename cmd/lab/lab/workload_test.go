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
