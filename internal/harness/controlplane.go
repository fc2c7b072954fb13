package harness

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Kubernetes returns the directory of the cached Kubernetes binaries
// (kubeadm, kubelet, kube-apiserver, kube-controller-manager, kubectl, etcd),
// building them (~11 min cold) if needed.
func Kubernetes(t testing.TB) string {
	t.Helper()
	return script(t, "k8s-binaries.sh")
}

// ControlPlaneOptions configure StartControlPlane.
type ControlPlaneOptions struct {
	BinDir string // from Kubernetes
	Dir    string // state: pki/, etcd data, kubeconfigs, logs
	// ExtraSANs are more names or IPs on the API server's certificate (e.g.
	// 10.0.2.2, the host as a QEMU user-net guest sees it).
	ExtraSANs []string
	// ServerURL is the API server URL in cluster-info (what joining nodes
	// bootstrap against). Default https://127.0.0.1:<port>.
	ServerURL string
	// Port of the API server; 0 picks a free one.
	Port int
	Log  io.Writer
}

// ControlPlane is etcd, kube-apiserver and kube-controller-manager on
// 127.0.0.1, made kubeadm-joinable by kubeadm's own init phases.
type ControlPlane struct {
	Endpoint        string // 127.0.0.1:PORT
	AdminKubeconfig string
	CACert          string
	Dir             string

	opts          ControlPlaneOptions
	apiserverArgs []string
	apiserver     *proc
	procs         []*proc
}

// proc is a daemon started by the harness, logging to a file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func start(dir, name string, argv []string, env []string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { cmd.Wait(); f.Close(); close(p.done) }()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after 10 s.
func (p *proc) stop() {
	if p == nil || p.exited() {
		return
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func (p *proc) tail() string { return tailFile(p.log, 30) }

func tailFile(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// StartControlPlane starts a control plane; Stop ends it.
func StartControlPlane(ctx context.Context, o ControlPlaneOptions) (_ *ControlPlane, err error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kubeadm", "kubectl"} {
		if _, err := os.Stat(filepath.Join(o.BinDir, b)); err != nil {
			return nil, fmt.Errorf("%s is missing from %s: run scripts/k8s-binaries.sh", b, o.BinDir)
		}
	}
	if o.Port == 0 {
		if o.Port, err = freePort(); err != nil {
			return nil, err
		}
	}
	cp := &ControlPlane{Endpoint: fmt.Sprintf("127.0.0.1:%d", o.Port), Dir: o.Dir, opts: o}
	defer func() {
		if err != nil {
			cp.Stop()
		}
	}()
	if o.ServerURL == "" {
		o.ServerURL = "https://" + cp.Endpoint
		cp.opts.ServerURL = o.ServerURL
	}
	began := time.Now()
	pk, err := newPKI(filepath.Join(o.Dir, "pki"))
	if err != nil {
		return nil, err
	}
	sans := append([]string{"127.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "10.96.0.1"}, o.ExtraSANs...)
	for _, c := range []struct {
		name, cn string
		orgs     []string
		server   bool
	}{
		{"apiserver", "kube-apiserver", nil, true},
		{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}, false},
		{"admin", "kubernetes-admin", []string{"system:masters"}, false},
		{"controller-manager", "system:kube-controller-manager", nil, false},
	} {
		if err := pk.issue(c.name, c.cn, c.orgs, c.server, sans); err != nil {
			return nil, err
		}
	}
	if err := pk.serviceAccountKey(); err != nil {
		return nil, err
	}
	cp.CACert = pk.path("ca.crt")
	cp.AdminKubeconfig = filepath.Join(o.Dir, "admin.conf")
	local := "https://" + cp.Endpoint
	if err := pk.kubeconfig(cp.AdminKubeconfig, local, "admin"); err != nil {
		return nil, err
	}
	kcmConf := filepath.Join(o.Dir, "controller-manager.conf")
	if err := pk.kubeconfig(kcmConf, local, "controller-manager"); err != nil {
		return nil, err
	}

	etcdClient, err := freePort()
	if err != nil {
		return nil, err
	}
	etcdPeer, err := freePort()
	if err != nil {
		return nil, err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	etcd, err := start(o.Dir, "etcd", []string{filepath.Join(o.BinDir, "etcd"),
		"--name=default", "--data-dir=" + filepath.Join(o.Dir, "etcd"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL, "--listen-metrics-urls=", "--log-level=warn",
	}, os.Environ())
	if err != nil {
		return nil, err
	}
	cp.procs = append(cp.procs, etcd)
	if err := waitHTTP(ctx, etcdURL+"/health", nil, 30*time.Second, etcd); err != nil {
		return nil, err
	}

	cp.apiserverArgs = []string{filepath.Join(o.BinDir, "kube-apiserver"),
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", o.Port),
		"--tls-cert-file=" + pk.path("apiserver.crt"), "--tls-private-key-file=" + pk.path("apiserver.key"),
		"--client-ca-file=" + pk.path("ca.crt"),
		"--kubelet-client-certificate=" + pk.path("apiserver-kubelet-client.crt"), "--kubelet-client-key=" + pk.path("apiserver-kubelet-client.key"),
		"--service-account-key-file=" + pk.path("sa.pub"), "--service-account-signing-key-file=" + pk.path("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.96.0.0/12",
		"--authorization-mode=Node,RBAC", "--enable-bootstrap-token-auth", "--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true", "--endpoint-reconciler-type=none",
	}
	fmt.Fprintf(o.Log, "etcd up after %s\n", time.Since(began).Round(100*time.Millisecond))
	if err := cp.StartAPIServer(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Log, "kube-apiserver ready after %s\n", time.Since(began).Round(100*time.Millisecond))
	kcm, err := start(o.Dir, "kube-controller-manager", []string{filepath.Join(o.BinDir, "kube-controller-manager"),
		"--kubeconfig=" + kcmConf, "--authentication-kubeconfig=" + kcmConf, "--authorization-kubeconfig=" + kcmConf,
		"--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false",
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--cluster-signing-cert-file=" + pk.path("ca.crt"), "--cluster-signing-key-file=" + pk.path("ca.key"),
		"--root-ca-file=" + pk.path("ca.crt"), "--service-account-private-key-file=" + pk.path("sa.key"),
		"--use-service-account-credentials=true",
	}, os.Environ())
	if err != nil {
		return nil, err
	}
	cp.procs = append(cp.procs, kcm)
	if err := cp.kubeadmPhases(ctx); err != nil {
		return nil, err
	}
	// Ready means joinable: the bootstrapsigner has signed cluster-info for
	// the token kubeadm's bootstrap-token phase made.
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := cp.Kubectl(ctx, nil, "-n", "kube-public", "get", "configmap", "cluster-info", "-o", "jsonpath={.data}")
		if err == nil && strings.Contains(out, "jws-kubeconfig-") {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("cluster-info not signed after a minute (%v); last lines of the controller manager's log:\n%s", err, kcm.tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Fprintf(o.Log, "control plane up on %s in %s\n", cp.Endpoint, time.Since(began).Round(100*time.Millisecond))
	return cp, nil
}

// kubeadmPhases makes the cluster joinable with kubeadm's own phases:
// kubeadm-config and kubelet-config ConfigMaps, cluster-info and the
// bootstrap-token RBAC.
func (cp *ControlPlane) kubeadmPhases(ctx context.Context) error {
	o := cp.opts
	const placeholder = "kubenode-control-plane"
	cfg := filepath.Join(o.Dir, "kubeadm.yaml")
	endpoint := strings.TrimPrefix(o.ServerURL, "https://")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint: {advertiseAddress: 198.51.100.1, bindPort: %d}
nodeRegistration: {name: %s, criSocket: unix:///run/containerd/containerd.sock}
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.33.13
controlPlaneEndpoint: %s
certificatesDir: %s
networking: {serviceSubnet: 10.96.0.0/12}
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
`, o.Port, placeholder, endpoint, filepath.Join(o.Dir, "pki"))), 0o600); err != nil {
		return err
	}
	// kubeadm refuses a loopback advertiseAddress (it then picks an interface
	// and fails); it is only recorded on the placeholder Node, never used to
	// serve, so a TEST-NET-2 address stands in.
	// upload-config kubelet annotates the control-plane Node: give it one.
	// kubeadm waits for the Node's hostname label before patching it.
	node := fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":%q,"labels":{"kubernetes.io/hostname":%q}}}`, placeholder, placeholder)
	if _, err := cp.Kubectl(ctx, strings.NewReader(node), "create", "-f", "-"); err != nil {
		return err
	}
	for _, phase := range [][]string{{"upload-config", "kubeadm"}, {"upload-config", "kubelet"}, {"bootstrap-token"}} {
		args := append(append([]string{"init", "phase"}, phase...), "--config", cfg, "--kubeconfig", cp.AdminKubeconfig)
		began := time.Now()
		out, err := exec.CommandContext(ctx, filepath.Join(o.BinDir, "kubeadm"), args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("kubeadm %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		fmt.Fprintf(o.Log, "kubeadm init phase %s: %s\n", strings.Join(phase, " "), time.Since(began).Round(100*time.Millisecond))
	}
	if _, err := cp.Kubectl(ctx, nil, "delete", "node", placeholder); err != nil {
		return err
	}
	// cluster-info names the admin kubeconfig's server; nodes need ServerURL.
	if o.ServerURL != "https://"+cp.Endpoint {
		ca, err := os.ReadFile(cp.CACert)
		if err != nil {
			return err
		}
		kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: \"\"\n  cluster:\n    certificate-authority-data: %s\n    server: %s\ncontexts: null\ncurrent-context: \"\"\nusers: null\n", b64(ca), o.ServerURL)
		patch := fmt.Sprintf(`{"data":{"kubeconfig":%q}}`, kc)
		if _, err := cp.Kubectl(ctx, nil, "-n", "kube-public", "patch", "configmap", "cluster-info", "--type=merge", "-p", patch); err != nil {
			return err
		}
	}
	return nil
}

// Kubectl runs kubectl with the admin kubeconfig.
func (cp *ControlPlane) Kubectl(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(cp.opts.BinDir, "kubectl"), append([]string{"--kubeconfig", cp.AdminKubeconfig}, args...)...)
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// StopAPIServer stops only kube-apiserver.
func (cp *ControlPlane) StopAPIServer() error {
	cp.apiserver.stop()
	return nil
}

// StartAPIServer starts kube-apiserver (again) and waits until it is ready.
func (cp *ControlPlane) StartAPIServer(ctx context.Context) error {
	p, err := start(cp.Dir, "kube-apiserver", cp.apiserverArgs, os.Environ())
	if err != nil {
		return err
	}
	cp.apiserver = p
	caPEM, err := os.ReadFile(cp.CACert)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(filepath.Join(cp.Dir, "pki", "admin.crt"), filepath.Join(cp.Dir, "pki", "admin.key"))
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
	return waitHTTP(ctx, "https://"+cp.Endpoint+"/readyz", client, 60*time.Second, p)
}

// Stop stops every process it started; it may be called more than once.
func (cp *ControlPlane) Stop() error {
	cp.apiserver.stop()
	for i := len(cp.procs) - 1; i >= 0; i-- {
		cp.procs[i].stop()
	}
	return nil
}

// ControlPlaneT starts a control plane for a test, stopped at its end.
func ControlPlaneT(t testing.TB, o ControlPlaneOptions) *ControlPlane {
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
	cp, err := StartControlPlane(context.Background(), o)
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() { cp.Stop() })
	return cp
}

type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// waitHTTP polls url until it answers 200, the process dies, or timeout.
func waitHTTP(ctx context.Context, url string, client *http.Client, timeout time.Duration, p *proc) error {
	if client == nil {
		client = &http.Client{Timeout: 2 * time.Second}
	}
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("%s exited; last lines of %s:\n%s", p.name, p.log, p.tail())
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not ready at %s after %s (%v); last lines of %s:\n%s", p.name, url, timeout, last, p.log, p.tail())
}
