// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package lab runs the whole chain kubenode exists for, on one machine:
// build a node image with packer (kubenode-libvirt → kubenode-bake →
// kubenode-export) with the lab's own container images preloaded, start a
// control plane (or use the user's cluster), make a join seed per node with
// `joiner token`, boot one or more VMs from the image under libvirt, wait
// until their Nodes are Ready and run a Job on each. `make lab` (cmd/lab)
// runs it for a user; `make e2e` runs it as a test with assertions.
//
// Everything Up starts is recorded and undone by Close in reverse order, so
// a failed or interrupted run leaves no domain, pool, process or temporary
// file behind; only the built image stays, in Options.ImageDir.
package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// Options configure a lab run. Every path must exist unless it says
// otherwise; cmd/lab fills them from the project's scripts.
type Options struct {
	Root          string // repository root: scripts/ and the template live here
	Template      string // the packer template (default examples/debian-12-node.pkr.hcl)
	Packer        string // the packer binary
	Plugin        string // this plugin's binary, installed into a private plugin directory
	Joiner        string // the linux/amd64 joiner: baked into the image, and run here for token/doctor
	KubernetesDir string // kubelet, kubeadm, kubectl (and the control plane's binaries)
	BaseDisk      string // the Debian 12 base disk the image starts from
	// ImageDir receives the exported image, its checksum and manifest;
	// it is kept after Close.
	ImageDir string
	// SkipBuild boots the image an earlier run left in ImageDir (found
	// through its manifest) instead of running packer.
	SkipBuild bool
	// WorkDir holds everything else (plugin directory, control plane, seeds,
	// the nodes' disk overlays, SSH key); Close removes it.
	WorkDir string
	// Kubeconfig is the user's own cluster (cmd/lab's -kubeconfig; never
	// taken from $KUBECONFIG); empty starts a local control plane on
	// 127.0.0.1, which the guest reaches as 10.0.2.2.
	Kubeconfig  string
	Accelerator string            // "tcg" (default) or "kvm"
	Labels      map[string]string // node labels asked for with `joiner token --label` (joiner bootstrap only)
	// Bootstrap is how the nodes join: BootstrapJoiner (default: the
	// image's joiner reads a join seed disc that `joiner token` wrote) or
	// BootstrapClusterAPI (the image's cloud-init runs the kubeadm
	// bootstrap data Cluster API's kubeadm bootstrap provider would give a
	// worker Machine, rendered by CAPIRender, from a NoCloud disc on the
	// odd nodes and a config drive on the even ones).
	Bootstrap string
	// CAPIRender is kubenode-capi-render (make capi-render), which renders
	// that bootstrap data with Cluster API's own code; BootstrapClusterAPI
	// only.
	CAPIRender string
	// NodeDisks names, per node, a disk image that node boots instead of
	// the built image (the qcow2 taken out of the image's containerDisk,
	// say); an empty or missing entry boots the built image.
	NodeDisks []string
	// Nodes is how many VMs boot from the image, side by side, each with
	// its own join seed (default 1).
	Nodes int
	// CPUs is each node's vCPU count (1 to 8). Zero picks it: 2 under
	// KVM; under TCG, 2 while this host has 2 cores for each node and 1
	// beyond that, since TCG guests whose vCPUs outnumber the host's
	// cores boot slower than with fewer vCPUs (a vCPU thread preempted
	// while it holds a guest spinlock leaves the others spinning).
	CPUs int
	// Releases are the release files a mirror serves the build, the
	// templates' containerd tarball path; with them the default template
	// is the production example (examples/debian-12-cloud-node.pkr.hcl),
	// for which BaseDisk stands in for the cloud image. Without them only
	// a template that installs nothing from release downloads builds.
	Releases *Releases
	// JoinSeedOnlyNodes is how many of the nodes, the last ones, boot
	// with their join seed disc alone (0, the default: none; Nodes: all):
	// no cloud-init seed names them or lets the lab in, so their host
	// names, and the node names the joiner gives them, are the clones'
	// own. The lab finds their Nodes by the label LabVMLabel and reads
	// nothing from them over SSH (Node.JoinSeedOnly).
	JoinSeedOnlyNodes int
	// ClusterCNI deploys, before the nodes boot, a CNI of the lab's own as
	// a cluster's CNI would come: a DaemonSet of the lab's busybox image
	// that writes a bridge configuration on each node. For images baked
	// with cni = "none".
	ClusterCNI bool
	// ReadyTimeout bounds the wait from boot to a Ready, labelled Node
	// (default 20m: TCG is slow).
	ReadyTimeout time.Duration
	Out          io.Writer // progress; nil discards it
}

// Lab is a running lab: a cluster and the nodes booted from the built
// image, each of which ran a Job.
type Lab struct {
	opts Options

	Image      string // the exported image
	Manifest   string // its kubenode-manifest.json
	Kubeconfig string // admin kubeconfig of the cluster the nodes joined
	Nodes      []*Node
	// WorkloadImage is the image the Jobs ran: the lab's busybox image,
	// found among the image's preloaded ones.
	WorkloadImage string
	Jobs          []JobResult // one per node, in the order of Nodes
	// ImageBuild is how long packer took (zero with SkipBuild).
	ImageBuild time.Duration

	id    string // names the lab's nodes and storage pool
	began time.Time
	vms   vms // what boot needs to boot another VM
	extra int // VMs BootClusterAPINode booted
	// kubernetesVersion is what the image baked (its manifest).
	kubernetesVersion string
	mu                sync.Mutex
	undo              []undoStep
	kubectl           string
	closeErr          error
	closed            bool
}

type undoStep struct {
	what string
	fn   func() error
}

// stage is one step of the chain, shown with its elapsed time.
type stage struct {
	name string
	run  func(context.Context) error
}

// Up runs the chain up to a Ready node. On an error (or when ctx is
// cancelled, e.g. by Ctrl-C) it tears down what it started and returns
// the error.
func Up(ctx context.Context, o Options) (*Lab, error) {
	l, err := Start(ctx, o)
	if err != nil {
		return nil, err
	}
	if err := l.Finish(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// Start runs the chain until the nodes' VMs have started: image, cluster,
// seeds, boot. Finish waits for them and runs the rest; in between, more
// VMs may be booted into the lab (BootClusterAPINode).
func Start(ctx context.Context, o Options) (*Lab, error) {
	return start(ctx, o, func(l *Lab) []stage {
		return []stage{
			{"libvirtd", l.libvirtd},
			{"image", l.buildImage},
			{"cluster", l.cluster},
			{"cni", l.clusterCNI},
			{"doctor", l.doctor},
			{"seed", l.seed},
			{"boot", l.boot},
		}
	})
}

// Finish waits until the nodes Start booted are Ready (with Cluster API's
// bootstrap, checks its sentinel and removes its uninitialized taint) and
// runs a Job on each. On an error it tears the lab down.
func (l *Lab) Finish(ctx context.Context) error {
	stages := []stage{{"ready", l.waitReady}}
	if l.opts.Bootstrap == BootstrapClusterAPI {
		// Cluster API's check that the bootstrap ran, then what its
		// Machine controller does once the Node is up.
		stages = append(stages, stage{"initialize", l.initializeNodes})
	}
	return l.run(ctx, append(stages, stage{"workload", l.runJobs}))
}

// BuildImage runs the chain's build alone: packer builds the template
// into Options.ImageDir, which is kept; everything else it started is torn
// down. It returns the image and its manifest.
func BuildImage(ctx context.Context, o Options) (image, manifest string, err error) {
	l, err := start(ctx, o, func(l *Lab) []stage {
		return []stage{{"libvirtd", l.libvirtd}, {"image", l.buildImage}}
	})
	if err != nil {
		return "", "", err
	}
	return l.Image, l.Manifest, l.Close()
}

// start runs the stages stagesOf gives, tearing down what they started on
// an error or cancellation.
func start(ctx context.Context, o Options, stagesOf func(*Lab) []stage) (l *Lab, err error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	l = &Lab{opts: o, id: randomSuffix(), began: time.Now(), kubectl: filepath.Join(o.KubernetesDir, "kubectl")}
	defer func() {
		if err != nil {
			l = nil
		}
	}()
	// 0700, as the default one from os.MkdirTemp: it holds the control
	// plane's PKI, the bootstrap tokens' seeds and the logs.
	if err := os.MkdirAll(o.WorkDir, 0o700); err != nil {
		l.Close()
		return l, fmt.Errorf("work dir: %w", err)
	}
	l.onClose("removing "+o.WorkDir, func() error { return os.RemoveAll(o.WorkDir) })
	return l, l.run(ctx, stagesOf(l))
}

// run runs stages in order; on an error or cancellation it tears the lab
// down and returns the error.
func (l *Lab) run(ctx context.Context, stages []stage) error {
	for _, s := range stages {
		began := time.Now()
		l.say("==> %s", s.name)
		if err := s.run(ctx); err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("%s: interrupted: %w", s.name, ctx.Err())
				l.say("interrupted: tearing down")
			} else {
				err = fmt.Errorf("%s: %w", s.name, err)
			}
			l.Close()
			return err
		}
		l.say("<== %s done in %s", s.name, time.Since(began).Round(100*time.Millisecond))
	}
	return nil
}

// NodeCPUs is the vCPU count each of nodes VMs gets when Options.CPUs is
// zero, on a host with cores cores: 2 under KVM; under TCG, 2 while the
// host has 2 cores per node and 1 beyond that. Each TCG vCPU is a host
// thread: once they outnumber the cores, a guest's vCPU is preempted while
// it holds a spinlock and its other vCPU spins, so two 2-vCPU nodes on 2
// cores boot slower than two 1-vCPU ones.
func NodeCPUs(accelerator string, nodes, cores int) int {
	if accelerator == "kvm" || cores >= 2*nodes {
		return 2
	}
	return 1
}

func (o *Options) defaults() error {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Bootstrap == "" {
		o.Bootstrap = BootstrapJoiner
	}
	if o.Template == "" {
		o.Template = filepath.Join(o.Root, "examples", "debian-12-node.pkr.hcl")
		if o.Releases != nil {
			o.Template = filepath.Join(o.Root, "examples", "debian-12-cloud-node.pkr.hcl")
		}
		if o.Bootstrap == BootstrapClusterAPI {
			o.Template = filepath.Join(o.Root, "examples", "debian-12-capi.pkr.hcl")
		}
	}
	if o.Accelerator == "" {
		o.Accelerator = "tcg"
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 20 * time.Minute
	}
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	if o.Nodes < 1 || o.Nodes > 8 {
		return fmt.Errorf("lab: -nodes %d: want 1 to 8 (each node is a VM with 2 GiB)", o.Nodes)
	}
	if o.CPUs == 0 {
		o.CPUs = NodeCPUs(o.Accelerator, o.Nodes, runtime.NumCPU())
	}
	if o.CPUs < 1 || o.CPUs > 8 {
		return fmt.Errorf("lab: -cpus %d: want 1 to 8 vCPUs per node", o.CPUs)
	}
	var missing []string
	need := map[string]string{"root": o.Root, "joiner": o.Joiner, "kubernetes dir": o.KubernetesDir}
	switch o.Bootstrap {
	case BootstrapJoiner:
	case BootstrapClusterAPI:
		need["kubenode-capi-render"] = o.CAPIRender
		if len(o.Labels) > 0 {
			return fmt.Errorf("lab: -labels: the joiner asks for node labels; with -bootstrap %s the bootstrap data would have to (kubeletExtraArgs node-labels), and the lab's has none: leave -labels out", BootstrapClusterAPI)
		}
	default:
		return fmt.Errorf("lab: -bootstrap %q: want %s or %s", o.Bootstrap, BootstrapJoiner, BootstrapClusterAPI)
	}
	if o.ClusterCNI && o.Kubeconfig != "" {
		return fmt.Errorf("lab: the lab's CNI is for its own control plane: %s %s is a cluster with a CNI of its own", KubeconfigFlag, o.Kubeconfig)
	}
	if o.JoinSeedOnlyNodes < 0 || o.JoinSeedOnlyNodes > o.Nodes {
		return fmt.Errorf("lab: %d nodes with their join seed alone, of %d nodes: want 0 to %d", o.JoinSeedOnlyNodes, o.Nodes, o.Nodes)
	}
	if o.JoinSeedOnlyNodes > 0 && o.Bootstrap != BootstrapJoiner {
		return fmt.Errorf("lab: a join seed alone is the joiner's bootstrap; -bootstrap %s needs its datasource disc", o.Bootstrap)
	}
	if len(o.NodeDisks) > o.Nodes {
		return fmt.Errorf("lab: %d node disks for %d nodes", len(o.NodeDisks), o.Nodes)
	}
	for i, d := range o.NodeDisks {
		if d != "" {
			need[fmt.Sprintf("node %d's disk", i+1)] = d
		}
	}
	if !o.SkipBuild {
		need["template"], need["packer"], need["plugin"], need["base disk"] = o.Template, o.Packer, o.Plugin, o.BaseDisk
	}
	for what, p := range need {
		if p == "" {
			missing = append(missing, what+" is not set")
		} else if _, err := os.Stat(p); err != nil {
			missing = append(missing, fmt.Sprintf("%s: %v", what, err))
		}
	}
	if o.ImageDir == "" || o.WorkDir == "" {
		missing = append(missing, "the image and work directories must be set")
	}
	if o.Kubeconfig != "" {
		if _, err := DescribeKubeconfig(o.Kubeconfig); err != nil {
			missing = append(missing, fmt.Sprintf("%s %s: %v", KubeconfigFlag, o.Kubeconfig, err))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		makes := "make setup joiner build"
		if o.Bootstrap == BootstrapClusterAPI {
			makes += " capi-render"
		}
		return fmt.Errorf("lab: %s (%s makes them)", strings.Join(missing, "; "), makes)
	}
	return nil
}

// say prints one progress line with the time since Up began.
func (l *Lab) say(format string, args ...any) {
	e := time.Since(l.began)
	fmt.Fprintf(l.opts.Out, "[%02d:%02d] %s\n", int(e.Minutes()), int(e.Seconds())%60, fmt.Sprintf(format, args...))
}

// onClose records how to undo what was just started.
func (l *Lab) onClose(what string, fn func() error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.undo = append(l.undo, undoStep{what, fn})
}

// Close undoes everything Up started, newest first, and reports every
// failure (each naming what to remove by hand). It may be called more
// than once.
func (l *Lab) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return l.closeErr
	}
	l.closed = true
	undo := l.undo
	l.undo = nil
	l.mu.Unlock()

	var errs []error
	for i := len(undo) - 1; i >= 0; i-- {
		l.say("teardown: %s", undo[i].what)
		if err := undo[i].fn(); err != nil {
			l.say("teardown: %s: %v", undo[i].what, err)
			errs = append(errs, fmt.Errorf("%s: %w", undo[i].what, err))
		}
	}
	l.closeErr = errors.Join(errs...)
	return l.closeErr
}
