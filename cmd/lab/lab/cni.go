// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package lab

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// CNINamespace and CNIName are where Options.ClusterCNI's DaemonSet runs.
const (
	CNINamespace = "kube-system"
	CNIName      = "kubenode-lab-cni"
	// CNISubnets is the range each node's bridge subnet (a /24) is taken from.
	CNISubnets = "10.86.0.0/16"
)

// cniScript writes a bridge configuration into the node's CNI
// configuration directory, with a /24 of CNISubnets chosen from the node's
// name (two nodes may draw the same one: pods never talk across nodes in
// the lab), then stays: what a CNI's node agent does first. It runs in
// busybox's sh (no cksum applet: md5sum).
const cniScript = `set -eu
n=$(( 0x$(printf '%s' "$NODE_NAME" | md5sum | cut -c1-6) % 250 + 1 ))
f=/host/etc/cni/net.d/10-kubenode-lab.conflist
cat > "$f.tmp" <<CONF
{"cniVersion": "1.0.0", "name": "kubenode-lab", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.86.$n.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
CONF
mv "$f.tmp" "$f"
echo "kubenode-lab-cni: node $NODE_NAME: bridge cni0, pods from 10.86.$n.0/24"
`

// cniConfDir is the node's CNI configuration directory, as cniScript
// sees it.
const cniConfDir = "/host/etc/cni/net.d"

// CNIDaemonSet is Options.ClusterCNI's DaemonSet: image (the lab's
// busybox) on the host network, on every node, ready or not.
func CNIDaemonSet(image string) *appsv1.DaemonSet {
	labels := map[string]string{"app.kubernetes.io/name": CNIName}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: CNIName, Namespace: CNINamespace, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					HostNetwork:                   true,
					AutomountServiceAccountToken:  ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					// A CNI runs where there is no network yet: on a
					// NotReady node, whatever its taints.
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{
						Name:            "install",
						Image:           image,
						ImagePullPolicy: corev1.PullNever,
						Command:         []string{"/bin/sh", "-c", cniScript + "while :; do sleep 3600; done\n"},
						Env: []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
						VolumeMounts: []corev1.VolumeMount{{Name: "cni-conf", MountPath: cniConfDir}},
					}},
					Volumes: []corev1.Volume{{Name: "cni-conf", VolumeSource: corev1.VolumeSource{
						HostPath: &corev1.HostPathVolumeSource{Path: "/etc/cni/net.d", Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}}},
				},
			},
		},
	}
}

// clusterCNI deploys Options.ClusterCNI's DaemonSet.
func (l *Lab) clusterCNI(ctx context.Context) error {
	if !l.opts.ClusterCNI {
		l.say("the image brings its own CNI configuration")
		return nil
	}
	if l.WorkloadImage == "" {
		return fmt.Errorf("the lab's CNI runs the lab's busybox image, and the image has none preloaded")
	}
	client, err := l.Client()
	if err != nil {
		return err
	}
	ds, err := client.AppsV1().DaemonSets(CNINamespace).Create(ctx, CNIDaemonSet(l.WorkloadImage), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating DaemonSet %s/%s: %w", CNINamespace, CNIName, err)
	}
	l.say("daemonset %s/%s: the cluster's CNI (bridge, a /24 of %s per node), image %s", ds.Namespace, ds.Name, CNISubnets, l.WorkloadImage)
	return nil
}
