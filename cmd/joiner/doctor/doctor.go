// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package doctor is `joiner doctor`: run with an admin kubeconfig, it says
// whether a cluster is ready for a Linux or a Windows node to join, and why
// a named node is not Ready. Every finding that is not OK carries a fix.
package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/skew"
)

// Status of a finding.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "FAIL"
)

// Finding is one check's result.
type Finding struct {
	Check   string
	Status  Status
	Message string
	Fix     string
}

// The operating systems of a node doctor checks the cluster for.
const (
	Linux   = "linux"
	Windows = "windows"
)

// Options of a doctor run.
type Options struct {
	// OS is the joining node's operating system, Linux (also when empty)
	// or Windows: it chooses the CNI and kube-proxy checks.
	OS string
	// Node, when set, is explained: does it exist, why is it not Ready.
	Node string
	// ImageKubernetes, when set, is the kubelet and kubeadm version of the
	// image that will join (--image-manifest's baked.kubernetes): it is
	// checked against the API server's under the joiner's skew rules.
	ImageKubernetes string
}

// Run runs the checks for a node of o.OS: those every kubeadm join needs
// (the API server, the image's version skew, cluster-info, bootstrap RBAC,
// kubeadm's ConfigMaps, a scheduler), then the OS's own: for Linux a CNI of
// any kind, for Windows kube-proxy and flannel or Calico set up for it.
func Run(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface, o Options) []Finding {
	server, api := apiServer(client)
	out := []Finding{api}
	if o.ImageKubernetes != "" && server != nil {
		out = append(out, imageSkew(server, o.ImageKubernetes))
	}
	out = append(out, clusterInfo(ctx, client)...)
	out = append(out, bootstrapRBAC(ctx, client)...)
	out = append(out, kubeadmConfigMaps(ctx, client)...)
	out = append(out, scheduler(ctx, client, time.Now()))
	if o.OS == Windows {
		out = append(out, windowsKubeProxy(ctx, client))
		out = append(out, windowsCNI(ctx, client, dyn)...)
	} else {
		out = append(out, linuxCNI(ctx, client))
	}
	if o.Node != "" {
		out = append(out, node(ctx, client, o.Node)...)
	}
	return out
}

// Print writes findings as a list; it returns whether all passed (no Fail).
func Print(w io.Writer, findings []Finding) bool {
	ok := true
	for _, f := range findings {
		fmt.Fprintf(w, "[%-4s] %s: %s\n", f.Status, f.Check, f.Message)
		if f.Status != OK && f.Fix != "" {
			fmt.Fprintf(w, "       fix: %s\n", f.Fix)
		}
		if f.Status == Fail {
			ok = false
		}
	}
	return ok
}

// apiServer checks that the API server answers, and returns its version.
func apiServer(c kubernetes.Interface) (*version.Info, Finding) {
	const check = "API server"
	server, err := c.Discovery().ServerVersion()
	if err != nil {
		return nil, Finding{check, Fail, "reading its version: " + err.Error(),
			"check the kubeconfig (--kubeconfig, $KUBECONFIG) and that the API server answers at the address it names"}
	}
	return server, Finding{check, OK, "answers, version " + server.GitVersion, ""}
}

// imageSkew checks the image's kubelet and kubeadm against the API server.
func imageSkew(server *version.Info, image string) Finding {
	const check = "image-version"
	if err := skew.CheckImage(image, server); err != nil {
		return Finding{check, Fail, strings.ReplaceAll(err.Error(), "\n", "; "),
			fmt.Sprintf("build the image with kubernetes_version at the control plane's minor (%s), or upgrade the control plane first", server.GitVersion)}
	}
	return Finding{check, OK, fmt.Sprintf("the image's kubelet and kubeadm %s can join a %s control plane", image, server.GitVersion), ""}
}

func clusterInfo(ctx context.Context, c kubernetes.Interface) []Finding {
	const check = "cluster-info"
	cm, err := c.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	if err != nil {
		return []Finding{{check, Fail, "kube-public/cluster-info: " + err.Error(),
			"run `kubeadm init phase bootstrap-token` on the control plane (it publishes cluster-info)"}}
	}
	kc, err := clientcmd.Load([]byte(cm.Data[bootstrapapi.KubeConfigKey]))
	if err != nil || len(kc.Clusters) == 0 {
		return []Finding{{check, Fail, "cluster-info holds no valid kubeconfig", "run `kubeadm init phase bootstrap-token` again"}}
	}
	var server string
	for _, cl := range kc.Clusters {
		server = cl.Server
	}
	var out []Finding
	var signed []string
	for k := range cm.Data {
		if id, ok := strings.CutPrefix(k, bootstrapapi.JWSSignatureKeyPrefix); ok {
			signed = append(signed, id)
		}
	}
	slices.Sort(signed)
	tokens, err := c.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{FieldSelector: "type=" + string(bootstrapapi.SecretTypeBootstrapToken)})
	switch {
	case err != nil:
		out = append(out, Finding{check, Warn, "listing bootstrap tokens: " + err.Error(), ""})
	case len(tokens.Items) == 0:
		out = append(out, Finding{check, Warn, "present, but there is no bootstrap token", "create one with `joiner token`"})
	case len(signed) == 0:
		out = append(out, Finding{check, Fail, fmt.Sprintf("present, but signed for none of the %d bootstrap tokens", len(tokens.Items)),
			"run kube-controller-manager with --controllers=*,bootstrapsigner,tokencleaner"})
	default:
		out = append(out, Finding{check, OK, fmt.Sprintf("present, names %s, signed for tokens %s", server, strings.Join(signed, ", ")), ""})
	}
	if u, err := url.Parse(server); err == nil {
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			out = append(out, Finding{"cluster-info server", Warn,
				server + " is a loopback address: kubeadm on another machine bootstraps against it and fails",
				"set controlPlaneEndpoint to an address nodes reach (and put it in the API server certificate)"})
		}
	}
	return out
}

// bootstrapRBAC checks the bindings kubeadm's bootstrap-token phase makes.
func bootstrapRBAC(ctx context.Context, c kubernetes.Interface) []Finding {
	const group = "system:bootstrappers:kubeadm:default-node-token"
	crbs, err := c.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return []Finding{{"bootstrap RBAC", Fail, "listing ClusterRoleBindings: " + err.Error(), ""}}
	}
	fix := "run `kubeadm init phase bootstrap-token` on the control plane"
	var out []Finding
	for _, want := range []struct{ what, role, subject string }{
		{"bootstrap tokens may create CSRs", "system:node-bootstrapper", group},
		{"node CSRs are auto-approved", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", group},
		{"node certificates rotate", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes"},
	} {
		found := slices.ContainsFunc(crbs.Items, func(b rbacv1.ClusterRoleBinding) bool {
			return b.RoleRef.Name == want.role && slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool { return s.Name == want.subject })
		})
		if found {
			out = append(out, Finding{"bootstrap RBAC", OK, want.what, ""})
		} else {
			out = append(out, Finding{"bootstrap RBAC", Fail, fmt.Sprintf("%s: no ClusterRoleBinding of %s to %s", want.what, want.role, want.subject), fix})
		}
	}
	rbs, err := c.RbacV1().RoleBindings(metav1.NamespacePublic).List(ctx, metav1.ListOptions{})
	anon := err == nil && slices.ContainsFunc(rbs.Items, func(b rbacv1.RoleBinding) bool {
		return slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool { return s.Name == "system:anonymous" })
	})
	if anon {
		out = append(out, Finding{"bootstrap RBAC", OK, "anonymous may read cluster-info", ""})
	} else {
		out = append(out, Finding{"bootstrap RBAC", Fail, "no RoleBinding in kube-public lets system:anonymous read cluster-info", fix})
	}
	return out
}

func kubeadmConfigMaps(ctx context.Context, c kubernetes.Interface) []Finding {
	var out []Finding
	for _, name := range []string{"kubeadm-config", "kubelet-config"} {
		_, err := c.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			out = append(out, Finding{"kubeadm", OK, "kube-system/" + name + " present", ""})
		case apierrors.IsNotFound(err):
			out = append(out, Finding{"kubeadm", Fail, "kube-system/" + name + " is missing: kubeadm join reads it",
				"run `kubeadm init phase upload-config all` on the control plane"})
		default:
			out = append(out, Finding{"kubeadm", Warn, "kube-system/" + name + ": " + err.Error(), ""})
		}
	}
	return out
}

// schedulerStaleMargin is how much older than its duration a lease's
// renewTime may be before doctor calls it stale. The holder writes
// renewTime with its own clock, so this also absorbs clock skew between the
// scheduler's host and doctor's.
const schedulerStaleMargin = time.Minute

// scheduler looks for a running kube-scheduler through the Lease
// kube-system/kube-scheduler, which the leading scheduler renews every
// couple of seconds (--leader-elect, on by default). Without a scheduler
// every Pod without spec.nodeName stays Pending, DaemonSet Pods included:
// the DaemonSet controller only pins them to a node by affinity and the
// default scheduler binds them
// (https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/#how-daemon-pods-are-scheduled),
// so a new node's CNI and kube-proxy Pods would never start.
func scheduler(ctx context.Context, c kubernetes.Interface, now time.Time) Finding {
	const check = "scheduler"
	const lease = "kube-system/kube-scheduler"
	const pending = "no kube-scheduler is leading, so Pods stay Pending (a new node's CNI and kube-proxy DaemonSet Pods too)"
	fix := "start kube-scheduler with --leader-elect (the default); in a kubeadm cluster check `kubectl -n kube-system get pods -l component=kube-scheduler` and /etc/kubernetes/manifests/kube-scheduler.yaml on the control-plane nodes. A managed control plane may hide its scheduler's lease: then check that new Pods get a node"
	l, err := c.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, "kube-scheduler", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return Finding{check, Warn, "no Lease " + lease + ": " + pending, fix}
	case err != nil:
		return Finding{check, Warn, "could not check: reading Lease " + lease + ": " + err.Error(),
			"read it with a kubeconfig that may get leases in kube-system, or check by hand that new Pods get a node"}
	}
	holder := "nobody"
	if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
		holder = *l.Spec.HolderIdentity
	}
	duration := 15 * time.Second // kube-scheduler's --leader-elect-lease-duration default
	if l.Spec.LeaseDurationSeconds != nil {
		duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	if l.Spec.RenewTime == nil {
		return Finding{check, Warn, fmt.Sprintf("Lease %s (holder %s) was never renewed: %s", lease, holder, pending), fix}
	}
	age := now.Sub(l.Spec.RenewTime.Time).Round(time.Second)
	if age > duration+schedulerStaleMargin {
		return Finding{check, Warn, fmt.Sprintf("Lease %s was last renewed %s ago by %s, longer than its %s duration: %s", lease, age, holder, duration, pending), fix}
	}
	return Finding{check, OK, fmt.Sprintf("Lease %s held by %s, renewed %s ago", lease, holder, max(age, 0)), ""}
}

// selectsWindows: the DaemonSet's pods are for Windows nodes.
func selectsWindows(ds *appsv1.DaemonSet) bool {
	spec := ds.Spec.Template.Spec
	if spec.NodeSelector[corev1.LabelOSStable] == "windows" {
		return true
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, e := range t.MatchExpressions {
				if e.Key == corev1.LabelOSStable && e.Operator == corev1.NodeSelectorOpIn && slices.Contains(e.Values, "windows") {
					return true
				}
			}
		}
	}
	return false
}

func windowsKubeProxy(ctx context.Context, c kubernetes.Interface) Finding {
	const check = "kube-proxy (Windows)"
	dss, err := c.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return Finding{check, Warn, "listing DaemonSets: " + err.Error(), ""}
	}
	for i := range dss.Items {
		ds := &dss.Items[i]
		if strings.Contains(ds.Name, "kube-proxy") && selectsWindows(ds) {
			return Finding{check, OK, ds.Namespace + "/" + ds.Name + " runs on Windows nodes", ""}
		}
	}
	return Finding{check, Fail, "no kube-proxy DaemonSet selects kubernetes.io/os=windows: Services will not work on a Windows node",
		"deploy kube-proxy for Windows as a HostProcess DaemonSet (kubernetes-sigs/sig-windows-tools hostprocess manifests), and keep the Linux kube-proxy on nodeSelector kubernetes.io/os=linux"}
}

// cniConfDirs are where a Linux node's container runtime reads its CNI
// configuration (containerd's and CRI-O's default conf_dir, and its
// parent): a CNI's node agent mounts one from the host to write its
// configuration there, as Cilium, Calico, flannel and Antrea do.
var cniConfDirs = []string{"/etc/cni/net.d", "/etc/cni"}

// writesCNIConfig: the DaemonSet's pods mount the host's CNI
// configuration directory.
func writesCNIConfig(ds *appsv1.DaemonSet) bool {
	return slices.ContainsFunc(ds.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.HostPath != nil && slices.Contains(cniConfDirs, path.Clean(v.HostPath.Path))
	})
}

// linuxCNI looks for a CNI on Linux nodes without asking which one: a
// DaemonSet whose pods mount the host's CNI configuration directory (a
// CNI's node agent), or a Ready Linux node (the kubelet reports Ready only
// once the runtime's pod network is ready, so that node has a working CNI,
// be it the cluster's or its image's own). Neither is only a warning: an
// image may carry its CNI configuration, and a cluster's first node may
// bring the CNI with it.
func linuxCNI(ctx context.Context, c kubernetes.Interface) Finding {
	const check = "CNI (Linux)"
	dss, err := c.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return Finding{check, Warn, "listing DaemonSets: " + err.Error(), ""}
	}
	var agents, hostNetwork []string
	for i := range dss.Items {
		ds := &dss.Items[i]
		name := ds.Namespace + "/" + ds.Name
		switch {
		case selectsWindows(ds):
		case writesCNIConfig(ds):
			agents = append(agents, name)
		case ds.Spec.Template.Spec.HostNetwork && !strings.Contains(ds.Name, "kube-proxy"):
			hostNetwork = append(hostNetwork, name)
		}
	}
	var ready []string
	if nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nodes.Items {
			if n.Labels[corev1.LabelOSStable] == "windows" {
				continue
			}
			if slices.ContainsFunc(n.Status.Conditions, func(cond corev1.NodeCondition) bool {
				return cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue
			}) {
				ready = append(ready, n.Name)
			}
		}
	}
	readyNodes := func() string {
		const shown = 3
		if len(ready) > shown {
			return fmt.Sprintf("%s and %d more", strings.Join(ready[:shown], ", "), len(ready)-shown)
		}
		return strings.Join(ready, ", ")
	}
	switch {
	case len(agents) > 0:
		msg := "DaemonSets that write the nodes' CNI configuration (they mount the host's /etc/cni/net.d): " + strings.Join(agents, ", ")
		if len(ready) > 0 {
			msg += "; Linux nodes Ready: " + readyNodes()
		}
		return Finding{check, OK, msg, ""}
	case len(ready) > 0:
		return Finding{check, OK, "Linux nodes Ready, so their pod network is: " + readyNodes(), ""}
	}
	msg := "no DaemonSet mounts the host's /etc/cni/net.d and no Linux node is Ready: a node stays NotReady (NetworkPluginNotReady) unless its image brings a CNI configuration"
	if len(hostNetwork) > 0 {
		msg += "; host-network DaemonSets that may be a CNI's agent: " + strings.Join(hostNetwork, ", ")
	}
	return Finding{check, Warn, msg,
		"install a CNI (Cilium, Calico, flannel, ...) before the node joins, or bake a CNI configuration into the image; then `joiner doctor --node NAME` says whether the node's network is ready"}
}

var ipamConfigs = schema.GroupVersionResource{Group: "crd.projectcalico.org", Version: "v1", Resource: "ipamconfigs"}
var installations = schema.GroupVersionResource{Group: "operator.tigera.io", Version: "v1", Resource: "installations"}

// windowsCNI looks for flannel or Calico and checks their Windows settings.
func windowsCNI(ctx context.Context, c kubernetes.Interface, dyn dynamic.Interface) []Finding {
	const check = "CNI (Windows)"
	dss, err := c.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return []Finding{{check, Warn, "listing DaemonSets: " + err.Error(), ""}}
	}
	var flannel, calico, windowsAgent []string
	for i := range dss.Items {
		ds := &dss.Items[i]
		name := ds.Namespace + "/" + ds.Name
		switch {
		case strings.Contains(ds.Name, "flannel"):
			flannel = append(flannel, name)
		case strings.Contains(ds.Name, "calico-node"):
			calico = append(calico, name)
		default:
			continue
		}
		if selectsWindows(ds) {
			windowsAgent = append(windowsAgent, name)
		}
	}
	var out []Finding
	switch {
	case len(flannel) > 0:
		out = append(out, flannelConfig(ctx, c)...)
	case len(calico) > 0 || hasInstallation(ctx, dyn):
		out = append(out, calicoConfig(ctx, dyn)...)
	default:
		return []Finding{{check, Fail, "no flannel or Calico found: a Windows node stays NotReady without a CNI that supports Windows",
			"install flannel (vxlan, VNI 4096, port 4789) or Calico (VXLAN, windowsDataplane HNS, IPAM strictAffinity) with their Windows DaemonSets"}}
	}
	if len(windowsAgent) == 0 && !hasInstallation(ctx, dyn) {
		out = append(out, Finding{check, Fail, "the CNI DaemonSets (" + strings.Join(append(flannel, calico...), ", ") + ") run on Linux only",
			"deploy the CNI's Windows DaemonSet (HostProcess) with nodeSelector kubernetes.io/os=windows"})
	} else if len(windowsAgent) > 0 {
		out = append(out, Finding{check, OK, "Windows CNI agent: " + strings.Join(windowsAgent, ", "), ""})
	}
	return out
}

func flannelConfig(ctx context.Context, c kubernetes.Interface) []Finding {
	const check = "flannel"
	cms, err := c.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return []Finding{{check, Warn, "listing ConfigMaps: " + err.Error(), ""}}
	}
	for _, cm := range cms.Items {
		raw, ok := cm.Data["net-conf.json"]
		if !ok {
			continue
		}
		var conf struct {
			Backend struct {
				Type string
				VNI  int
				Port int
			}
		}
		if err := json.Unmarshal([]byte(raw), &conf); err != nil {
			return []Finding{{check, Fail, cm.Namespace + "/" + cm.Name + " net-conf.json: " + err.Error(), "fix the JSON"}}
		}
		b := conf.Backend
		if strings.EqualFold(b.Type, "vxlan") && b.VNI == 4096 && b.Port == 4789 {
			return []Finding{{check, OK, "vxlan with VNI 4096, port 4789", ""}}
		}
		return []Finding{{check, Fail, fmt.Sprintf("backend %s VNI %d port %d: Windows needs vxlan with VNI 4096 and port 4789", b.Type, b.VNI, b.Port),
			`set "Backend": {"Type": "vxlan", "VNI": 4096, "Port": 4789} in net-conf.json and restart flannel`}}
	}
	return []Finding{{check, Fail, "no ConfigMap holds flannel's net-conf.json", "install flannel from its manifest"}}
}

func hasInstallation(ctx context.Context, dyn dynamic.Interface) bool {
	if dyn == nil {
		return false
	}
	_, err := dyn.Resource(installations).Get(ctx, "default", metav1.GetOptions{})
	return err == nil
}

func calicoConfig(ctx context.Context, dyn dynamic.Interface) []Finding {
	var out []Finding
	ipam, err := dyn.Resource(ipamConfigs).Get(ctx, "default", metav1.GetOptions{})
	strict := false
	if err == nil {
		strict, _, _ = unstructured.NestedBool(ipam.Object, "spec", "strictAffinity")
	}
	if strict {
		out = append(out, Finding{"calico", OK, "IPAM strictAffinity is true", ""})
	} else {
		out = append(out, Finding{"calico", Fail, "IPAM strictAffinity is not true: Windows nodes need their own IP blocks",
			"`calicoctl ipam configure --strictaffinity=true` (or kubectl patch ipamconfigs.crd.projectcalico.org default --type merge -p '{\"spec\":{\"strictAffinity\":true}}')"})
	}
	if inst, err := dyn.Resource(installations).Get(ctx, "default", metav1.GetOptions{}); err == nil {
		dp, _, _ := unstructured.NestedString(inst.Object, "spec", "calicoNetwork", "windowsDataplane")
		if dp == "HNS" {
			out = append(out, Finding{"calico", OK, "operator Installation has windowsDataplane HNS", ""})
		} else {
			out = append(out, Finding{"calico", Fail, fmt.Sprintf("operator Installation windowsDataplane is %q", dp),
				"set spec.calicoNetwork.windowsDataplane: HNS (and VXLAN encapsulation) in the Installation"})
		}
	}
	return out
}

// node explains a named node.
func node(ctx context.Context, c kubernetes.Interface, name string) []Finding {
	check := "node " + name
	n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return []Finding{{check, Fail, "not registered" + pendingCSRs(ctx, c, name),
			"on the node: read the joiner's log and the kubelet's; check the token has not expired (`kubeadm token list`)"}}
	}
	if err != nil {
		return []Finding{{check, Warn, err.Error(), ""}}
	}
	var out []Finding
	for _, cond := range n.Status.Conditions {
		if cond.Type != corev1.NodeReady {
			continue
		}
		if cond.Status == corev1.ConditionTrue {
			return []Finding{{check, OK, "Ready", ""}}
		}
		fix := "read the kubelet's log on the node"
		msg := cond.Reason + ": " + cond.Message
		switch {
		case strings.Contains(cond.Message, "network") || strings.Contains(cond.Message, "cni"):
			fix = "the CNI is not ready on this node: check its CNI DaemonSet pod there and /etc/cni/net.d"
		case strings.Contains(cond.Message, "runtime"):
			fix = "the container runtime is not ready: check containerd on the node (and on Windows its pause image matches the Windows build)"
		case cond.Reason == "NodeStatusUnknown":
			fix = "the kubelet stopped reporting: is it running, and can it reach the API server?"
		}
		out = append(out, Finding{check, Fail, "NotReady (" + msg + ")", fix})
	}
	if len(out) == 0 {
		out = append(out, Finding{check, Fail, "has no Ready condition yet", "wait for the kubelet's first status, then read its log"})
	}
	return out
}

func pendingCSRs(ctx context.Context, c kubernetes.Interface, name string) string {
	csrs, err := c.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	pending := 0
	for _, csr := range csrs.Items {
		if !strings.HasPrefix(csr.Spec.Username, "system:bootstrap:") || csr.Spec.SignerName != certv1.KubeAPIServerClientKubeletSignerName {
			continue
		}
		if len(csr.Status.Conditions) == 0 {
			pending++
		}
	}
	if pending > 0 {
		return fmt.Sprintf("; %d node client CSRs from bootstrap tokens are pending approval (is the auto-approve binding there?)", pending)
	}
	return ""
}
