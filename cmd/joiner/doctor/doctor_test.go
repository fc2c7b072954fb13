package doctor_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/doctor"
	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/internal/jointest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

// kubeadmCluster is what `kubeadm init` leaves: cluster-info signed for a
// token, bootstrap RBAC, kubeadm's ConfigMaps. No Windows pieces.
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
	}
}

func daemonSet(ns, name, os string) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/os": os}
	return ds
}

func findings(t *testing.T, objs []runtime.Object, dynObjs []runtime.Object, node string) (string, bool) {
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Group: "crd.projectcalico.org", Version: "v1", Resource: "ipamconfigs"}: "IPAMConfigList",
		{Group: "operator.tigera.io", Version: "v1", Resource: "installations"}:  "InstallationList",
	}, dynObjs...)
	var out bytes.Buffer
	ok := doctor.Print(&out, doctor.Run(context.Background(), fake.NewClientset(objs...), dyn, doctor.Options{Node: node}))
	return out.String(), ok
}

func TestBareKubeadmClusterLacksTheWindowsPieces(t *testing.T) {
	out, ok := findings(t, kubeadmCluster(t), nil, "")
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
	out, _ := findings(t, nil, nil, "win-1")
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
	out, ok := findings(t, objs, nil, "")
	assert.True(t, ok, out)
	assert.Contains(t, out, "[ok  ] kube-proxy (Windows): kube-system/kube-proxy-windows runs on Windows nodes")
	assert.Contains(t, out, "[ok  ] flannel: vxlan with VNI 4096, port 4789")

	objs[len(objs)-1] = netConf(1)
	out, ok = findings(t, objs, nil, "")
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
	out, _ := findings(t, objs, []runtime.Object{ipam, inst}, "")
	assert.Contains(t, out, "[FAIL] calico: IPAM strictAffinity is not true")
	assert.Contains(t, out, `[FAIL] calico: operator Installation windowsDataplane is "Disabled"`)
}

func TestNotReadyNodeIsExplained(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "win-1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		Message: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized"}}}}
	out, _ := findings(t, append(kubeadmCluster(t), n), nil, "win-1")
	assert.Contains(t, out, "[FAIL] node win-1: NotReady (KubeletNotReady: container runtime network not ready")
	assert.Contains(t, out, "fix: the CNI is not ready on this node")
	require.NotContains(t, out, "not registered")
}
