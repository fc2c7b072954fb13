package join

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/seed"
	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/skew"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"
)

// loadConfig assembles the configuration: --config alone, or the image's
// file, then the join seed disc when the token is still missing; flags last.
func loadConfig(ctx context.Context, d *data) error {
	o := d.opts
	cfg := config.New()
	if o.ConfigFile != "" {
		if err := cfg.MergeFile(o.ConfigFile); err != nil {
			return fmt.Errorf("--config: %w", err)
		}
		d.sources = append(d.sources, o.ConfigFile)
	} else {
		switch err := cfg.MergeFile(o.Paths.Config); {
		case err == nil:
			d.sources = append(d.sources, o.Paths.Config)
		case !errors.Is(err, os.ErrNotExist):
			return err
		}
		if cfg.Token == "" && (o.Overrides == nil || o.Overrides.Token == "") && !exists(o.Paths.KubeletConf) {
			timeout := config.DefaultSeedTimeout
			for _, layer := range []*config.Config{cfg, o.Overrides} {
				if layer != nil && layer.Timeouts.Seed != nil {
					timeout = layer.Timeouts.Seed.Duration
				}
			}
			fmt.Fprintf(o.Log, "[config] no token yet: waiting up to %s for the join seed disc (label %s)%s\n", timeout, config.SeedLabel, orSeedFile(o.Paths))
			seed, where, err := seed.Find(ctx, o.Paths, timeout, o.Log)
			if err != nil {
				return err
			}
			source := where + ":" + config.FileName
			if where == o.Paths.SeedFile {
				source = where
			}
			if err := cfg.MergeSeed(source, seed); err != nil {
				return err
			}
			d.sources = append(d.sources, where)
		}
	}
	if o.Overrides != nil {
		flags, err := yaml.Marshal(o.Overrides)
		if err != nil {
			return err
		}
		if err := cfg.Merge("flags", flags); err != nil {
			return err
		}
		d.sources = append(d.sources, "flags")
	}
	host, err := o.Hostname()
	if err != nil {
		return fmt.Errorf("reading the host name: %w", err)
	}
	cfg.SetDefaults(host, config.DefaultCRISocket)
	// A joined node has no token left: check the rest.
	validate := cfg.Validate
	if exists(o.Paths.KubeletConf) {
		validate = cfg.ValidateNode
	}
	if err := validate(); err != nil {
		return fmt.Errorf("the join configuration (from %s) is invalid: %w", strings.Join(d.sources, ", "), err)
	}
	d.cfg = cfg
	fmt.Fprintf(o.Log, "[config] node %s joins %s (configuration from %s)\n", cfg.NodeName, cfg.APIServerEndpoint, strings.Join(d.sources, ", "))
	if cfg.UnsafeSkipCAVerification {
		fmt.Fprintf(o.Log, "[config] WARNING: unsafeSkipCAVerification is set: the cluster CA is NOT pinned, and whoever answers on %s can take this node.\n", cfg.APIServerEndpoint)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// checkJoined: kubelet.conf exists and the API server knows this Node.
func checkJoined(ctx context.Context, d *data) error {
	path := d.opts.Paths.KubeletConf
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	client, err := nodeClient(d)
	if err != nil {
		return err
	}
	err = poll(ctx, d, d.cfg.Timeouts.Discovery.Duration, func(ctx context.Context) error {
		_, err := client.CoreV1().Nodes().Get(ctx, d.cfg.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return permanent(err)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("%s exists but Node %s could not be confirmed in the cluster: %w; "+
			"if this node was removed or belongs to another cluster, run `kubeadm reset -f` and run the joiner again",
			path, d.cfg.NodeName, err)
	}
	d.joined = true
	return nil
}

// nodeClient is a client with the node's own credentials (kubelet.conf).
func nodeClient(d *data) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", d.opts.Paths.KubeletConf)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", d.opts.Paths.KubeletConf, err)
	}
	rc.Timeout = 15 * time.Second
	return d.opts.NewClient(rc)
}

const (
	hostsBegin = "# BEGIN kubenode-joiner extraHosts"
	hostsEnd   = "# END kubenode-joiner extraHosts"
)

// writeHosts keeps one managed block in the hosts file; the file is written
// only when the block changes.
func writeHosts(_ context.Context, d *data) error {
	path := d.opts.Paths.Hosts
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	updated := HostsWithEntries(string(old), d.cfg.ExtraHosts)
	if updated == string(old) {
		return nil
	}
	if err := os.WriteFile(path, []byte(updated), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(d.opts.Log, "[hosts] wrote %d entries to %s\n", len(d.cfg.ExtraHosts), path)
	return nil
}

// HostsWithEntries returns hosts with the joiner's block replaced by
// entries (or removed when there are none), keeping its line endings.
func HostsWithEntries(hosts string, entries []corev1.HostAlias) string {
	eol := "\n"
	if strings.Contains(hosts, "\r\n") {
		eol = "\r\n"
	}
	var kept []string
	inBlock := false
	for _, line := range strings.SplitAfter(hosts, "\n") {
		trimmed := strings.TrimRight(line, "\r\n")
		switch {
		case trimmed == hostsBegin:
			inBlock = true
		case trimmed == hostsEnd:
			inBlock = false
		case !inBlock && line != "":
			kept = append(kept, line)
		}
	}
	out := strings.Join(kept, "")
	if len(entries) == 0 {
		return out
	}
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += eol
	}
	out += hostsBegin + eol
	for _, e := range entries {
		out += e.IP + " " + strings.Join(e.Hostnames, " ") + eol
	}
	return out + hostsEnd + eol
}

// preflight checks what kubeadm's own preflight would find late or
// explain less well.
func preflight(ctx context.Context, d *data) error {
	var problems []error
	h := d.opts.Host
	if err := h.DialCRI(ctx, d.cfg.CRISocket); err != nil {
		problems = append(problems, fmt.Errorf("container runtime at %s (criSocket) does not answer: %w; start containerd", d.cfg.CRISocket, err))
	}
	if err := h.Preflight(d.cfg); err != nil {
		problems = append(problems, err)
	}
	kubelet, kubeadm := d.cfg.KubeletPath, d.cfg.KubeadmPath
	if kubelet == "" {
		kubelet = "kubelet"
	}
	if kubeadm == "" {
		kubeadm = "kubeadm"
	}
	server := d.serverVersion
	if out, err := versionOutput(ctx, h, d.opts.Env, kubelet, "--version"); err != nil {
		problems = append(problems, fmt.Errorf("kubelet: %w (kubenode-bake installs it)", err))
	} else if err := skew.Kubelet.Check(strings.TrimPrefix(out, "Kubernetes "), server); err != nil {
		problems = append(problems, err)
	}
	// kubeadm's version also decides the JoinConfiguration's API.
	if v, err := KubeadmVersion(ctx, h, d.opts.Env, kubeadm); err != nil {
		problems = append(problems, err)
	} else if err := skew.Kubeadm.Check("v"+v.String(), server); err != nil {
		problems = append(problems, err)
	} else if api, err := KubeadmAPIFor(v); err != nil {
		problems = append(problems, err)
	} else {
		d.kubeadmVersion, d.kubeadmAPI = v, &api
	}
	return errors.Join(problems...)
}

// writeKubeadmConfig writes kubeadm's JoinConfiguration in the API read by
// the kubeadm preflight found (mode 0600: it holds the token).
func writeKubeadmConfig(_ context.Context, d *data) error {
	if d.kubeadmAPI == nil {
		return errors.New("kubeadm's version is not known: the preflight phase did not run")
	}
	data, err := RenderKubeadmJoinConfiguration(d.cfg, *d.kubeadmAPI)
	if err != nil {
		return err
	}
	d.kubeadmFlags = KubeletRegistrationFlags(d.cfg)
	if err := config.WriteFileAtomic(d.opts.Paths.KubeadmConfig, data, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(d.opts.Log, "[kubeadm-config] wrote %s: a %s JoinConfiguration, for kubeadm v%s\n",
		d.opts.Paths.KubeadmConfig, d.kubeadmAPI.GroupVersion, d.kubeadmVersion)
	if note := tlsBootstrapNote(d.cfg, *d.kubeadmAPI, d.kubeadmVersion); note != "" {
		fmt.Fprintf(d.opts.Log, "[kubeadm-config] NOTE: %s\n", note)
	}
	return nil
}

// KubeletRegistrationFlags are the flags the kubelet must have at its
// first start so the Node registers with its name, labels and taints.
func KubeletRegistrationFlags(cfg *config.Config) []string {
	flags := []string{"--hostname-override=" + cfg.NodeName}
	if labels := labelList(cfg.Labels); labels != "" {
		flags = append(flags, "--node-labels="+labels)
	}
	if len(cfg.Taints) > 0 {
		var ts []string
		for _, t := range cfg.Taints {
			ts = append(ts, t.ToString())
		}
		flags = append(flags, "--register-with-taints="+strings.Join(ts, ","))
	}
	for _, a := range cfg.KubeletExtraArgs {
		flags = append(flags, "--"+a.Name+"="+a.Value)
	}
	return flags
}

func labelList(labels map[string]string) string {
	var parts []string
	for k, v := range labels {
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func prepareKubelet(ctx context.Context, d *data) error {
	return d.opts.Host.PrepareKubelet(ctx, d.kubeadmFlags)
}

// kubeadmJoin runs kubeadm join with the written configuration. On failure
// the configuration (with its token) is removed.
func kubeadmJoin(ctx context.Context, d *data) error {
	kubeadm := d.cfg.KubeadmPath
	if kubeadm == "" {
		kubeadm = "kubeadm"
	}
	tail := &tailWriter{max: 30}
	w := io.MultiWriter(d.opts.Log, tail)
	err := d.opts.Host.Run(ctx, d.opts.Env, w, kubeadm, "join", "--config", d.opts.Paths.KubeadmConfig)
	// Whatever kubeadm returned, its copy of the token has served: a later
	// phase may fail, and a node that has joined is not joined again.
	if rmErr := os.Remove(d.opts.Paths.KubeadmConfig); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		fmt.Fprintf(d.opts.Log, "[kubeadm-join] WARNING: could not remove %s, which holds the token: %v; delete it\n", d.opts.Paths.KubeadmConfig, rmErr)
	}
	if err != nil {
		return fmt.Errorf("`%s join --config %s` failed: %w\nlast lines of its output:\n%s\n"+
			"fix the cause above, run `kubeadm reset -f`, then run the joiner again", kubeadm, d.opts.Paths.KubeadmConfig, err, tail)
	}
	// The node has joined: from here on the kubelet's own credentials are
	// used, so the token goes now. On Linux the first-boot unit never runs
	// again once kubelet.conf exists, so a later phase that fails must not
	// leave it behind. cleanup tries again for what could not be removed.
	for _, err := range scrubTokens(d, "kubeadm-join") {
		fmt.Fprintf(d.opts.Log, "[kubeadm-join] WARNING: %v\n", err)
	}
	return nil
}

// restartKubelet gives the kubelet service kubeadm's flags, then ours. On
// a node that is already a member it does so only when the service lacks
// them: an earlier run that stopped between kubeadm-join and this phase.
func restartKubelet(ctx context.Context, d *data) error {
	var flags []string
	env, err := os.ReadFile(d.opts.Paths.KubeadmFlags)
	switch {
	case err == nil:
		if flags, err = units.ParseKubeadmFlags(string(env)); err != nil {
			return fmt.Errorf("%s: %w", d.opts.Paths.KubeadmFlags, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	if d.kubeadmFlags == nil {
		d.kubeadmFlags = KubeletRegistrationFlags(d.cfg)
	}
	// kubeadm's flags, then ours: our name, labels and taints win.
	if env != nil {
		flags = append(flags, d.kubeadmFlags...)
	}
	if d.joined {
		has, err := d.opts.Host.KubeletHasFlags(ctx, flags)
		if err != nil {
			return fmt.Errorf("reading the kubelet service's flags: %w", err)
		}
		if has {
			return nil
		}
		fmt.Fprintf(d.opts.Log, "[kubelet-service] the kubelet service lacks the flags of %s (an earlier run stopped before applying them): applying them\n", d.opts.Paths.KubeadmFlags)
		d.finished = append(d.finished, "kubeadm's flags applied to the kubelet service")
	}
	return d.opts.Host.RestartKubelet(ctx, flags)
}

// waitReady polls the Node with the node's own credentials, printing its
// conditions whenever they change and when the wait times out.
func waitReady(ctx context.Context, d *data) error {
	client, err := nodeClient(d)
	if err != nil {
		return err
	}
	var last string
	var node *corev1.Node
	err = pollEvery(ctx, min(d.opts.Interval, ReadyInterval), d.cfg.Timeouts.NodeReady.Duration, func(ctx context.Context) error {
		n, err := client.CoreV1().Nodes().Get(ctx, d.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node = n
		if s := Conditions(n); s != last {
			fmt.Fprintf(d.opts.Log, "[node-ready] %s: %s\n", n.Name, s)
			last = s
		}
		if !IsReady(n) {
			return errors.New("not Ready")
		}
		return nil
	})
	if err != nil {
		state := "never registered"
		if node != nil {
			state = Conditions(node)
		}
		return fmt.Errorf("Node %s is not Ready after %s (%s): %w; run `joiner doctor --node %s` with an admin kubeconfig and read the kubelet's log",
			d.cfg.NodeName, d.cfg.Timeouts.NodeReady.Duration, state, err, d.cfg.NodeName)
	}
	return nil
}

// IsReady reports the Node's Ready condition.
func IsReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Conditions renders a Node's conditions on one line, Ready first.
func Conditions(n *corev1.Node) string {
	if len(n.Status.Conditions) == 0 {
		return "no conditions yet"
	}
	conds := slices.Clone(n.Status.Conditions)
	slices.SortStableFunc(conds, func(a, b corev1.NodeCondition) int {
		if a.Type == corev1.NodeReady {
			return -1
		}
		if b.Type == corev1.NodeReady {
			return 1
		}
		return strings.Compare(string(a.Type), string(b.Type))
	})
	var parts []string
	for _, c := range conds {
		s := fmt.Sprintf("%s=%s", c.Type, c.Status)
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue && c.Message != "" {
			s += " (" + c.Reason + ": " + c.Message + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// ensureRegistration sets missing labels with the node's own credentials
// (NodeRestriction allows a kubelet its own labels, not taints) and
// checks the taints registered.
func ensureRegistration(ctx context.Context, d *data) error {
	client, err := nodeClient(d)
	if err != nil {
		return err
	}
	var missingTaints []string
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, d.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		missingTaints = nil
		for _, t := range d.cfg.Taints {
			if !slices.ContainsFunc(n.Spec.Taints, func(have corev1.Taint) bool { return have.MatchTaint(&t) && have.Value == t.Value }) {
				missingTaints = append(missingTaints, t.ToString())
			}
		}
		changed := false
		for k, v := range d.cfg.Labels {
			if n.Labels[k] != v {
				if n.Labels == nil {
					n.Labels = map[string]string{}
				}
				n.Labels[k] = v
				changed = true
			}
		}
		if !changed {
			return nil
		}
		_, err = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		if err == nil {
			fmt.Fprintf(d.opts.Log, "[node-registration] labels set on %s\n", n.Name)
			if d.joined {
				d.finished = append(d.finished, "labels set")
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("setting labels on Node %s: %w", d.cfg.NodeName, err)
	}
	if len(missingTaints) > 0 {
		return fmt.Errorf("Node %s registered without taints %s (a kubelet may not add taints to itself later); "+
			"add them with `kubectl taint node %s ...` using an admin credential", d.cfg.NodeName, strings.Join(missingTaints, ", "), d.cfg.NodeName)
	}
	return nil
}

// cleanup removes the token from every file the joiner wrote or read and
// can write, and disables the first-boot service. It also runs on a node
// that is already a member: an earlier run may have joined and then failed
// (node-ready timed out) before it could clean up.
func cleanup(_ context.Context, d *data) error {
	var errs []error
	switch err := os.Remove(d.opts.Paths.KubeadmConfig); {
	case err == nil:
		d.scrubbed = append(d.scrubbed, d.opts.Paths.KubeadmConfig)
		fmt.Fprintf(d.opts.Log, "[cleanup] removed %s, which held the token\n", d.opts.Paths.KubeadmConfig)
	case !errors.Is(err, os.ErrNotExist):
		errs = append(errs, err)
	}
	errs = append(errs, scrubTokens(d, "cleanup")...)
	for _, s := range d.sources {
		if s != "flags" && s != d.opts.ConfigFile && s != d.opts.Paths.Config && s != d.opts.Paths.SeedFile {
			fmt.Fprintf(d.opts.Log, "[cleanup] the seed disc %s still holds the (now used) token: detach it from the VM\n", s)
		}
	}
	if err := d.opts.Host.DisableFirstBoot(); err != nil {
		errs = append(errs, fmt.Errorf("disabling the first-boot service: %w", err))
	}
	return errors.Join(errs...)
}

// orSeedFile names the seed file the joiner also looks for, if any.
func orSeedFile(p config.Paths) string {
	if p.SeedFile == "" {
		return ""
	}
	return " or the join seed file " + p.SeedFile
}

// scrubTokens removes the token from the configuration files this run read
// (the image's and --config's) and removes the join seed file; it records
// and logs each file it changed.
func scrubTokens(d *data, phase string) []error {
	var errs []error
	if f := d.opts.Paths.SeedFile; f != "" {
		switch err := os.Remove(f); {
		case err == nil:
			d.scrubbed = append(d.scrubbed, f)
			fmt.Fprintf(d.opts.Log, "[%s] removed the join seed file %s, which held the token\n", phase, f)
		case !errors.Is(err, os.ErrNotExist):
			errs = append(errs, fmt.Errorf("removing the join seed file: %w", err))
		}
	}
	for _, path := range []string{d.opts.ConfigFile, d.opts.Paths.Config} {
		if path == "" || !slices.Contains(d.sources, path) {
			continue
		}
		switch had, err := scrubToken(path); {
		case err != nil:
			errs = append(errs, fmt.Errorf("removing the token from %s: %w", path, err))
		case had:
			d.scrubbed = append(d.scrubbed, path)
			fmt.Fprintf(d.opts.Log, "[%s] removed the token from %s\n", phase, path)
		}
	}
	return errs
}

// scrubToken removes the token from the configuration file at path and
// says whether there was one.
func scrubToken(path string) (bool, error) {
	c := config.New()
	if err := c.MergeFile(path); err != nil {
		return false, err
	}
	if c.Token == "" {
		return false, nil
	}
	c.Token = ""
	return true, c.WriteFile(path)
}

// ReadyInterval is how often the Node is read while waiting for Ready: a
// GET is cheap, and the join is done the moment the Node is Ready.
var ReadyInterval = 250 * time.Millisecond

// poll retries fn every Interval until it succeeds, returns a permanent
// error, or timeout passes; the last error is returned.
func poll(ctx context.Context, d *data, timeout time.Duration, fn func(context.Context) error) error {
	return pollEvery(ctx, d.opts.Interval, timeout, fn)
}

func pastDeadline(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ctx.Err() != nil || ok && !time.Now().Before(d)
}

func pollEvery(ctx context.Context, interval, timeout time.Duration, fn func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		err := fn(ctx)
		if err == nil {
			return true, nil
		}
		// An attempt cut short by the wait's own deadline says nothing
		// about the cluster: keep the error before it. (The deadline may
		// have passed before ctx says so.)
		if !pastDeadline(ctx) || last == nil {
			last = err
		}
		if isPermanent(err) {
			return false, err
		}
		return false, nil
	})
	if err != nil && last != nil {
		if isPermanent(err) {
			return errors.Unwrap(err)
		}
		return fmt.Errorf("gave up after %s: %w", timeout, last)
	}
	return err
}

func isLoopback(serverURL string) bool {
	u, err := url.Parse(serverURL)
	if err != nil {
		return false
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}

// tailWriter keeps the last max lines written to it.
type tailWriter struct {
	max   int
	lines []string
	part  bytes.Buffer
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.part.Write(p)
	for {
		line, err := t.part.ReadString('\n')
		if err != nil {
			t.part.WriteString(line)
			break
		}
		t.lines = append(t.lines, strings.TrimRight(line, "\r\n"))
		if len(t.lines) > t.max {
			t.lines = t.lines[1:]
		}
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	lines := t.lines
	if t.part.Len() > 0 {
		lines = append(slices.Clone(lines), t.part.String())
	}
	return "  " + strings.Join(lines, "\n  ")
}
