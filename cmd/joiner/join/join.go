// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package join brings this machine into a kubeadm cluster: the `joiner join`
// command run by the node's first-boot service. It is a linear list of
// phases (see Phases); each checks before it acts, so running it again on a
// joined node changes nothing.
//
// Each group of phases has a file of its own: phases_config.go (config,
// already-joined), phases_discovery.go, phases_hosts.go,
// phases_preflight.go, phases_kubeadm.go (kubeadm-config, kubeadm-join),
// phases_kubelet.go (kubelet-prepare, kubelet-service), phases_node.go
// (node-ready, node-registration) and phases_cleanup.go. What they share:
// poll.go (the waits), kubeadm.go (kubeadm's configuration APIs), clock.go
// (the clock-skew check of discovery), and the Host each OS provides in
// host_other.go and host_windows.go.
package join

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/phases"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Options are what the command line gives a join.
type Options struct {
	// ConfigFile is --config; empty means the image's config file (if any)
	// merged with the join seed disc's.
	ConfigFile string
	// Overrides are the flags' values, merged last.
	Overrides *config.Config
	Paths     config.Paths
	// Log receives progress (stderr and the log file).
	Log io.Writer
	// Env is the environment kubeadm runs with (nil: the joiner's own).
	Env []string
	// Hostname is the machine's name (os.Hostname by default).
	Hostname func() (string, error)
	// NewClient builds an API client (tests inject a fake clientset).
	NewClient func(*rest.Config) (kubernetes.Interface, error)
	// Interval is how often waits poll.
	Interval time.Duration
	// OS hooks; the defaults are this OS's (host_other.go, host_windows.go).
	Host Host
}

// Host is what a join does to the machine beyond files: checks, running
// programs and services. Its default is per OS; tests replace it.
type Host interface {
	// Preflight checks the OS-specific prerequisites (swap off on Linux).
	Preflight(cfg *config.Config) error
	// DialCRI checks the container runtime endpoint answers.
	DialCRI(ctx context.Context, endpoint string) error
	// Output runs `path args...` and returns its trimmed stdout.
	Output(ctx context.Context, env []string, path string, args ...string) (string, error)
	// Run runs a program, streaming its output to w.
	Run(ctx context.Context, env []string, w io.Writer, path string, args ...string) error
	// PrepareKubelet (Windows) gives the kubelet service the flags it must
	// register with before kubeadm starts it; a no-op on Linux, where
	// kubeadm's drop-in reads kubeadm-flags.env.
	PrepareKubelet(ctx context.Context, flags []string) error
	// RestartKubelet (Windows) re-registers the kubelet service with
	// kubeadm's flags and starts containerd, then the kubelet.
	RestartKubelet(ctx context.Context, flags []string) error
	// KubeletHasFlags (Windows) says whether the kubelet service is
	// registered with exactly these flags; true on Linux, where kubeadm's
	// drop-in reads kubeadm-flags.env.
	KubeletHasFlags(ctx context.Context, flags []string) (bool, error)
	// DisableFirstBoot turns off the joiner's first-boot service.
	DisableFirstBoot() error
}

// data is what phases share.
type data struct {
	opts    Options
	cfg     *config.Config
	sources []string // where the configuration came from, in merge order
	// joined: already a member; the phases that join are skipped, those
	// that verify (kubelet-service, node-ready, node-registration) check
	// and finish what an earlier run left undone.
	joined bool
	// finished is what this run finished on a node that was a member.
	finished []string
	// scrubbed are the files cleanup removed a token from.
	scrubbed []string

	ca            []*x509.Certificate
	caPEM         []byte
	serverURL     string
	serverVersion *version.Info
	kubeadmFlags  []string // the kubelet flags kubeadm will write (labels, taints, name)
	// kubeadmVersion is the node's kubeadm's, and kubeadmAPI the
	// JoinConfiguration API it reads (set by preflight).
	kubeadmVersion *utilversion.Version
	kubeadmAPI     *KubeadmAPI
}

// Phases are the join's phases, in order.
func Phases() []phases.Phase[*data] {
	notJoined := func(d *data) bool { return !d.joined }
	return []phases.Phase[*data]{
		{Name: "config", Help: "assemble and validate the join configuration", Run: loadConfig},
		{Name: "already-joined", Help: "check whether this node is already a member", Run: checkJoined},
		{Name: "discovery", Help: "fetch cluster-info, check the token's signature and the CA pin", Run: discover, RunIf: notJoined},
		// After discovery: a hosts entry redirects every program on the
		// node, so it is written only for a cluster the pin verified.
		{Name: "hosts", Help: "write extra hosts entries", Run: writeHosts, RunIf: notJoined},
		{Name: "preflight", Help: "check the runtime, kubelet and kubeadm", Run: preflight, RunIf: notJoined},
		{Name: "kubeadm-config", Help: "write kubeadm's JoinConfiguration", Run: writeKubeadmConfig, RunIf: notJoined},
		{Name: "kubelet-prepare", Help: "register the kubelet service's flags (Windows)", Run: prepareKubelet, RunIf: notJoined},
		{Name: "kubeadm-join", Help: "run kubeadm join", Run: kubeadmJoin, RunIf: notJoined},
		{Name: "kubelet-service", Help: "apply kubeadm-flags.env to the kubelet service (Windows)", Run: restartKubelet},
		{Name: "node-ready", Help: "wait for the Node to be Ready", Run: waitReady},
		{Name: "node-registration", Help: "check the Node's labels and taints", Run: ensureRegistration},
		{Name: "cleanup", Help: "remove the token from disk, disable the first-boot service", Run: cleanup},
	}
}

// Run joins this machine. It returns nil when the node is (already) a
// Ready member of the cluster.
func Run(ctx context.Context, opts Options) error {
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	if opts.Hostname == nil {
		opts.Hostname = os.Hostname
	}
	if opts.NewClient == nil {
		opts.NewClient = func(c *rest.Config) (kubernetes.Interface, error) { return kubernetes.NewForConfig(c) }
	}
	if opts.Interval == 0 {
		opts.Interval = 2 * time.Second
	}
	if opts.Host == nil {
		opts.Host = defaultHost()
	}
	r := phases.Runner[*data]{Phases: Phases(), Out: opts.Log}
	d := &data{opts: opts}
	if err := r.Run(ctx, d); err != nil {
		return err
	}
	switch {
	case d.joined && (len(d.scrubbed) > 0 || len(d.finished) > 0):
		done := slices.Clone(d.finished)
		if len(d.scrubbed) > 0 {
			done = append(done, "removed the token an earlier run left on disk")
		}
		fmt.Fprintf(opts.Log, "node %s is already a member of the cluster and is Ready: %s\n", d.cfg.NodeName, strings.Join(done, "; "))
	case d.joined:
		fmt.Fprintf(opts.Log, "node %s is already a member of the cluster and is Ready: nothing changed\n", d.cfg.NodeName)
	default:
		fmt.Fprintf(opts.Log, "node %s joined the cluster and is Ready\n", d.cfg.NodeName)
	}
	return nil
}
