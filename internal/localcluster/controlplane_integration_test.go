// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build integration

package localcluster

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPlainKubeadmJoin: the local control plane takes this host as a
// node with the real `kubeadm join` (token + CA hash discovery), the Node
// becomes Ready, and Teardown puts the host back as it was.
func TestPlainKubeadmJoin(t *testing.T) {
	requireRoot(t)
	bin := kubernetes(t)
	kubeadm := filepath.Join(bin, "kubeadm")
	dir := t.TempDir()
	ctx := context.Background()
	const nodeName = "kubenode-test"
	before := hostState()

	began := time.Now()
	cp := controlPlaneT(t, ControlPlaneOptions{BinDir: bin, Dir: filepath.Join(dir, "cp")})
	t.Logf("control plane up in %s", time.Since(began).Round(100*time.Millisecond))
	n := nodeT(t, NodeOptions{BinDir: bin, Dir: filepath.Join(dir, "node")})

	out, err := exec.Command(kubeadm, "token", "create", "--kubeconfig", cp.AdminKubeconfig).Output()
	if err != nil {
		t.Fatalf("kubeadm token create: %v", err)
	}
	token := strings.TrimSpace(string(out))
	hash, err := CAHash(cp.CACert)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"join", cp.Endpoint, "--token", token, "--discovery-token-ca-cert-hash", hash,
		"--node-name", nodeName, "--cri-socket", n.CRISocket()}
	if len(IgnoredPreflightErrors) > 0 {
		args = append(args, "--ignore-preflight-errors="+strings.Join(IgnoredPreflightErrors, ","))
	}
	join := exec.Command(kubeadm, args...)
	join.Env = n.Env()
	joined := time.Now()
	if out, err := join.CombinedOutput(); err != nil {
		t.Fatalf("kubeadm %s: %v\n%s\nlast lines of the kubelet's log:\n%s", strings.Join(args, " "), err, out, tailFile(n.KubeletLog(), 40))
	}
	t.Logf("kubeadm join returned after %s", time.Since(joined).Round(100*time.Millisecond))
	if err := waitNodeReady(ctx, cp, nodeName, 2*time.Minute); err != nil {
		t.Fatalf("%v\nlast lines of the kubelet's log:\n%s", err, tailFile(n.KubeletLog(), 40))
	}
	t.Logf("kubeadm join -> Node Ready: %s", time.Since(joined).Round(100*time.Millisecond))

	// What Teardown has to undo is really there (else the checks below
	// could not fail).
	joinedState := hostState()
	for _, want := range []string{"/etc/kubernetes exists", "/var/lib/kubelet exists", "kernel.panic = 10", "process kubelet"} {
		if !strings.Contains(joinedState, want+"\n") {
			t.Errorf("while joined, want %q in the host's state:\n%s", want, joinedState)
		}
	}
	kubelet := n.kubeletPID()
	if kubelet == 0 {
		t.Fatal("no kubelet runs under the systemctl stand-in's PID file")
	}
	started := map[string]int{"kubelet": kubelet, "containerd": n.containerd.cmd.Process.Pid,
		"etcd": cp.etcd.cmd.Process.Pid, "kube-apiserver": cp.apiserver.cmd.Process.Pid, "kube-controller-manager": cp.kcm.cmd.Process.Pid,
		"kube-scheduler": cp.scheduler.cmd.Process.Pid}

	torn := time.Now()
	if err := n.Teardown(); err != nil {
		t.Errorf("teardown: %v", err)
	}
	cp.Stop()
	t.Logf("teardown: %s", time.Since(torn).Round(100*time.Millisecond))
	for name, pid := range started {
		if alive(pid) {
			t.Errorf("%s (PID %d) still runs after Teardown and Stop", name, pid)
		}
	}
	after := hostState()
	for _, gone := range []string{"/etc/kubernetes", "/var/lib/kubelet"} {
		if exists(gone) {
			t.Errorf("%s is left behind", gone)
		}
	}
	if strings.Contains(after, "link cni0") {
		t.Error("the cni0 bridge is left behind")
	}
	if strings.Contains(after, "KUBE-FIREWALL") {
		t.Error("the KUBE-FIREWALL chain is left behind")
	}
	if after != before {
		t.Errorf("the host is not restored:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestControlPlaneEtcdNeedsAClientCertificate: the control plane's etcd,
// which every lab node and Pod reaches as 10.0.2.2, answers only a client
// with a certificate of etcd's own CA: not plain HTTP, not TLS without a
// certificate, not a certificate of the cluster CA (which signs every
// node's); the API server, holding one, works.
func TestControlPlaneEtcdNeedsAClientCertificate(t *testing.T) {
	cp := controlPlaneT(t, ControlPlaneOptions{})
	ctx := context.Background()
	u, err := url.Parse(cp.etcdURL)
	if err != nil || u.Scheme != "https" {
		t.Fatalf("etcd's URL %q is not https://", cp.etcdURL)
	}
	caPEM, err := os.ReadFile(cp.etcdCA)
	if err != nil {
		t.Fatal(err)
	}
	etcdCA := x509.NewCertPool()
	etcdCA.AppendCertsFromPEM(caPEM)
	admin, err := tls.LoadX509KeyPair(filepath.Join(cp.Dir, "pki", "admin.crt"), filepath.Join(cp.Dir, "pki", "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	health := func(scheme string, tc *tls.Config) (int, error) {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+u.Host+"/health", nil)
		if err != nil {
			return 0, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}
	for name, c := range map[string]struct {
		scheme string
		tls    *tls.Config
	}{
		"plain HTTP":                    {"http", nil},
		"no client certificate":         {"https", &tls.Config{RootCAs: etcdCA}},
		"the cluster CA's admin client": {"https", &tls.Config{RootCAs: etcdCA, Certificates: []tls.Certificate{admin}}},
	} {
		if code, err := health(c.scheme, c.tls); err == nil && code == http.StatusOK {
			t.Errorf("%s: etcd answered /health with %d, want it refused", name, code)
		} else {
			t.Logf("%s: refused (%d, %v)", name, code, err)
		}
	}
	// The same request with etcd's own client certificate is answered: the
	// refusals above are the missing certificate's.
	own, err := tls.LoadX509KeyPair(filepath.Join(cp.Dir, "pki", "etcd", "healthcheck-client.crt"), filepath.Join(cp.Dir, "pki", "etcd", "healthcheck-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	if code, err := health("https", &tls.Config{RootCAs: etcdCA, Certificates: []tls.Certificate{own}}); err != nil || code != http.StatusOK {
		t.Errorf("etcd's own client certificate: /health answered %d, %v; want 200", code, err)
	}
	var ns struct{ Metadata struct{ Name string } }
	if err := cp.api(ctx, http.MethodGet, "/api/v1/namespaces/kube-system", "", nil, &ns); err != nil || ns.Metadata.Name != "kube-system" {
		t.Errorf("the API server does not read from etcd: %v (%+v)", err, ns)
	}
}

// CAHash is kubeadm's discovery hash of a CA certificate: sha256 of its
// SubjectPublicKeyInfo.
func CAHash(caCertPEMPath string) (string, error) {
	b, err := os.ReadFile(caCertPEMPath)
	if err != nil {
		return "", fmt.Errorf("CA hash: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return "", fmt.Errorf("CA hash: no PEM certificate in %s", caCertPEMPath)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", fmt.Errorf("CA hash: %w", err)
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// waitNodeReady waits until the Node's Ready condition is True.
func waitNodeReady(ctx context.Context, cp *ControlPlane, name string, timeout time.Duration) error {
	var conditions string
	err := poll(ctx, nil, "Node "+name+" Ready", timeout, func() (bool, error) {
		var node struct {
			Status struct {
				Conditions []struct{ Type, Status, Reason, Message string }
			}
		}
		if err := cp.api(ctx, http.MethodGet, "/api/v1/nodes/"+name, "", nil, &node); err != nil {
			return false, err
		}
		conditions = fmt.Sprintf("%+v", node.Status.Conditions)
		for _, c := range node.Status.Conditions {
			if c.Type == "Ready" {
				return c.Status == "True", nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%w; its conditions: %s", err, conditions)
	}
	return nil
}

// hostState is, as text, what joining this host changes and Teardown must
// put back.
func hostState() string {
	var b strings.Builder
	for _, k := range kubeletSysctls {
		if v, err := readSysctl(k); err == nil {
			fmt.Fprintf(&b, "%s = %s\n", k, v)
		}
	}
	paths := append([]string{"/etc/kubernetes", "/var/lib/kubelet", nodeCNIConf,
		"/var/lib/containerd", "/opt/containerd", "/var/lib/etcd", "/root/.kube"}, hostPaths...)
	for _, p := range paths {
		if exists(p) {
			fmt.Fprintf(&b, "%s exists\n", p)
		}
	}
	links, _ := exec.Command("ip", "-o", "link", "show").Output()
	for _, l := range strings.Split(string(links), "\n") {
		if f := strings.Fields(l); len(f) > 1 && (strings.HasPrefix(f[1], "cni0") || strings.HasPrefix(f[1], "veth")) {
			fmt.Fprintf(&b, "link %s\n", strings.TrimSuffix(f[1], ":"))
		}
	}
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		out, _ := exec.Command(save).Output()
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "KUBE-") || strings.Contains(l, "CNI-") {
				fmt.Fprintf(&b, "%s: %s\n", save, strings.TrimSuffix(l, " [0:0]"))
			}
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mounts")
	for _, l := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(l); len(f) > 1 && (strings.HasPrefix(f[1], "/var/lib/kubelet") || strings.HasPrefix(f[1], "/run/containerd") || strings.HasPrefix(f[1], "/run/netns")) {
			fmt.Fprintf(&b, "mount %s\n", f[1])
		}
	}
	var procs []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		switch c := strings.TrimSpace(string(comm)); c {
		case "kubelet", "containerd", "etcd", "kube-apiserver", "kube-controller", "kube-scheduler", "containerd-shim":
			procs = append(procs, "process "+c+"\n")
		}
	}
	slices.Sort(procs)
	b.WriteString(strings.Join(procs, ""))
	return b.String()
}
