package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// IgnoredPreflightErrors are the kubeadm join preflight checks this host
// cannot pass for a reason of the machine, not of the join:
// FileContent--proc-sys-net-bridge-bridge-nf-call-iptables, as this host's
// kernel has no br_netfilter module (no /proc/sys/net/bridge).
var IgnoredPreflightErrors = []string{"FileContent--proc-sys-net-bridge-bridge-nf-call-iptables"}

// NodeOptions configure PrepareNode.
type NodeOptions struct {
	BinDir string // from Kubernetes
	Dir    string // state: containerd config, the systemctl stand-in, logs
	Log    io.Writer
}

// Node is this host made ready to join as a worker: containerd running, a
// bridge CNI config, and a systemctl stand-in (there is no systemd here)
// that runs the kubelet the way kubeadm's drop-in would.
type Node struct {
	opts       NodeOptions
	containerd *proc
	sysctls    map[string]string
}

const (
	nodeCRISocket = "/run/containerd/containerd.sock"
	nodeCNIConf   = "/etc/cni/net.d/10-kubenode-harness.conflist"
)

// the sysctls the kubelet changes (FACTS) and ip_forward, which kubeadm's
// preflight requires and PrepareNode sets: all restored by Teardown.
var kubeletSysctls = []string{"kernel.panic", "kernel.panic_on_oops", "vm.overcommit_memory", "net.ipv4.ip_forward"}

// PrepareNode starts containerd and writes the CNI config and the
// systemctl stand-in. Teardown undoes it all, and the join.
func PrepareNode(ctx context.Context, o NodeOptions) (n *Node, err error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	n = &Node{opts: o, sysctls: map[string]string{}}
	defer func() {
		if err != nil {
			n.Teardown()
		}
	}()
	for _, b := range []string{"containerd", "runc", "iptables", "conntrack"} {
		if _, err := exec.LookPath(b); err != nil {
			return nil, fmt.Errorf("%s is not installed: run scripts/setup.sh packages", b)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		return nil, errors.New("the CNI plugins are not installed: run scripts/setup.sh packages (containernetworking-plugins)")
	}
	for _, k := range kubeletSysctls {
		out, err := exec.Command("sysctl", "-n", k).Output()
		if err != nil {
			return nil, fmt.Errorf("sysctl %s: %w", k, err)
		}
		n.sysctls[k] = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("sysctl", "-q", "-w", "net.ipv4.ip_forward=1").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("sysctl net.ipv4.ip_forward=1: %v: %s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "bin"), 0o755); err != nil {
		return nil, err
	}
	cfg := filepath.Join(o.Dir, "containerd.toml")
	if err := os.WriteFile(cfg, []byte(`version = 2
[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = false
`), 0o644); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(nodeCNIConf), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(nodeCNIConf, []byte(`{
  "cniVersion": "0.4.0",
  "name": "kubenode-harness",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/16"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`), 0o644); err != nil {
		return nil, err
	}
	if n.containerd, err = start(o.Dir, "containerd", []string{"containerd", "--config", cfg}, os.Environ()); err != nil {
		return nil, err
	}
	if err := waitSocket(ctx, nodeCRISocket, 30*time.Second, n.containerd); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(o.Dir, "bin", "systemctl"), []byte(systemctlStandIn(o.Dir)), 0o755); err != nil {
		return nil, err
	}
	return n, nil
}

// systemctlStandIn answers kubeadm's systemctl calls for the kubelet,
// starting it with the flags of kubeadm's 10-kubeadm.conf drop-in.
func systemctlStandIn(dir string) string {
	return `#!/bin/bash
# kubenode test harness: systemctl for a host without systemd (kubelet only).
pidfile=` + dir + `/kubelet.pid
log=` + dir + `/kubelet.log
verb=$1; unit=${2%.service}
running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }
stop() {
  running || return 0
  pid=$(cat "$pidfile"); kill "$pid"
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null; rm -f "$pidfile"
}
start() {
  running && return 0
  KUBELET_KUBEADM_ARGS=; KUBELET_EXTRA_ARGS=
  [ -f /var/lib/kubelet/kubeadm-flags.env ] && . /var/lib/kubelet/kubeadm-flags.env
  [ -f /etc/default/kubelet ] && . /etc/default/kubelet
  setsid kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf \
    --config=/var/lib/kubelet/config.yaml $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS >>"$log" 2>&1 </dev/null &
  echo $! > "$pidfile"
}
[ "$unit" = kubelet ] || exit 0
case "$verb" in
  start) start ;;
  restart) stop; start ;;
  stop) stop ;;
  is-active) if running; then echo active; else echo inactive; exit 3; fi ;;
  status) echo "kubelet.service - kubelet (kubenode harness)"; echo "   Loaded: loaded"; running || exit 3 ;;
  *) exit 0 ;;
esac
`
}

func waitSocket(ctx context.Context, path string, timeout time.Duration, p *proc) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("%s exited; last lines of %s:\n%s", p.name, p.log, p.tail())
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s: no socket at %s after %s; last lines of %s:\n%s", p.name, path, timeout, p.log, p.tail())
}

// Env is the environment to run kubeadm or the joiner in: the systemctl
// stand-in and the Kubernetes binaries first on PATH.
func (n *Node) Env() []string {
	env := []string{"PATH=" + filepath.Join(n.opts.Dir, "bin") + ":" + n.opts.BinDir + ":" + os.Getenv("PATH")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return env
}

// CRISocket is containerd's endpoint.
func (n *Node) CRISocket() string { return "unix://" + nodeCRISocket }

// KubeletLog is the kubelet's log file.
func (n *Node) KubeletLog() string { return filepath.Join(n.opts.Dir, "kubelet.log") }

// Teardown resets the join and restores the host; it may run twice.
func (n *Node) Teardown() error {
	var errs []error
	if _, err := os.Stat("/etc/kubernetes"); err == nil {
		cmd := exec.Command(filepath.Join(n.opts.BinDir, "kubeadm"), "reset", "-f", "--cri-socket", n.CRISocket())
		cmd.Env = n.Env()
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(n.opts.Log, "kubeadm reset: %v\n%s", err, out)
		}
	}
	// The kubelet, by its PID file (kubeadm reset stops it through the
	// stand-in; this covers a reset that did not run).
	if b, err := os.ReadFile(filepath.Join(n.opts.Dir, "kubelet.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		os.Remove(filepath.Join(n.opts.Dir, "kubelet.pid"))
	}
	n.containerd.stop()
	// containerd-shims outlive containerd; theirs are under its state dir.
	if out, err := exec.Command("pgrep", "-f", "containerd-shim").Output(); err == nil {
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	// Mounts under /var/lib/kubelet (its bind mount included), deepest first.
	if b, err := os.ReadFile("/proc/self/mounts"); err == nil {
		var mounts []string
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 1 && (f[1] == "/var/lib/kubelet" || strings.HasPrefix(f[1], "/var/lib/kubelet/") || strings.HasPrefix(f[1], "/run/containerd/")) {
				mounts = append(mounts, f[1])
			}
		}
		for i := len(mounts) - 1; i >= 0; i-- {
			if err := syscall.Unmount(mounts[i], syscall.MNT_DETACH); err != nil {
				errs = append(errs, fmt.Errorf("unmount %s: %w", mounts[i], err))
			}
		}
	}
	errs = append(errs, removeKubeIptables()...)
	for k, v := range n.sysctls {
		if out, err := exec.Command("sysctl", "-q", "-w", k+"="+v).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s=%s: %v: %s", k, v, err, out))
		}
	}
	if err := exec.Command("ip", "link", "show", "cni0").Run(); err == nil {
		if out, err := exec.Command("ip", "link", "delete", "cni0").CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("deleting cni0: %v: %s", err, out))
		}
	}
	for _, p := range []string{nodeCNIConf, "/var/lib/cni", "/etc/kubernetes", "/var/lib/kubelet", "/run/containerd", "/var/lib/containerd"} {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeKubeIptables drops the chains (KUBE-*, CNI-*) the kubelet and the
// CNI plugins added, and every rule in or jumping to them, in IPv4 and IPv6,
// by restoring each table as saved minus those lines.
func removeKubeIptables() []error {
	var errs []error
	for _, family := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle"} {
			out, err := exec.Command(family+"-save", "-t", table).Output()
			if err != nil || !bytes.Contains(out, []byte("KUBE-")) && !bytes.Contains(out, []byte("CNI-")) {
				continue
			}
			var kept []string
			for _, line := range strings.Split(string(out), "\n") {
				f := strings.Fields(line)
				switch {
				case strings.HasPrefix(line, ":") && len(f) > 0 && isKubeChain(strings.TrimPrefix(f[0], ":")):
				case strings.HasPrefix(line, "-A ") && (isKubeChain(f[1]) || strings.Contains(line, " -j KUBE-") || strings.Contains(line, " -j CNI-")):
				default:
					kept = append(kept, line)
				}
			}
			cmd := exec.Command(family+"-restore", "-T", table)
			cmd.Stdin = strings.NewReader(strings.Join(kept, "\n"))
			if out, err := cmd.CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("%s-restore -T %s: %v: %s", family, table, err, bytes.TrimSpace(out)))
			}
		}
	}
	return errs
}

func isKubeChain(c string) bool { return strings.HasPrefix(c, "KUBE-") || strings.HasPrefix(c, "CNI-") }

// NodeT prepares this host as a node for a test and restores it after.
func NodeT(t testing.TB, o NodeOptions) *Node {
	t.Helper()
	RequireRoot(t)
	if o.BinDir == "" {
		o.BinDir = Kubernetes(t)
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Log == nil {
		o.Log = testLog{t}
	}
	n, err := PrepareNode(context.Background(), o)
	if err != nil {
		t.Fatalf("preparing this host as a node: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Teardown(); err != nil {
			t.Errorf("restoring the host: %v", err)
		}
	})
	return n
}
