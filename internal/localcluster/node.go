// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"bytes"
	"context"
	_ "embed"
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
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/safefile"
)

// IgnoredPreflightErrors are the kubeadm join preflight checks that fail on
// this host for a reason of the machine, not of the join. PrepareNode sets
// the two sysctls preflight wants (net.ipv4.ip_forward,
// net.bridge.bridge-nf-call-iptables; Teardown puts them back), and a
// missing systemd is what the systemctl stand-in is for. Two checks can
// still fail for the machine's sake:
//   - FileContent--proc-sys-net-bridge-bridge-nf-call-iptables: without the
//     br_netfilter module /proc/sys/net/bridge does not exist, so it cannot
//     be set (the bridge CNI works without it; Services would not, but no
//     test here has a kube-proxy).
//   - SystemVerification, on a host that mounts cgroup v1 (this one: a
//     hybrid hierarchy): kubeadm v1.35 and later fail it there ("cgroups
//     v1 support is deprecated ... you must set the kubelet configuration
//     option 'FailCgroupV1' to 'false'. You must also explicitly skip this
//     validation"), which the cluster's KubeletConfiguration does
//     (failCgroupV1: false, kubeadmConfig).
var IgnoredPreflightErrors = ignoredPreflightErrors()

func ignoredPreflightErrors() []string {
	var ignore []string
	if _, err := os.Stat(bridgeNFCallIptables); err != nil {
		ignore = append(ignore, "FileContent--proc-sys-net-bridge-bridge-nf-call-iptables")
	}
	// cgroup.controllers sits at the root of a cgroup v2 (unified) mount
	// only; a hybrid host has it under /sys/fs/cgroup/unified.
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		ignore = append(ignore, "SystemVerification")
	}
	return ignore
}

const (
	nodeCRISocket        = "/run/containerd/containerd.sock"
	nodeCNINetwork       = "kubenode-harness"
	nodeCNIConf          = "/etc/cni/net.d/10-kubenode-harness.conflist"
	nodeCNIBridge        = "cni0"
	bridgeNFCallIptables = "/proc/sys/net/bridge/bridge-nf-call-iptables"
)

// kubeletSysctls are the sysctls the kubelet sets at start (its
// setupKernelTunables) and those PrepareNode sets for kubeadm's preflight;
// Teardown restores each to what it was.
var kubeletSysctls = []string{
	"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
	"kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes",
	"net.ipv4.ip_forward", "net.bridge.bridge-nf-call-iptables",
}

// hostPaths are directories a join creates on the host besides
// /etc/kubernetes and /var/lib/kubelet. Teardown removes those that did not
// exist before PrepareNode.
var hostPaths = []string{
	"/etc/cni/net.d", "/etc/cni", // the CNI config
	"/var/lib/cni",                         // host-local IPAM state
	"/run/containerd",                      // containerd's socket
	"/run/netns",                           // pod network namespaces
	"/var/log/pods", "/var/log/containers", // the kubelet's log dirs
	"/usr/libexec/kubernetes", // the kubelet's volume plugin dir
}

// The stand-in is a file so that it reads (and lints) as the shell it is.
//
//go:embed systemctl.sh
var systemctlStandIn []byte

// NodeOptions configure PrepareNode.
type NodeOptions struct {
	BinDir string    // kubelet, kubeadm (scripts/k8s-binaries.sh)
	Dir    string    // state: containerd's config and data, the systemctl stand-in, logs
	Log    io.Writer // progress; nil discards it
}

// Node is this host made ready to join as a worker: containerd running, a
// bridge CNI config, and a systemctl stand-in (there is no systemd here)
// that runs the kubelet the way kubeadm's drop-in would.
type Node struct {
	opts       NodeOptions
	containerd *proc
	sysctls    [][2]string     // name, value before PrepareNode
	existed    map[string]bool // hostPaths and the CNI bridge, before PrepareNode
}

// PrepareNode makes this host ready for `kubeadm join` (or the joiner).
// It refuses a host that already is a node. Teardown undoes it, and the join.
func PrepareNode(ctx context.Context, o NodeOptions) (*Node, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	for _, b := range []string{"containerd", "runc", "iptables", "conntrack", "ip"} {
		if _, err := exec.LookPath(b); err != nil {
			return nil, fmt.Errorf("%s is not installed: run scripts/setup.sh packages: %w", b, err)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		return nil, fmt.Errorf("the CNI plugins are not installed: run scripts/setup.sh packages (containernetworking-plugins): %w", err)
	}
	if _, err := os.Stat(filepath.Join(o.BinDir, "kubelet")); err != nil {
		return nil, fmt.Errorf("kubelet is missing from %q: run scripts/k8s-binaries.sh: %w", o.BinDir, err)
	}
	// Teardown deletes these: never take over a host that has them.
	for _, p := range []string{"/etc/kubernetes", "/var/lib/kubelet"} {
		if _, err := os.Stat(p); err == nil {
			return nil, fmt.Errorf("%s exists: this host is (or was) a Kubernetes node; if an earlier run was interrupted, run `kubeadm reset -f` and remove %s", p, p)
		}
	}
	if c, err := net.Dial("unix", nodeCRISocket); err == nil {
		c.Close()
		return nil, fmt.Errorf("a containerd already answers on %s: stop it first", nodeCRISocket)
	}

	n := &Node{opts: o, existed: map[string]bool{}}
	for _, p := range hostPaths {
		_, err := os.Stat(p)
		n.existed[p] = err == nil
	}
	n.existed[nodeCNIBridge] = exec.Command("ip", "link", "show", nodeCNIBridge).Run() == nil
	for _, k := range kubeletSysctls {
		if v, err := readSysctl(k); err == nil {
			n.sysctls = append(n.sysctls, [2]string{k, v})
		}
	}
	if err := n.prepare(ctx); err != nil {
		if terr := n.Teardown(); terr != nil {
			err = errors.Join(err, fmt.Errorf("undoing it: %w", terr))
		}
		return nil, err
	}
	return n, nil
}

func (n *Node) prepare(ctx context.Context) error {
	o := n.opts
	// kubeadm's preflight wants both at 1.
	for _, k := range []string{"net.ipv4.ip_forward", "net.bridge.bridge-nf-call-iptables"} {
		if _, err := readSysctl(k); err == nil {
			if err := writeSysctl(k, "1"); err != nil {
				return err
			}
		}
	}
	// 0700: containerd's data and the logs are this host's as a node.
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return fmt.Errorf("node dir: %w", err)
	}
	if err := safefile.MkdirAll(o.Dir, "bin", 0o700); err != nil {
		return fmt.Errorf("node dir: %w", err)
	}
	if err := safefile.WriteFile(filepath.Join(o.Dir, "bin", "systemctl"), systemctlStandIn, 0o755); err != nil {
		return fmt.Errorf("systemctl stand-in: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(nodeCNIConf), 0o755); err != nil {
		return fmt.Errorf("CNI config: %w", err)
	}
	if err := safefile.WriteFile(nodeCNIConf, []byte(cniConflist), 0o644); err != nil {
		return fmt.Errorf("CNI config: %w", err)
	}
	cfg := filepath.Join(o.Dir, "containerd.toml")
	if err := safefile.WriteFile(cfg, []byte(containerdConfig(filepath.Join(o.Dir, "containerd"))), 0o644); err != nil {
		return fmt.Errorf("containerd config: %w", err)
	}
	began := time.Now()
	var err error
	if n.containerd, err = start(o.Dir, "containerd", []string{"containerd", "--config", cfg}); err != nil {
		return err
	}
	if err := waitSocket(ctx, n.containerd, nodeCRISocket, 30*time.Second); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "node: containerd up in %s\n", time.Since(began).Round(100*time.Millisecond))
	return nil
}

// containerdConfig keeps containerd's data and state under dir, so that
// the host's /var/lib/containerd and /opt/containerd are never touched; only
// the socket is at its usual place, where kubeadm looks for it.
func containerdConfig(dir string) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q
[plugins."io.containerd.grpc.v1.cri"]
  # Without CAP_SYS_RESOURCE (as here) containerd cannot lower a container's
  # oom_score_adj below its own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      # No systemd: cgroupfs, as the kubelet's cgroupDriver.
      SystemdCgroup = false
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), nodeCRISocket, filepath.Join(dir, "opt"))
}

// cniConflist is a bridge network: enough for the kubelet to report the
// node's network ready.
var cniConflist = `{
  "cniVersion": "0.4.0",
  "name": "` + nodeCNINetwork + `",
  "plugins": [
    {"type": "bridge", "bridge": "` + nodeCNIBridge + `", "isGateway": true, "ipMasq": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/16"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`

func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

func readSysctl(name string) (string, error) {
	b, err := os.ReadFile(sysctlPath(name))
	if err != nil {
		return "", fmt.Errorf("sysctl %s: %w", name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// writeSysctl writes to /proc/sys in place: a kernel file, not one to
// replace.
func writeSysctl(name, value string) error {
	if err := os.WriteFile(sysctlPath(name), []byte(value), 0o644); err != nil {
		return fmt.Errorf("sysctl %s=%s: %w", name, value, err)
	}
	return nil
}

// Env is the environment to run kubeadm or the joiner in: the systemctl
// stand-in, then the Kubernetes binaries, first on PATH.
func (n *Node) Env() []string {
	env := []string{"PATH=" + filepath.Join(n.opts.Dir, "bin") + ":" + n.opts.BinDir + ":" + os.Getenv("PATH")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return env
}

// CRISocket is containerd's endpoint, as kubeadm's --cri-socket wants it.
func (n *Node) CRISocket() string { return "unix://" + nodeCRISocket }

// KubeletLog is the kubelet's log file.
func (n *Node) KubeletLog() string { return filepath.Join(n.opts.Dir, "kubelet.log") }

// kubeletPID is the PID of the kubelet the stand-in runs, or 0.
func (n *Node) kubeletPID() int {
	b, err := os.ReadFile(filepath.Join(n.opts.Dir, "kubelet.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); pid <= 0 || !alive(pid) || strings.TrimSpace(string(comm)) != "kubelet" {
		return 0 // gone, or the PID was reused
	}
	return pid
}

// Teardown resets the join and restores the host: processes, mounts,
// iptables, sysctls, links, files. It may run more than once.
func (n *Node) Teardown() error {
	var errs []error
	o := n.opts
	if o.Log == nil {
		o.Log = io.Discard
	}
	// kubeadm reset stops the kubelet (through the stand-in), removes the
	// pods through the CRI, unmounts and empties /var/lib/kubelet and
	// /etc/kubernetes. It needs containerd still up.
	if exists("/etc/kubernetes") || exists("/var/lib/kubelet") {
		// remove-etcd-member is skipped: on a node without an etcd manifest it
		// falls back to the default data dir and empties /var/lib/etcd, whoever
		// it belongs to.
		cmd := exec.Command(filepath.Join(o.BinDir, "kubeadm"), "reset", "-f", "--cri-socket", n.CRISocket(),
			"--skip-phases=remove-etcd-member")
		cmd.Env = n.Env()
		out, err := cmd.CombinedOutput()
		appendFile(filepath.Join(o.Dir, "kubeadm-reset.log"), string(out))
		if err != nil {
			// Not fatal: what it did not do, the steps below do.
			fmt.Fprintf(o.Log, "node: kubeadm reset: %v\n%s", err, out)
		}
	}
	// The kubelet, in case reset did not stop it.
	if pid := n.kubeletPID(); pid != 0 {
		if err := killAndWait(pid, func() bool { return n.kubeletPID() == pid }); err != nil {
			errs = append(errs, fmt.Errorf("kubelet: %w", err))
		}
	}
	os.Remove(filepath.Join(o.Dir, "kubelet.pid"))
	n.containerd.stop()
	// containerd-shims outlive containerd, reparented; ours run in bundles
	// under our containerd state dir.
	errs = append(errs, killShims(filepath.Join(o.Dir, "containerd", "state"))...)

	errs = append(errs, unmountUnder("/var/lib/kubelet", "/run/containerd", "/run/netns", filepath.Join(o.Dir, "containerd"))...)
	errs = append(errs, removeKubeIptables()...)
	for _, kv := range n.sysctls {
		if err := writeSysctl(kv[0], kv[1]); err != nil {
			errs = append(errs, err)
		}
	}
	if !n.existed[nodeCNIBridge] && exec.Command("ip", "link", "show", nodeCNIBridge).Run() == nil {
		if out, err := exec.Command("ip", "link", "delete", nodeCNIBridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("deleting %s: %w: %s", nodeCNIBridge, err, bytes.TrimSpace(out)))
		}
	}
	remove := []string{nodeCNIConf, "/etc/kubernetes", "/var/lib/kubelet",
		filepath.Join("/var/lib/cni/networks", nodeCNINetwork), filepath.Join(o.Dir, "containerd")}
	for _, p := range hostPaths {
		if !n.existed[p] {
			remove = append(remove, p)
		}
	}
	for _, p := range remove {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// killAndWait sends SIGTERM, then SIGKILL after 10 s, until alive is false.
func killAndWait(pid int, alive func() bool) error {
	syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; alive(); i++ {
		switch {
		case i == 100:
			syscall.Kill(pid, syscall.SIGKILL)
		case i == 200:
			return fmt.Errorf("PID %d still alive 10 s after SIGKILL", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// killShims kills the containerd-shims whose working directory (their
// bundle) is under stateDir: those of the containerd PrepareNode ran.
func killShims(stateDir string) []error {
	var errs []error
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if !strings.HasPrefix(string(comm), "containerd-shim") || !strings.HasPrefix(cwd, stateDir+"/") || !alive(pid) {
			continue
		}
		if err := killAndWait(pid, func() bool { return alive(pid) }); err != nil {
			errs = append(errs, fmt.Errorf("containerd-shim: %w", err))
		}
	}
	return errs
}

// unmountUnder detaches every mount at or below the given directories,
// deepest first (the kubelet bind-mounts /var/lib/kubelet onto itself to
// make it shared).
func unmountUnder(dirs ...string) []error {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return []error{fmt.Errorf("listing mounts: %w", err)}
	}
	var mounts []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		for _, d := range dirs {
			if f[1] == d || strings.HasPrefix(f[1], d+"/") {
				mounts = append(mounts, f[1])
			}
		}
	}
	var errs []error
	for i := len(mounts) - 1; i >= 0; i-- {
		if err := syscall.Unmount(mounts[i], syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", mounts[i], err))
		}
	}
	return errs
}

// removeKubeIptables drops the chains the kubelet (KUBE-*) and the CNI
// plugins (CNI-*) added, and every rule in or jumping to them, in IPv4 and
// IPv6, by restoring each table as saved minus those lines.
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
				case strings.HasPrefix(line, ":") && isKubeChain(strings.TrimPrefix(f[0], ":")):
				case strings.HasPrefix(line, "-A ") && len(f) > 1 && (isKubeChain(f[1]) || strings.Contains(line, " -j KUBE-") || strings.Contains(line, " -j CNI-")):
				default:
					kept = append(kept, line)
				}
			}
			cmd := exec.Command(family+"-restore", "-T", table)
			cmd.Stdin = strings.NewReader(strings.Join(kept, "\n"))
			if out, err := cmd.CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("%s-restore -T %s: %w: %s", family, table, err, bytes.TrimSpace(out)))
			}
		}
	}
	return errs
}

func isKubeChain(c string) bool { return strings.HasPrefix(c, "KUBE-") || strings.HasPrefix(c, "CNI-") }
