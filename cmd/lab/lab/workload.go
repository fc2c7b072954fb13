// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package lab

import (
	"context"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubenode/packer-plugin-kubenode/internal/labimages"
)

// JobNamespace is where the lab's Jobs run.
const JobNamespace = "default"

// JobResult is what one Job did on one node.
type JobResult struct {
	Node  string // the node it was placed on
	Job   string
	Pod   string
	PodIP string
	// Output is what its container printed, read from the node's container
	// log over SSH (the API server cannot reach a kubelet behind QEMU user
	// networking, so `kubectl logs` cannot either); on a node with no SSH
	// (Node.JoinSeedOnly), the termination message it wrote.
	Output string
	// ReadyToSucceeded is the time from the node's Ready to the Job's
	// completion.
	ReadyToSucceeded time.Duration
}

// runJobs runs one Job on each node, placed by the scheduler through a
// kubernetes.io/hostname node selector, with the preloaded workload image
// only (imagePullPolicy Never), and waits until each Succeeded.
func (l *Lab) runJobs(ctx context.Context) error {
	if l.WorkloadImage == "" {
		l.say("the image has no %s image preloaded: no Jobs to run", labimages.WorkloadRepository)
		return nil
	}
	client, err := l.Client()
	if err != nil {
		return err
	}
	readyAt := time.Now()
	names := make([]string, len(l.Nodes))
	for i, n := range l.Nodes {
		job := ProbeJob(n.Name, l.WorkloadImage)
		created, err := client.BatchV1().Jobs(JobNamespace).Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating Job %s for node %s: %w", job.Name, n.Name, err)
		}
		names[i] = created.Name
		l.say("job %s/%s: on node %s with %s", JobNamespace, created.Name, n.Name, l.WorkloadImage)
	}
	// The Jobs' output is read over SSH: while they start, let each clone
	// finish its first boot (cloud-init), all at once, and say how it
	// ended.
	errs := make([]error, len(l.Nodes))
	var wg sync.WaitGroup
	for i, n := range l.Nodes {
		if n.ssh == nil {
			continue // booted with its join seed alone: no SSH, no cloud-init seed
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.FirstBoot, errs[i] = n.CloudInit(ctx, 5*time.Minute)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err() // interrupted: no verdict on cloud-init
	}
	for i, n := range l.Nodes {
		switch {
		case n.ssh == nil:
		case errs[i] != nil:
			l.say("warning: %v; cloud-init status --long says:\n%s", errs[i], n.FirstBoot)
		default:
			l.say("node %s: cloud-init: %s", n.Name, strings.SplitN(strings.TrimSpace(n.FirstBoot), "\n", 2)[0])
		}
	}
	l.Jobs = make([]JobResult, len(l.Nodes))
	for i, n := range l.Nodes {
		r, err := l.waitJob(ctx, client, n, names[i])
		if err != nil {
			return err
		}
		r.ReadyToSucceeded = time.Since(readyAt)
		l.Jobs[i] = r
		l.say("job %s: Succeeded on %s (pod %s, IP %s) %s after the nodes were Ready; it printed: %s",
			r.Job, r.Node, r.Pod, r.PodIP, r.ReadyToSucceeded.Round(100*time.Millisecond), r.Output)
	}
	return nil
}

// ProbeJob is a Job that runs once on the named node and prints where it
// ran: the node (from the downward API), its Pod and its Pod's IP.
func ProbeJob(node, image string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "kubenode-lab-probe-", Namespace: JobNamespace,
			Labels: map[string]string{"app.kubernetes.io/name": "kubenode-lab-probe"}},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To[int64](600),
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					NodeSelector:                 map[string]string{corev1.LabelHostname: node},
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					Containers: []corev1.Container{{
						Name:            "probe",
						Image:           image,
						ImagePullPolicy: corev1.PullNever,
						// Printed, and written where the kubelet reads the
						// container's termination message for the Pod's status.
						Command: []string{"/bin/sh", "-c", `line="kubenode-lab probe: node=$NODE_NAME pod=$(hostname) ip=$POD_IP"; echo "$line"; echo "$line" > /dev/termination-log`},
						Env: []corev1.EnvVar{
							{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
							{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
						},
					}},
				},
			},
		},
	}
}

// HostJob is a Job that runs script once with the workload image's sh on
// the named node, in the host's network namespace, with each of hostPaths
// mounted read-only at /host followed by that path: how the lab reads a
// node it has no SSH into (Node.JoinSeedOnly). Its container, named as
// ProbeJob's, prints what script printed (stdout and stderr) and ends with
// it as its termination message (the kubelet keeps 4096 bytes of it); the
// Job fails when script does.
func HostJob(node, image, script string, hostPaths ...string) *batchv1.Job {
	j := ProbeJob(node, image)
	j.GenerateName = "kubenode-lab-host-"
	j.Labels = map[string]string{"app.kubernetes.io/name": "kubenode-lab-host"}
	pod := &j.Spec.Template.Spec
	pod.HostNetwork = true
	c := &pod.Containers[0]
	c.Command = []string{"/bin/sh", "-c", hostJobScript, "kubenode-lab-host", script}
	c.Env = nil
	for i, p := range hostPaths {
		name := fmt.Sprintf("host-%d", i)
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: name,
			VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: path.Join("/host", p), ReadOnly: true})
	}
	return j
}

// hostJobScript runs its first argument and keeps what it printed as the
// container's termination message too.
const hostJobScript = `out=$(sh -c "$1" 2>&1); rc=$?; printf '%s\n' "$out"; printf '%s\n' "$out" > /dev/termination-log; exit $rc`

// RunJob runs job (a HostJob, say) on node n, as the workload stage runs
// its Jobs, and waits until it Succeeded; it returns what the Job printed.
func (l *Lab) RunJob(ctx context.Context, n *Node, job *batchv1.Job) (JobResult, error) {
	client, err := l.Client()
	if err != nil {
		return JobResult{}, err
	}
	created, err := client.BatchV1().Jobs(JobNamespace).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		return JobResult{}, fmt.Errorf("creating a Job for node %s: %w", n.Name, err)
	}
	l.say("job %s/%s: on node %s", JobNamespace, created.Name, n.Name)
	return l.waitJob(ctx, client, n, created.Name)
}

// waitJob waits until the Job Succeeded and reads its Pod's output on the
// node; a failed Job or one not done in 10 minutes is an error that says
// what its Pod went through.
func (l *Lab) waitJob(ctx context.Context, client kubernetes.Interface, n *Node, name string) (JobResult, error) {
	r := JobResult{Node: n.Name, Job: name}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	last := ""
	for {
		job, err := client.BatchV1().Jobs(JobNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			return r, fmt.Errorf("job %s: %w", name, err)
		}
		pod, state := l.jobPod(ctx, client, name)
		if state != last {
			l.say("job %s: %s", name, state)
			last = state
		}
		if job != nil && job.Status.Succeeded > 0 && pod != nil {
			r.Pod, r.PodIP = pod.Name, pod.Status.PodIP
			if pod.Spec.NodeName != n.Name {
				return r, fmt.Errorf("job %s: its Pod ran on %q, not on %s", name, pod.Spec.NodeName, n.Name)
			}
			if n.ssh == nil {
				// No SSH: what it printed, as the kubelet reported it.
				r.Output = terminationMessage(pod)
				return r, nil
			}
			out, err := n.Guest(ctx, fmt.Sprintf("cat /var/log/pods/%s_%s_%s/probe/0.log", JobNamespace, pod.Name, pod.UID))
			if err != nil {
				return r, fmt.Errorf("job %s: reading its output on node %s: %w", name, n.Name, err)
			}
			r.Output = CRILogText(out)
			return r, nil
		}
		if job != nil && job.Status.Failed > 0 {
			printed := ""
			if pod != nil && terminationMessage(pod) != "" {
				printed = "; it printed:\n" + terminationMessage(pod) + "\n"
			}
			return r, fmt.Errorf("job %s on node %s failed: %s%s (kubectl --kubeconfig %s -n %s describe job %s)", name, n.Name, state, printed, l.Kubeconfig, JobNamespace, name)
		}
		select {
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				return r, fmt.Errorf("job %s on node %s not done in 10 minutes: %s", name, n.Name, state)
			}
			return r, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// jobPod finds the Job's Pod and says in a line where it stands.
func (l *Lab) jobPod(ctx context.Context, client kubernetes.Interface, job string) (*corev1.Pod, string) {
	pods, err := client.CoreV1().Pods(JobNamespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
	if err != nil {
		return nil, "listing its Pod: " + shortErr(err)
	}
	if len(pods.Items) == 0 {
		return nil, "no Pod yet"
	}
	p := &pods.Items[0]
	parts := []string{"pod " + p.Name + " " + string(p.Status.Phase)}
	if p.Spec.NodeName != "" {
		parts = append(parts, "on "+p.Spec.NodeName)
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Reason != "" {
			parts = append(parts, fmt.Sprintf("%s: %s %s", c.Type, c.Reason, c.Message))
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			parts = append(parts, fmt.Sprintf("waiting: %s %s", w.Reason, w.Message))
		}
		if t := cs.State.Terminated; t != nil {
			parts = append(parts, fmt.Sprintf("exited %d (%s)", t.ExitCode, t.Reason))
		}
	}
	return p, strings.Join(parts, "; ")
}

// terminationMessage is the message the Pod's first container ended with.
func terminationMessage(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			return strings.TrimSpace(t.Message)
		}
	}
	return ""
}

// CRILogText is the text of a container log in the CRI format the
// kubelet writes ("<time> <stream> <P|F> <text>" per line), partial lines
// joined.
func CRILogText(log string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(log, "\n"), "\n") {
		f := strings.SplitN(line, " ", 4)
		if len(f) < 4 {
			continue
		}
		b.WriteString(f[3])
		if f[2] == "F" {
			b.WriteByte('\n')
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
