// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package lab

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/localcluster"
)

// guestHost is this machine as a QEMU user-networking guest sees it: QEMU
// connects to 127.0.0.1 for it.
const guestHost = "10.0.2.2"

// cluster starts a local control plane, or takes the user's cluster from
// Options.Kubeconfig (-kubeconfig), saying which cluster it is about to
// change before anything changes it.
func (l *Lab) cluster(ctx context.Context) error {
	if l.opts.Kubeconfig != "" {
		t, err := DescribeKubeconfig(l.opts.Kubeconfig)
		if err != nil {
			return fmt.Errorf("%s %s: %w", KubeconfigFlag, l.opts.Kubeconfig, err)
		}
		l.Kubeconfig = l.opts.Kubeconfig
		l.say("using the external cluster of %s %s: context %q, API server %s", KubeconfigFlag, l.Kubeconfig, t.Context, t.Server)
		l.say("the lab is about to change that cluster: %d bootstrap token(s) (ttl 2h), %d Node(s) kubenode-lab-%s-*, Job(s) kubenode-lab-probe-* in namespace %s; they stay after the teardown",
			l.opts.Nodes, l.opts.Nodes, l.id, JobNamespace)
		l.say("the guest (QEMU user networking) must reach the API server named in its kube-public/cluster-info")
		return nil
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	cp, err := localcluster.StartControlPlane(ctx, localcluster.ControlPlaneOptions{
		BinDir: l.opts.KubernetesDir,
		Dir:    filepath.Join(l.opts.WorkDir, "control-plane"),
		Port:   port,
		// The API server listens on 127.0.0.1 only; the guest reaches it
		// as 10.0.2.2, so that name must be on its certificate and in
		// cluster-info.
		ExtraSANs:           []string{guestHost},
		ServerURL:           fmt.Sprintf("https://%s:%d", guestHost, port),
		KubeletCgroupDriver: "systemd", // the image's containerd uses systemd cgroups
		Log:                 prefixWriter{l, "    control plane | "},
	})
	if err != nil {
		return err
	}
	l.onClose("stopping the control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)", cp.Stop)
	l.Kubeconfig = cp.AdminKubeconfig
	l.say("control plane on 127.0.0.1:%d (the node joins https://%s:%d); kubeconfig %s", port, guestHost, port, l.Kubeconfig)
	return nil
}

// doctor runs `joiner doctor --os linux` (the lab's nodes are Linux)
// against the cluster and shows what it says. Its verdict is shown, not
// enforced: the nodes' join says whether a finding mattered.
func (l *Lab) doctor(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, l.opts.Joiner, "doctor", "--kubeconfig", l.Kubeconfig, "--os", "linux").CombinedOutput()
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		l.say("    doctor | %s", line)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		return fmt.Errorf("running joiner doctor: %w", err)
	}
	if err != nil {
		l.say("doctor found problems (above); the lab carries on, and the nodes' join shows whether they matter")
	}
	return nil
}

// seed makes, for each node, a bootstrap token and the node's join seed
// disc with `joiner token`, exactly as a user would.
func (l *Lab) seed(ctx context.Context) error {
	if l.opts.Bootstrap == BootstrapClusterAPI {
		return l.seedClusterAPI(ctx)
	}
	keys := make([]string, 0, len(l.opts.Labels))
	for k := range l.opts.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i := range l.opts.Nodes {
		n := l.joinerNode(i)
		args := l.tokenArgs(n, keys)
		out, err := exec.CommandContext(ctx, l.opts.Joiner, args...).CombinedOutput()
		for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			l.say("    token %s | %s", n.Name, line)
		}
		if err != nil {
			return fmt.Errorf("joiner %s: %w", strings.Join(args, " "), err)
		}
		l.Nodes = append(l.Nodes, n)
	}
	return nil
}

// joinerNode is the i-th node (from 0) with the joiner's bootstrap: the
// last Options.JoinSeedOnlyNodes boot with their join seed alone.
func (l *Lab) joinerNode(i int) *Node {
	n := &Node{Name: fmt.Sprintf("kubenode-lab-%s-%d", l.id, i+1), JoinSeedOnly: i >= l.opts.Nodes-l.opts.JoinSeedOnlyNodes}
	n.seedISO = filepath.Join(l.opts.WorkDir, n.Name+"-join-seed.iso")
	return n
}

// tokenArgs are the `joiner token` arguments of a node's seed. With
// --image-manifest, a cluster the image cannot join is refused before any
// node boots.
func (l *Lab) tokenArgs(n *Node, labelKeys []string) []string {
	args := []string{"token", "--kubeconfig", l.Kubeconfig, "--seed-iso", n.seedISO, "--ttl", "2h",
		"--description", "kubenode lab node " + n.Name}
	if n.JoinSeedOnly {
		// The clone names itself; the lab knows its Node by this label.
		args = append(args, "--label", LabVMLabel+"="+n.Name)
	} else {
		args = append(args, "--node-name", n.Name)
	}
	if l.Manifest != "" {
		args = append(args, "--image-manifest", l.Manifest)
	}
	for _, k := range labelKeys {
		args = append(args, "--label", k+"="+l.opts.Labels[k])
	}
	return args
}

// prefixWriter turns writes into progress lines.
type prefixWriter struct {
	l      *Lab
	prefix string
}

func (w prefixWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.l.say("%s%s", w.prefix, line)
	}
	return len(p), nil
}
