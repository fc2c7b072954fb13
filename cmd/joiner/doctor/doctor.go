// Package doctor is `joiner doctor`: run with an admin kubeconfig, it says
// whether a cluster is ready for a (Windows) node to join, and why a named
// node is not Ready. Every finding that is not OK carries a fix.
package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
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

// Options of a doctor run.
type Options struct {
	// Node, when set, is explained: does it exist, why is it not Ready.
	Node string
	// ImageKubernetes, when set, is the kubelet and kubeadm version of the
	// image that will join (--image-manifest's baked.kubernetes): it is
	// checked against the API server's under the joiner's skew rules.
	ImageKubernetes string
}

// Run runs every check.
func Run(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface, o Options) []Finding {
	var out []Finding
	if o.ImageKubernetes != "" {
		out = append(out, imageSkew(client, o.ImageKubernetes))
	}
	out = append(out, clusterInfo(ctx, client)...)
	out = append(out, bootstrapRBAC(ctx, client)...)
	out = append(out, kubeadmConfigMaps(ctx, client)...)
	out = append(out, scheduler(ctx, client, time.Now()))
	out = append(out, windowsKubeProxy(ctx, client))
	out = append(out, windowsCNI(ctx, client, dyn)...)
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

// imageSkew checks the image's kubelet and kubeadm against the API server.
func imageSkew(c kubernetes.Interface, image string) Finding {
	const check = "image-version"
	server, err := c.Discovery().ServerVersion()
	if err != nil {
		return Finding{check, Fail, "reading the API server's version: " + err.Error(), "check the kubeconfig and that the API server answers"}
	}
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
