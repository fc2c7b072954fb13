//go:build integration

package harness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPlainKubeadmJoin: the harness's control plane takes this host as a
// node with the real kubeadm join, and Teardown puts the host back.
func TestPlainKubeadmJoin(t *testing.T) {
	RequireRoot(t)
	bin := Kubernetes(t)
	dir := t.TempDir()
	before := hostState(t)
	began := time.Now()
	cp := ControlPlaneT(t, ControlPlaneOptions{BinDir: bin, Dir: filepath.Join(dir, "cp")})
	t.Logf("control plane up in %s", time.Since(began).Round(100*time.Millisecond))
	n, err := PrepareNode(context.Background(), NodeOptions{BinDir: bin, Dir: filepath.Join(dir, "node"), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Teardown()

	ctx := context.Background()
	out, err := cp.Kubectl(ctx, nil, "get", "secret", "-n", "kube-system", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	tokenOut, err := exec.Command(filepath.Join(bin, "kubeadm"), "token", "create", "--kubeconfig", cp.AdminKubeconfig, "--print-join-command").Output()
	if err != nil {
		t.Fatalf("kubeadm token create: %v (%s)", err, out)
	}
	args := strings.Fields(string(tokenOut))[1:] // drop "kubeadm"
	args = append(args, "--node-name", "kubenode-plain", "--cri-socket", n.CRISocket(), "--ignore-preflight-errors", strings.Join(IgnoredPreflightErrors, ","), "-v=1")
	join := exec.Command(filepath.Join(bin, "kubeadm"), args...)
	join.Env = n.Env()
	joined := time.Now()
	if out, err := join.CombinedOutput(); err != nil {
		t.Fatalf("kubeadm %v: %v\n%s\nkubelet log:\n%s", args, err, out, tailFile(n.KubeletLog(), 40))
	}
	t.Logf("kubeadm join: %s", time.Since(joined).Round(100*time.Millisecond))
	for {
		status, _ := cp.Kubectl(ctx, nil, "get", "node", "kubenode-plain", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if status == "True" {
			break
		}
		if time.Since(joined) > 3*time.Minute {
			t.Fatalf("node not Ready after 3m; kubelet log:\n%s", tailFile(n.KubeletLog(), 40))
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("kubeadm join -> Ready: %s", time.Since(joined).Round(100*time.Millisecond))

	if err := n.Teardown(); err != nil {
		t.Fatalf("teardown: %v", err)
	}
	cp.Stop()
	after := hostState(t)
	if before != after {
		t.Errorf("the host is not restored:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// hostState is what a join changes on this host, as text.
func hostState(t *testing.T) string {
	var b strings.Builder
	for _, k := range kubeletSysctls {
		out, _ := exec.Command("sysctl", k).Output()
		b.Write(out)
	}
	for _, p := range []string{"/etc/kubernetes", "/var/lib/kubelet", "/var/lib/cni", nodeCNIConf} {
		_, err := os.Stat(p)
		b.WriteString(p + " exists: " + map[bool]string{true: "yes", false: "no"}[err == nil] + "\n")
	}
	links, _ := exec.Command("ip", "-br", "link").Output()
	for _, l := range strings.Split(string(links), "\n") {
		if strings.HasPrefix(l, "cni0") || strings.HasPrefix(l, "veth") {
			b.WriteString("link " + strings.Fields(l)[0] + "\n")
		}
	}
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		out, _ := exec.Command(save).Output()
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "KUBE-") || strings.Contains(l, "CNI-") {
				b.WriteString(save + ": " + l + "\n")
			}
		}
	}
	procs, _ := exec.Command("pgrep", "-a", "-f", "kubelet|containerd|etcd|kube-apiserver|kube-controller").Output()
	for _, l := range strings.Split(strings.TrimSpace(string(procs)), "\n") {
		if l != "" && !strings.Contains(l, "pgrep") {
			b.WriteString("process " + l + "\n")
		}
	}
	return b.String()
}
