// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package localcluster runs a Kubernetes cluster on this host: a control
// plane of etcd, kube-apiserver, kube-controller-manager and kube-scheduler
// on 127.0.0.1, made joinable by kubeadm's own init phases, and this host
// made ready to join it as a worker. The lab runs its control plane; the
// integration tests run both (internal/harness wraps them for a test).
// Every function returns its errors and takes a context or a log writer;
// nothing here knows about testing.
package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/safefile"
)

// ControlPlaneOptions configure StartControlPlane.
type ControlPlaneOptions struct {
	BinDir string // etcd, kube-apiserver, ..., kubeadm, kubectl (scripts/k8s-binaries.sh)
	Dir    string // state: pki/, etcd data, kubeconfigs, one log per process
	// ExtraSANs are more names or IPs on the API server's certificate (e.g.
	// 10.0.2.2, this host as a QEMU user-net guest sees it).
	ExtraSANs []string
	// ServerURL is the API server URL joining nodes are given: it goes into
	// cluster-info and kubeadm's controlPlaneEndpoint. Default
	// https://127.0.0.1:<port>. The admin kubeconfig keeps 127.0.0.1, since
	// the caller talks to the API server from this host, where a URL meant
	// for a guest (10.0.2.2) does not route.
	ServerURL string
	// Port of the API server; 0 picks a free one.
	Port int
	// KubeletCgroupDriver goes into the kubelet-config ConfigMap every
	// joining kubelet reads: "cgroupfs" (default; this host has no
	// systemd) or "systemd" (VM nodes, whose containerd uses systemd
	// cgroups).
	KubeletCgroupDriver string
	Log                 io.Writer // progress and timings; nil discards them
}

// ControlPlane is etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler on 127.0.0.1, made kubeadm-joinable by kubeadm's own init
// phases.
type ControlPlane struct {
	Endpoint        string // 127.0.0.1:PORT, what kubeadm join and the joiner discover
	AdminKubeconfig string // client certificate with O=system:masters
	CACert          string // the cluster CA, PEM
	Dir             string

	opts          ControlPlaneOptions
	client        *http.Client // the admin's client certificate
	apiserverArgs []string
	kcmArgs       []string
	etcdURL       string // https://127.0.0.1:PORT
	etcdCA        string // etcd's own CA, PEM (pki/etcd/ca.crt)
	etcd          *proc
	apiserver     *proc
	kcm           *proc // kube-controller-manager
	scheduler     *proc // kube-scheduler
}

// The API server's certificate names: what kubeadm puts there, less the
// node's own name and address.
var apiserverSANs = []string{"127.0.0.1", "localhost", "kubernetes", "kubernetes.default",
	"kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "10.96.0.1"}

// StartControlPlane starts a control plane and returns once cluster-info
// is signed, i.e. once a node can join; Stop ends it. On an error it stops
// what it started.
func StartControlPlane(ctx context.Context, o ControlPlaneOptions) (_ *ControlPlane, err error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubeadm", "kubectl"} {
		if _, err := os.Stat(filepath.Join(o.BinDir, b)); err != nil {
			return nil, fmt.Errorf("%s is missing from %q: run scripts/k8s-binaries.sh: %w", b, o.BinDir, err)
		}
	}
	// 0700: it holds the cluster's PKI, kubeconfigs and logs.
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("control plane dir: %w", err)
	}
	switch o.KubeletCgroupDriver {
	case "":
		o.KubeletCgroupDriver = "cgroupfs"
	case "cgroupfs", "systemd":
	default:
		return nil, fmt.Errorf("KubeletCgroupDriver %q: want cgroupfs or systemd", o.KubeletCgroupDriver)
	}
	if o.Port == 0 {
		if o.Port, err = freePort(); err != nil {
			return nil, err
		}
	}
	cp := &ControlPlane{Endpoint: fmt.Sprintf("127.0.0.1:%d", o.Port), Dir: o.Dir}
	if o.ServerURL == "" {
		o.ServerURL = "https://" + cp.Endpoint
	}
	if u, err := url.Parse(o.ServerURL); err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("ServerURL %q: want https://HOST:PORT", o.ServerURL)
	}
	cp.opts = o
	defer func() {
		if err != nil {
			cp.Stop()
		}
	}()
	began := time.Now()
	step := func(what string) {
		fmt.Fprintf(o.Log, "control plane: %s after %s\n", what, time.Since(began).Round(100*time.Millisecond))
	}

	pk, err := newPKI(filepath.Join(o.Dir, "pki"), []leaf{
		{name: "apiserver", cn: "kube-apiserver", sans: append(append([]string{}, apiserverSANs...), o.ExtraSANs...)},
		{name: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}},
		{name: "admin", cn: "kubernetes-admin", orgs: []string{"system:masters"}},
		{name: "controller-manager", cn: "system:kube-controller-manager"},
		// The API server's default RBAC binds this user to the
		// system:kube-scheduler and system:volume-scheduler roles.
		{name: "scheduler", cn: "system:kube-scheduler"},
	})
	if err != nil {
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
	schedulerConf := filepath.Join(o.Dir, "scheduler.conf")
	if err := pk.kubeconfig(schedulerConf, local, "scheduler"); err != nil {
		return nil, err
	}
	if cp.client, err = clientFor(pk.path("ca.crt"), pk.path("admin.crt"), pk.path("admin.key")); err != nil {
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
	// etcd as kubeadm runs it: TLS with client certificates of its own CA
	// on both ports. 127.0.0.1 is no boundary here: every lab node and Pod
	// reaches this host's loopback as 10.0.2.2.
	etcdPKI, err := newEtcdPKI(filepath.Join(o.Dir, "pki", "etcd"))
	if err != nil {
		return nil, err
	}
	cp.etcdURL = fmt.Sprintf("https://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("https://127.0.0.1:%d", etcdPeer)
	cp.etcdCA = etcdPKI.path("ca.crt")
	cp.etcd, err = start(o.Dir, "etcd", []string{filepath.Join(o.BinDir, "etcd"),
		"--name=default", "--data-dir=" + filepath.Join(o.Dir, "etcd"),
		"--listen-client-urls=" + cp.etcdURL, "--advertise-client-urls=" + cp.etcdURL,
		"--cert-file=" + etcdPKI.path("server.crt"), "--key-file=" + etcdPKI.path("server.key"),
		"--client-cert-auth=true", "--trusted-ca-file=" + cp.etcdCA,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--peer-cert-file=" + etcdPKI.path("peer.crt"), "--peer-key-file=" + etcdPKI.path("peer.key"),
		"--peer-client-cert-auth=true", "--peer-trusted-ca-file=" + cp.etcdCA,
		"--initial-cluster=default=" + peerURL, "--listen-metrics-urls=", "--log-level=warn",
	})
	if err != nil {
		return nil, err
	}
	etcdHealth, err := clientFor(cp.etcdCA, etcdPKI.path("healthcheck-client.crt"), etcdPKI.path("healthcheck-client.key"))
	if err != nil {
		return nil, err
	}
	etcdHealth.Timeout = 2 * time.Second
	if err := waitHTTP(ctx, cp.etcd, cp.etcdURL+"/health", etcdHealth, 30*time.Second); err != nil {
		return nil, err
	}
	step("etcd up")

	cp.apiserverArgs = []string{filepath.Join(o.BinDir, "kube-apiserver"),
		"--etcd-servers=" + cp.etcdURL,
		"--etcd-cafile=" + cp.etcdCA,
		"--etcd-certfile=" + etcdPKI.path("apiserver-etcd-client.crt"), "--etcd-keyfile=" + etcdPKI.path("apiserver-etcd-client.key"),
		// Loopback only: this host must not expose a cluster to its network.
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", o.Port),
		"--tls-cert-file=" + pk.path("apiserver.crt"), "--tls-private-key-file=" + pk.path("apiserver.key"),
		"--client-ca-file=" + pk.path("ca.crt"),
		"--kubelet-client-certificate=" + pk.path("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + pk.path("apiserver-kubelet-client.key"),
		"--service-account-key-file=" + pk.path("sa.pub"), "--service-account-signing-key-file=" + pk.path("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.96.0.0/12",
		"--authorization-mode=Node,RBAC", "--enable-bootstrap-token-auth", "--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true",
		// The kubernetes Service's endpoint would be 127.0.0.1, wrong for
		// anything but this host; nothing here uses it.
		"--endpoint-reconciler-type=none",
		// Else SIGTERM waits --request-timeout (60 s) for the controller
		// manager's watches to end; this way it closes them after 2 s.
		"--shutdown-send-retry-after=true",
	}
	if err := cp.StartAPIServer(ctx); err != nil {
		return nil, err
	}
	step("kube-apiserver ready")

	// The scheduler needs nothing kubeadm's phases make: it starts now and
	// takes its lease while they and the controller manager run.
	schedulerStarted := time.Now()
	cp.scheduler, err = start(o.Dir, "kube-scheduler", []string{filepath.Join(o.BinDir, "kube-scheduler"),
		"--kubeconfig=" + schedulerConf, "--authentication-kubeconfig=" + schedulerConf, "--authorization-kubeconfig=" + schedulerConf,
		// No HTTPS endpoint (0 turns it off in v1.33): readiness is its
		// lease, which is also what `joiner doctor` looks at.
		"--bind-address=127.0.0.1", "--secure-port=0",
		// Holds kube-system/kube-scheduler, as in a kubeadm cluster.
		"--leader-elect=true",
	})
	if err != nil {
		return nil, err
	}

	if err := cp.kubeadmPhases(ctx); err != nil {
		return nil, err
	}
	step("kubeadm phases done")

	// Started only now so that the bootstrapsigner's first signature is over
	// the final cluster-info (kubeadmPhases may rewrite its server).
	cp.kcmArgs = []string{filepath.Join(o.BinDir, "kube-controller-manager"),
		"--kubeconfig=" + kcmConf, "--authentication-kubeconfig=" + kcmConf, "--authorization-kubeconfig=" + kcmConf,
		"--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false",
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--cluster-signing-cert-file=" + pk.path("ca.crt"), "--cluster-signing-key-file=" + pk.path("ca.key"),
		"--root-ca-file=" + pk.path("ca.crt"), "--service-account-private-key-file=" + pk.path("sa.key"),
		"--use-service-account-credentials=true",
		// Else it creates /usr/libexec/kubernetes/kubelet-plugins on the host.
		"--flex-volume-plugin-dir=" + filepath.Join(o.Dir, "flexvolume"),
		// The default client limits (20 qps) throttle the start of its ~40
		// controllers, each of which first gets a service account: 4 s of
		// the bring-up, against ~1 s unthrottled.
		"--kube-api-qps=200", "--kube-api-burst=400",
	}
	cp.kcm, err = start(o.Dir, "kube-controller-manager", cp.kcmArgs)
	if err != nil {
		return nil, err
	}
	// Joinable means the bootstrapsigner has signed cluster-info for the
	// token kubeadm's bootstrap-token phase made.
	err = poll(ctx, cp.kcm, "signing cluster-info", time.Minute, func() (bool, error) {
		var cm struct{ Data map[string]string }
		if err := cp.api(ctx, http.MethodGet, "/api/v1/namespaces/kube-public/configmaps/cluster-info", "", nil, &cm); err != nil {
			return false, err
		}
		for k := range cm.Data {
			if strings.HasPrefix(k, "jws-kubeconfig-") {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	step("cluster-info signed")

	err = poll(ctx, cp.scheduler, "holding the lease "+SchedulerLease, time.Minute, func() (bool, error) {
		lease, err := cp.SchedulerLease(ctx)
		if err != nil {
			return false, err
		}
		return lease.HolderIdentity != "" && lease.RenewTime.After(schedulerStarted), nil
	})
	if err != nil {
		return nil, err
	}
	step("kube-scheduler leading: control plane up on " + cp.Endpoint)
	return cp, nil
}

// SchedulerLease is the Lease kube-scheduler holds while it leads.
const SchedulerLease = "kube-system/kube-scheduler"

// Lease is what SchedulerLease reads of a coordination.k8s.io/v1 Lease.
type Lease struct {
	HolderIdentity       string
	LeaseDurationSeconds int
	RenewTime            time.Time
}

// SchedulerLease reads the scheduler's lease.
func (cp *ControlPlane) SchedulerLease(ctx context.Context) (Lease, error) {
	var l struct {
		Spec struct {
			HolderIdentity       *string    `json:"holderIdentity"`
			LeaseDurationSeconds *int       `json:"leaseDurationSeconds"`
			RenewTime            *time.Time `json:"renewTime"` // RFC 3339 with microseconds
		} `json:"spec"`
	}
	ns, name, _ := strings.Cut(SchedulerLease, "/")
	if err := cp.api(ctx, http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/"+ns+"/leases/"+name, "", nil, &l); err != nil {
		return Lease{}, err
	}
	var out Lease
	if l.Spec.HolderIdentity != nil {
		out.HolderIdentity = *l.Spec.HolderIdentity
	}
	if l.Spec.LeaseDurationSeconds != nil {
		out.LeaseDurationSeconds = *l.Spec.LeaseDurationSeconds
	}
	if l.Spec.RenewTime != nil {
		out.RenewTime = *l.Spec.RenewTime
	}
	return out, nil
}

// clientFor is an HTTPS client trusting ca and presenting cert/key.
func clientFor(ca, cert, key string) (*http.Client, error) {
	caPEM, err := os.ReadFile(ca)
	if err != nil {
		return nil, fmt.Errorf("client %s: %w", cert, err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("client %s: %w", cert, err)
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}},
	}}, nil
}

// api calls the API server as the admin; out, if not nil, receives the
// JSON answer. An answer other than 2xx is an error carrying its body.
func (cp *ControlPlane) api(ctx context.Context, method, path, contentType string, body io.Reader, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "https://"+cp.Endpoint+path, body)
	if err != nil {
		return err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := cp.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return nil
}

// kubeadmConfig is what kubeadm's init phases read. kubeadm refuses a
// loopback advertiseAddress (it then looks for an interface and fails);
// the address is only recorded for the placeholder Node, never served on,
// so a TEST-NET-2 address stands in.
func kubeadmConfig(version string, port int, nodeName, controlPlaneEndpoint, certificatesDir, cgroupDriver string) string {
	return fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint: {advertiseAddress: 198.51.100.1, bindPort: %d}
nodeRegistration: {name: %s, criSocket: unix:///run/containerd/containerd.sock}
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: %s
controlPlaneEndpoint: %s
certificatesDir: %s
networking: {serviceSubnet: 10.96.0.0/12}
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: %s
# This host mounts cgroup v1 (a hybrid hierarchy); a kubelet of v1.35 or
# later refuses to start there unless told (KubeletConfiguration
# failCgroupV1, since v1.31; its default became true in v1.35). Guests
# that mount cgroup v2 are unaffected.
failCgroupV1: false
# kubeadm would derive this from certificatesDir, this host's scratch
# directory; every joining node has the CA where kubeadm join writes it.
authentication: {x509: {clientCAFile: /etc/kubernetes/pki/ca.crt}}
`, port, nodeName, version, controlPlaneEndpoint, certificatesDir, cgroupDriver)
}

// kubeadmPhases makes the cluster joinable with kubeadm's own phases: the
// kubeadm-config and kubelet-config ConfigMaps, cluster-info, the bootstrap
// RBAC and a first token.
func (cp *ControlPlane) kubeadmPhases(ctx context.Context) error {
	o := cp.opts
	serverURL, _ := url.Parse(o.ServerURL)
	const placeholder = "kubenode-control-plane"
	version, err := exec.CommandContext(ctx, filepath.Join(o.BinDir, "kubeadm"), "version", "-o", "short").Output()
	if err != nil {
		return fmt.Errorf("kubeadm version: %w", err)
	}
	cfg := filepath.Join(o.Dir, "kubeadm.yaml")
	if err := safefile.WriteFile(cfg, []byte(kubeadmConfig(strings.TrimSpace(string(version)), o.Port, placeholder, serverURL.Host, filepath.Join(o.Dir, "pki"), o.KubeletCgroupDriver)), 0o600); err != nil {
		return fmt.Errorf("kubeadm config: %w", err)
	}
	// upload-config kubelet annotates the control-plane Node and waits for
	// it (by its hostname label): give it one, deleted once done.
	node := fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":%q,"labels":{"kubernetes.io/hostname":%q}}}`, placeholder, placeholder)
	if err := cp.api(ctx, http.MethodPost, "/api/v1/nodes", "application/json", strings.NewReader(node), nil); err != nil {
		return fmt.Errorf("placeholder control-plane node: %w", err)
	}
	logPath := filepath.Join(o.Dir, "kubeadm.log")
	for _, phase := range [][]string{{"upload-config", "kubeadm"}, {"upload-config", "kubelet"}, {"bootstrap-token"}} {
		args := append(append([]string{"init", "phase"}, phase...), "--config", cfg, "--kubeconfig", cp.AdminKubeconfig)
		out, err := exec.CommandContext(ctx, filepath.Join(o.BinDir, "kubeadm"), args...).CombinedOutput()
		appendFile(logPath, fmt.Sprintf("$ kubeadm %s\n%s", strings.Join(args, " "), out))
		if err != nil {
			return fmt.Errorf("kubeadm %s: %w\n%s\nlast lines of %s:\n%s", strings.Join(args, " "), err, redactTokens(string(out)),
				cp.apiserver.log, tailFile(cp.apiserver.log, 20))
		}
	}
	if err := cp.api(ctx, http.MethodDelete, "/api/v1/nodes/"+placeholder, "", nil, nil); err != nil {
		return fmt.Errorf("deleting the placeholder node: %w", err)
	}
	// kubeadm copies the admin kubeconfig's server into cluster-info; nodes
	// are to use ServerURL.
	if o.ServerURL != "https://"+cp.Endpoint {
		ca, err := os.ReadFile(cp.CACert)
		if err != nil {
			return fmt.Errorf("cluster-info: %w", err)
		}
		kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: \"\"\n  cluster:\n    certificate-authority-data: %s\n    server: %s\ncontexts: null\ncurrent-context: \"\"\nusers: null\n",
			base64.StdEncoding.EncodeToString(ca), o.ServerURL)
		patch, _ := json.Marshal(map[string]any{"data": map[string]string{"kubeconfig": kc}})
		if err := cp.api(ctx, http.MethodPatch, "/api/v1/namespaces/kube-public/configmaps/cluster-info",
			"application/merge-patch+json", strings.NewReader(string(patch)), nil); err != nil {
			return fmt.Errorf("pointing cluster-info at %s: %w", o.ServerURL, err)
		}
	}
	return nil
}

// appendFile appends s to the log at path (mode 0600), bootstrap tokens'
// secrets redacted: kubeadm prints "Using token: <token>". A log it cannot
// open (a link planted at its name, say) is left unwritten.
func appendFile(path, s string) {
	f, err := safefile.OpenAppend(path, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	io.WriteString(f, redactTokens(s))
}

// bootstrapToken is a kubeadm bootstrap token, <id>.<secret>.
var bootstrapToken = regexp.MustCompile(`\b([a-z0-9]{6})\.[a-z0-9]{16}\b`)

// redactTokens replaces the secret of every bootstrap token in s, keeping
// its ID (which `kubeadm token list` shows).
func redactTokens(s string) string { return bootstrapToken.ReplaceAllString(s, "$1.<redacted>") }

// Kubectl runs kubectl with the admin kubeconfig and returns its output.
func (cp *ControlPlane) Kubectl(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	// Its discovery cache goes under Dir, not into ~/.kube/cache, where
	// every port would leave a directory behind.
	base := []string{"--kubeconfig", cp.AdminKubeconfig, "--cache-dir", filepath.Join(cp.Dir, "kubectl-cache")}
	cmd := exec.CommandContext(ctx, filepath.Join(cp.opts.BinDir, "kubectl"), append(base, args...)...)
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// StopAPIServer stops only kube-apiserver (etcd, the controller manager and
// the scheduler keep running), e.g. to see a joiner wait for it.
func (cp *ControlPlane) StopAPIServer() error {
	if cp.apiserver == nil || cp.apiserver.exited() {
		return fmt.Errorf("kube-apiserver is not running")
	}
	cp.apiserver.stop()
	return nil
}

// StartAPIServer starts kube-apiserver (again, with the same flags) and
// waits until it is ready.
func (cp *ControlPlane) StartAPIServer(ctx context.Context) error {
	if cp.apiserver != nil && !cp.apiserver.exited() {
		return fmt.Errorf("kube-apiserver is already running (PID %d)", cp.apiserver.cmd.Process.Pid)
	}
	p, err := start(cp.Dir, "kube-apiserver", cp.apiserverArgs)
	if err != nil {
		return err
	}
	cp.apiserver = p
	return waitHTTP(ctx, p, "https://"+cp.Endpoint+"/readyz", cp.client, time.Minute)
}

// RestartControllerManager stops kube-controller-manager and starts it
// again with the same flags. After a 20-second API server outage the
// running one signed a kubelet's TLS bootstrap CSR about a minute late
// here (kubeadm join waited 1m5s for it, against about 2 s otherwise;
// most likely its informers' retry backoff, not traced further). A control plane that comes up late, as kubeadm's static
// Pods do on a rebooted control-plane node, starts its controller manager
// with its API server instead.
func (cp *ControlPlane) RestartControllerManager() error {
	cp.kcm.stop()
	p, err := start(cp.Dir, "kube-controller-manager", cp.kcmArgs)
	if err != nil {
		return err
	}
	cp.kcm = p
	return nil
}

// Stop stops every process it started, by PID; it may be called more than once.
func (cp *ControlPlane) Stop() error {
	// The API server's clients first, so that none retries against it
	// while it shuts down; the scheduler releases its lease on the way out.
	cp.scheduler.stop()
	cp.kcm.stop()
	cp.apiserver.stop()
	cp.etcd.stop()
	return nil
}
