// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package doctor_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/doctor"
	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/internal/jointest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

// kubeadmCluster is what `kubeadm init` leaves: cluster-info signed for a
// token, bootstrap RBAC, kubeadm's ConfigMaps, a scheduler holding its
// lease. No Windows pieces.
func kubeadmCluster(t *testing.T) []runtime.Object {
	ca := jointest.NewCA(t)
	crb := func(name, role, subject string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: "Group", Name: subject}}}
	}
	group := "system:bootstrappers:kubeadm:default-node-token"
	return []runtime.Object{
		jointest.ClusterInfo(t, ca, "https://10.0.0.1:6443", jointest.Token),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef", Namespace: "kube-system"}, Type: bootstrapapi.SecretTypeBootstrapToken},
		crb("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", group),
		crb("kubeadm:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", group),
		crb("kubeadm:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes"),
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:bootstrap-signer-clusterinfo", Namespace: "kube-public"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "system:anonymous"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm-config", Namespace: "kube-system"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kubelet-config", Namespace: "kube-system"}},
		schedulerLease(2 * time.Second),
	}
}

// schedulerLease is kube-scheduler's lease, last renewed age ago.
func schedulerLease(age time.Duration) *coordinationv1.Lease {
	holder, seconds := "cp-1_0c9d6e3a", int32(15)
	renewed := metav1.NewMicroTime(time.Now().Add(-age))
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler", Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, RenewTime: &renewed}}
}

func daemonSet(ns, name, os string) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/os": os}
	return ds
}

func findings(t *testing.T, os string, objs []runtime.Object, dynObjs []runtime.Object, node string) (string, bool) {
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Group: "crd.projectcalico.org", Version: "v1", Resource: "ipamconfigs"}: "IPAMConfigList",
		{Group: "operator.tigera.io", Version: "v1", Resource: "installations"}:  "InstallationList",
	}, dynObjs...)
	var out bytes.Buffer
	ok := doctor.Print(&out, doctor.Run(context.Background(), fake.NewClientset(objs...), dyn, doctor.Options{OS: os, Node: node}))
	return out.String(), ok
}

func TestBareKubeadmClusterLacksTheWindowsPieces(t *testing.T) {
	out, ok := findings(t, doctor.Windows, kubeadmCluster(t), nil, "")
	assert.False(t, ok)
	assert.Contains(t, out, "[ok  ] cluster-info: present, names https://10.0.0.1:6443, signed for tokens abcdef")
	assert.Contains(t, out, "[ok  ] bootstrap RBAC: node CSRs are auto-approved")
	assert.Contains(t, out, "[ok  ] kubeadm: kube-system/kubelet-config present")
	assert.Contains(t, out, "[FAIL] kube-proxy (Windows): no kube-proxy DaemonSet selects kubernetes.io/os=windows")
	assert.Contains(t, out, "[FAIL] CNI (Windows): no flannel or Calico found")
	assert.Equal(t, 2, strings.Count(out, "[FAIL]"), out)
	assert.Equal(t, 2, strings.Count(out, "fix: "), "each failure says what to do")
}

func TestEmptyClusterFailsBootstrapChecks(t *testing.T) {
	out, _ := findings(t, doctor.Windows, nil, nil, "win-1")
	assert.Contains(t, out, "[FAIL] cluster-info: kube-public/cluster-info")
	assert.Contains(t, out, "fix: run `kubeadm init phase bootstrap-token`")
	assert.Contains(t, out, "[FAIL] bootstrap RBAC: no RoleBinding in kube-public lets system:anonymous read cluster-info")
	assert.Contains(t, out, "[FAIL] kubeadm: kube-system/kubeadm-config is missing")
	assert.Contains(t, out, "[FAIL] node win-1: not registered")
}

func TestFlannelReadyForWindows(t *testing.T) {
	netConf := func(vni int) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-flannel-cfg", Namespace: "kube-flannel"},
			Data: map[string]string{"net-conf.json": `{"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan", "VNI": ` + map[bool]string{true: "4096", false: "1"}[vni == 4096] + `, "Port": 4789}}`}}
	}
	objs := append(kubeadmCluster(t),
		daemonSet("kube-system", "kube-proxy", "linux"), daemonSet("kube-system", "kube-proxy-windows", "windows"),
		daemonSet("kube-flannel", "kube-flannel-ds", "linux"), daemonSet("kube-flannel", "kube-flannel-ds-windows-amd64", "windows"),
		netConf(4096))
	out, ok := findings(t, doctor.Windows, objs, nil, "")
	assert.True(t, ok, out)
	assert.Contains(t, out, "[ok  ] kube-proxy (Windows): kube-system/kube-proxy-windows runs on Windows nodes")
	assert.Contains(t, out, "[ok  ] flannel: vxlan with VNI 4096, port 4789")

	objs[len(objs)-1] = netConf(1)
	out, ok = findings(t, doctor.Windows, objs, nil, "")
	assert.False(t, ok)
	assert.Contains(t, out, "[FAIL] flannel: backend vxlan VNI 1 port 4789: Windows needs vxlan with VNI 4096 and port 4789")
}

func TestCalicoNeedsStrictAffinityAndHNS(t *testing.T) {
	objs := append(kubeadmCluster(t), daemonSet("calico-system", "calico-node", "linux"), daemonSet("calico-system", "calico-node-windows", "windows"))
	ipam := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "crd.projectcalico.org/v1", "kind": "IPAMConfig", "metadata": map[string]any{"name": "default"},
		"spec": map[string]any{"strictAffinity": false},
	}}
	inst := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operator.tigera.io/v1", "kind": "Installation", "metadata": map[string]any{"name": "default"},
		"spec": map[string]any{"calicoNetwork": map[string]any{"windowsDataplane": "Disabled"}},
	}}
	out, _ := findings(t, doctor.Windows, objs, []runtime.Object{ipam, inst}, "")
	assert.Contains(t, out, "[FAIL] calico: IPAM strictAffinity is not true")
	assert.Contains(t, out, `[FAIL] calico: operator Installation windowsDataplane is "Disabled"`)
}

func TestNotReadyNodeIsExplained(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "win-1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		Message: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized"}}}}
	out, _ := findings(t, doctor.Windows, append(kubeadmCluster(t), n), nil, "win-1")
	assert.Contains(t, out, "[FAIL] node win-1: NotReady (KubeletNotReady: container runtime network not ready")
	assert.Contains(t, out, "fix: the CNI is not ready on this node")
	require.NotContains(t, out, "not registered")
}

func TestSchedulerIsSeenThroughItsLease(t *testing.T) {
	fix := "fix: start kube-scheduler with --leader-elect (the default); in a kubeadm cluster check `kubectl -n kube-system get pods -l component=kube-scheduler`"
	forbidden := func(c *fake.Clientset) {
		c.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "kube-scheduler", nil)
		})
	}
	for _, tc := range []struct {
		name    string
		lease   *coordinationv1.Lease // nil: none
		react   func(*fake.Clientset)
		want    string
		wantFix string
	}{
		{name: "fresh lease", lease: schedulerLease(3 * time.Second),
			want: "[ok  ] scheduler: Lease kube-system/kube-scheduler held by cp-1_0c9d6e3a, renewed 3s ago"},
		{name: "renewed within duration and margin", lease: schedulerLease(70 * time.Second),
			want: "[ok  ] scheduler: Lease kube-system/kube-scheduler held by cp-1_0c9d6e3a, renewed 1m10s ago"},
		{name: "stale lease", lease: schedulerLease(10 * time.Minute),
			want:    "[warn] scheduler: Lease kube-system/kube-scheduler was last renewed 10m0s ago by cp-1_0c9d6e3a, longer than its 15s duration: no kube-scheduler is leading, so Pods stay Pending",
			wantFix: fix},
		{name: "missing lease",
			want:    "[warn] scheduler: no Lease kube-system/kube-scheduler: no kube-scheduler is leading, so Pods stay Pending",
			wantFix: fix},
		{name: "never renewed", lease: func() *coordinationv1.Lease { l := schedulerLease(0); l.Spec.RenewTime = nil; return l }(),
			want:    "[warn] scheduler: Lease kube-system/kube-scheduler (holder cp-1_0c9d6e3a) was never renewed",
			wantFix: fix},
		{name: "RBAC forbids reading leases", lease: schedulerLease(time.Second), react: forbidden,
			want:    `[warn] scheduler: could not check: reading Lease kube-system/kube-scheduler: leases.coordination.k8s.io "kube-scheduler" is forbidden`,
			wantFix: "fix: read it with a kubeconfig that may get leases in kube-system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.lease != nil {
				objs = append(objs, tc.lease)
			}
			client := fake.NewClientset(objs...)
			if tc.react != nil {
				tc.react(client)
			}
			var out bytes.Buffer
			doctor.Print(&out, doctor.Run(context.Background(), client, nil, doctor.Options{}))
			lines := strings.Split(out.String(), "\n")
			i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "] scheduler: ") })
			require.NotEqual(t, -1, i, "no scheduler finding in:\n%s", out.String())
			line, after := lines[i], lines[i+1]
			assert.True(t, strings.HasPrefix(line, tc.want), "want %q, got %q", tc.want, line)
			if tc.wantFix == "" {
				assert.False(t, strings.HasPrefix(after, "       fix: "), "an OK finding has no fix: %q", after)
			} else {
				assert.True(t, strings.HasPrefix(after, "       "+tc.wantFix), "want %q after the finding, got %q", tc.wantFix, after)
			}
		})
	}
}

// --image-manifest: the image's kubelet and kubeadm are checked against the
// API server before a node boots.
func TestImageVersionSkew(t *testing.T) {
	for _, tc := range []struct {
		image string
		ok    bool
		want  string
	}{
		{image: "v1.33.2", ok: true, want: "[ok  ] image-version: the image's kubelet and kubeadm v1.33.2 can join a v1.33.13 control plane"},
		{image: "v1.34.0", want: "[FAIL] image-version: the image's kubelet v1.34.0 cannot join a v1.33.13 control plane"},
		{image: "v1.32.0", want: "[FAIL] image-version: the image's kubeadm v1.32.0 cannot join a v1.33.13 control plane"},
	} {
		client := fake.NewClientset(kubeadmCluster(t)...)
		client.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.33.13"}
		fs := doctor.Run(context.Background(), client, nil, doctor.Options{ImageKubernetes: tc.image})
		i := slices.IndexFunc(fs, func(f doctor.Finding) bool { return f.Check == "image-version" })
		require.NotEqual(t, -1, i, tc.image)
		var out bytes.Buffer
		doctor.Print(&out, fs[i:i+1])
		assert.Contains(t, out.String(), tc.want, tc.image)
		assert.Equal(t, tc.ok, fs[i].Status == doctor.OK, tc.image)
		if !tc.ok {
			assert.Contains(t, out.String(), "fix: build the image with kubernetes_version at the control plane's minor (v1.33.13)")
		}
	}
}

// cniAgent is a CNI's node agent as Cilium, Calico and flannel ship it: a
// host-network DaemonSet for Linux nodes that mounts the host's
// /etc/cni/net.d to write its configuration there.
func cniAgent(ns, name string) *appsv1.DaemonSet {
	ds := daemonSet(ns, name, "linux")
	ds.Spec.Template.Spec.HostNetwork = true
	ds.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "etc-cni-netd", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: "/etc/cni/net.d"}}}}
	return ds
}

func readyNode(name, os string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/os": os}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

// A Linux node needs a CNI, whichever it is; the Windows checks (flannel or
// Calico, their Windows settings, kube-proxy for Windows) are not run.
func TestLinuxNodeTakesAnyCNI(t *testing.T) {
	strictAffinityOff := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "crd.projectcalico.org/v1", "kind": "IPAMConfig", "metadata": map[string]any{"name": "default"},
		"spec": map[string]any{"strictAffinity": false},
	}}
	windowsAgent := cniAgent("kube-flannel", "kube-flannel-ds-windows")
	windowsAgent.Spec.Template.Spec.NodeSelector["kubernetes.io/os"] = "windows"
	for _, tc := range []struct {
		name    string
		objs    []runtime.Object
		dynObjs []runtime.Object
		want    string
	}{
		{name: "Cilium", objs: []runtime.Object{cniAgent("kube-system", "cilium"), daemonSet("kube-system", "cilium-envoy", "linux")},
			want: "[ok  ] CNI (Linux): DaemonSets that write the nodes' CNI configuration (they mount the host's /etc/cni/net.d): kube-system/cilium"},
		{name: "Calico without strictAffinity", objs: []runtime.Object{cniAgent("calico-system", "calico-node")}, dynObjs: []runtime.Object{strictAffinityOff},
			want: "[ok  ] CNI (Linux): DaemonSets that write the nodes' CNI configuration (they mount the host's /etc/cni/net.d): calico-system/calico-node"},
		{name: "the lab's CNI, a Ready node", objs: []runtime.Object{cniAgent("kube-system", "kubenode-lab-cni"), readyNode("kubenode-lab-1", "linux")},
			want: "[ok  ] CNI (Linux): DaemonSets that write the nodes' CNI configuration (they mount the host's /etc/cni/net.d): kube-system/kubenode-lab-cni; Linux nodes Ready: kubenode-lab-1"},
		{name: "no CNI DaemonSet, a Ready node (its image's CNI configuration)", objs: []runtime.Object{readyNode("n-1", "linux"), readyNode("win-1", "windows")},
			want: "[ok  ] CNI (Linux): Linux nodes Ready, so their pod network is: n-1"},
		{name: "nothing to tell: a warning", objs: []runtime.Object{windowsAgent, readyNode("win-1", "windows")},
			want: "[warn] CNI (Linux): no DaemonSet mounts the host's /etc/cni/net.d and no Linux node is Ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := findings(t, doctor.Linux, append(kubeadmCluster(t), tc.objs...), tc.dynObjs, "")
			assert.True(t, ok, "a Linux node can join:\n%s", out)
			assert.Contains(t, out, tc.want)
			assert.Contains(t, out, "[ok  ] API server: answers, version ")
			assert.NotContains(t, out, "[FAIL]")
			assert.NotContains(t, out, "Windows)")
			assert.NotContains(t, out, "strictAffinity")
			assert.NotContains(t, out, "flannel or Calico")
		})
	}
}

func TestLinuxWarningNamesHostNetworkDaemonSets(t *testing.T) {
	ds := daemonSet("kube-system", "kube-router", "linux")
	ds.Spec.Template.Spec.HostNetwork = true
	proxy := daemonSet("kube-system", "kube-proxy", "linux")
	proxy.Spec.Template.Spec.HostNetwork = true
	out, ok := findings(t, doctor.Linux, append(kubeadmCluster(t), ds, proxy), nil, "")
	assert.True(t, ok, out)
	assert.Contains(t, out, "; host-network DaemonSets that may be a CNI's agent: kube-system/kube-router\n")
	assert.Contains(t, out, "fix: install a CNI (Cilium, Calico, flannel, ...) before the node joins, or bake a CNI configuration into the image")
}

// A Windows node still needs flannel or Calico: Cilium does not do.
func TestWindowsNodeStillNeedsFlannelOrCalico(t *testing.T) {
	out, ok := findings(t, doctor.Windows, append(kubeadmCluster(t), cniAgent("kube-system", "cilium"), readyNode("n-1", "linux")), nil, "")
	assert.False(t, ok)
	assert.Contains(t, out, "[FAIL] CNI (Windows): no flannel or Calico found")
	assert.Contains(t, out, "[FAIL] kube-proxy (Windows): no kube-proxy DaemonSet selects kubernetes.io/os=windows")
	assert.NotContains(t, out, "CNI (Linux)")
}

func TestUnreachableAPIServerFails(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	var out bytes.Buffer
	ok := doctor.Print(&out, doctor.Run(context.Background(), client, nil, doctor.Options{OS: doctor.Linux, ImageKubernetes: "v1.33.1"}))
	assert.False(t, ok)
	assert.Contains(t, out.String(), "[FAIL] API server: reading its version: connection refused\n       fix: check the kubeconfig")
	assert.NotContains(t, out.String(), "image-version", "nothing to compare the image with")
}
