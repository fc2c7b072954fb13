// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Command lab is `make lab`: it builds the Debian node image with packer
// (examples/debian-12-cloud-node.pkr.hcl, from release files it serves),
// starts a control plane on 127.0.0.1
// (or, with -kubeconfig, uses an existing cluster; $KUBECONFIG alone is
// ignored), makes a join seed per node with
// `joiner token`, boots -nodes VMs from the image under libvirt, waits for
// their Nodes to be Ready, runs a Job on each with the image's preloaded
// busybox image and prints the node table and what each Job printed. Then
// it tears everything down, unless -keep is given: then it waits for
// Ctrl-C. Ctrl-C at any point tears down what was started.
//
// The inputs default to what `make setup joiner build` and the project's
// scripts provide; see cmd/lab/lab for the chain itself.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/cmd/lab/lab"
	"github.com/kubenode/packer-plugin-kubenode/internal/releasemirror"
)

func main() {
	os.Exit(run())
}

func run() int {
	root, _ := os.Getwd()
	o := lab.Options{Root: root, Out: os.Stdout}
	var keep bool
	var labels string
	flag.StringVar(&o.Template, "template", "", "packer template, built from release files the lab serves (default examples/debian-12-cloud-node.pkr.hcl, with the lab's CNI; with -bootstrap cluster-api, examples/debian-12-capi.pkr.hcl; examples/debian-12-node.pkr.hcl is the lab's template with the bridge CNI)")
	flag.StringVar(&o.Bootstrap, "bootstrap", lab.BootstrapJoiner, "how the nodes join: joiner (a join seed disc per node) or cluster-api (Cluster API's kubeadm bootstrap data, on a NoCloud disc and a config drive in turn)")
	flag.StringVar(&o.CAPIRender, "capi-render", filepath.Join(root, "dist", "kubenode-capi-render"), "kubenode-capi-render binary, for -bootstrap cluster-api (make capi-render)")
	flag.StringVar(&o.Packer, "packer", os.Getenv("KUBENODE_PACKER"), "packer binary (default $KUBENODE_PACKER, from scripts/setup.sh env)")
	flag.StringVar(&o.Plugin, "plugin", filepath.Join(root, "packer-plugin-kubenode"), "this plugin's binary (make build)")
	flag.StringVar(&o.Joiner, "joiner", filepath.Join(root, "dist", "kubenode-joiner"), "linux joiner binary (make joiner)")
	flag.StringVar(&o.KubernetesDir, "kubernetes-dir", "", "kubelet, kubeadm, kubectl and control-plane binaries (default: scripts/k8s-binaries.sh)")
	flag.StringVar(&o.BaseDisk, "base-disk", "", "Debian 12 base disk (default: scripts/base-disk.sh)")
	flag.StringVar(&o.ImageDir, "image-dir", filepath.Join(root, "output-debian-12-cloud-node"), "where the image, its checksum and manifest go (kept; with -bootstrap cluster-api, output-debian-12-capi)")
	flag.StringVar(&o.WorkDir, "work-dir", "", "scratch directory, removed at the end (default: a new one under $TMPDIR)")
	flag.StringVar(&o.Accelerator, "accelerator", "tcg", "tcg, or kvm where KVM works")
	flag.StringVar(&labels, "labels", "kubenode.io/lab=true", "node labels to ask for, key=value[,key=value] (the joiner's; none with -bootstrap cluster-api)")
	flag.DurationVar(&o.ReadyTimeout, "ready-timeout", 20*time.Minute, "how long to wait for the Nodes to be Ready")
	flag.IntVar(&o.Nodes, "nodes", 1, "how many VMs boot from the image and join, side by side (1 to 8)")
	flag.IntVar(&o.CPUs, "cpus", 0, "vCPUs per node, 1 to 8 (default: 2 with kvm; with tcg, 2 while this host has 2 cores per node, else 1)")
	flag.BoolVar(&keep, "keep", false, "keep the cluster and node running until Ctrl-C")
	flag.BoolVar(&o.SkipBuild, "skip-build", false, "boot the image an earlier run left in -image-dir instead of building it")
	flag.StringVar(&o.Kubeconfig, "kubeconfig", "", "join the nodes to the existing cluster of this admin kubeconfig `file` instead of starting a local control plane (the lab adds tokens, Nodes and Jobs to it); $KUBECONFIG is ignored")
	flag.Parse()
	if o.Kubeconfig == "" {
		if msg := lab.IgnoredKubeconfig(os.Getenv("KUBECONFIG")); msg != "" {
			fmt.Println(msg)
		}
	}

	var err error
	if o.Bootstrap == lab.BootstrapClusterAPI && !flagSet("labels") {
		labels = ""
	}
	if o.Bootstrap == lab.BootstrapClusterAPI && !flagSet("image-dir") {
		o.ImageDir = filepath.Join(root, "output-debian-12-capi")
	}
	if o.Labels, err = parseLabels(labels); err != nil {
		fmt.Fprintf(os.Stderr, "lab: -labels: %v\n", err)
		return 2
	}
	if o.KubernetesDir == "" {
		if o.KubernetesDir, err = script(root, "k8s-binaries.sh"); err != nil {
			fmt.Fprintf(os.Stderr, "lab: %v\n", err)
			return 1
		}
	}
	// Every template installs the release files of Kubernetes (the
	// binaries in -kubernetes-dir), containerd, runc, crictl and the CNI
	// plugins, here from a mirror the lab serves. The default is the
	// production example, with, on the lab's own control plane, the lab's
	// CNI DaemonSet (the image has cni = "none").
	if !o.SkipBuild {
		mirror, err := serveReleases(root, o.KubernetesDir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "lab: release files: %v\n", err)
			return 1
		}
		defer mirror.Close()
		o.Releases = &lab.Releases{Mirrors: mirror.Mirrors, Containerd: lab.ProductionContainerd, CNIPlugins: mirror.CNIPlugins}
	}
	if o.Template == "" && o.Bootstrap == lab.BootstrapJoiner {
		o.ClusterCNI = o.Kubeconfig == ""
	}
	if o.BaseDisk == "" && !o.SkipBuild {
		fmt.Println("lab: base disk (scripts/base-disk.sh; ~5 min the first time, cached after)")
		if o.BaseDisk, err = script(root, "base-disk.sh"); err != nil {
			fmt.Fprintf(os.Stderr, "lab: %v\n", err)
			return 1
		}
	}
	if o.WorkDir == "" {
		if o.WorkDir, err = os.MkdirTemp("", "kubenode-lab-"); err != nil {
			fmt.Fprintf(os.Stderr, "lab: %v\n", err)
			return 1
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	began := time.Now()
	l, err := lab.Up(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lab: %v\n", err)
		return 1
	}
	status := 0
	if table, err := l.Kubectl(ctx, "get", "nodes", "-o", "wide", "--show-labels"); err != nil {
		fmt.Fprintf(os.Stderr, "lab: %v\n", err)
		status = 1
	} else {
		fmt.Printf("\n%d node(s) Ready, %s after the start:\n\n%s\n", len(l.Nodes), time.Since(began).Round(time.Second), table)
		for _, j := range l.Jobs {
			fmt.Printf("Job %s on %s: %s\n", j.Job, j.Node, j.Output)
		}
	}
	if keep && status == 0 {
		fmt.Printf("\nThe lab stays up until Ctrl-C:\n  export KUBECONFIG=%s\n  kubectl get nodes\n  image: %s\n", l.Kubeconfig, l.Image)
		for _, n := range l.Nodes {
			fmt.Printf("  node %s: ssh -i %s -p %d %s@127.0.0.1\n", n.Name, filepath.Join(o.WorkDir, "id_ed25519"), n.SSHPort, n.SSHUser())
		}
		if l.WorkloadImage != "" && len(l.Nodes) > 0 {
			fmt.Printf("  another Job, with the image preloaded on every node (its tag is pulled only if missing, so no registry is needed):\n")
			fmt.Printf("    kubectl create job hello --image=%s -- echo hello   # kubectl get pods -o wide shows the node\n", l.WorkloadImage)
			fmt.Printf("  (the lab's own Jobs pick their node with a nodeSelector kubernetes.io/hostname=<node>)\n")
		}
		fmt.Println()
		<-ctx.Done()
	}
	if err := l.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "lab: teardown: %v\n", err)
		status = 1
	}
	if status == 0 {
		fmt.Printf("lab: done in %s; the image stays in %s\n", time.Since(began).Round(time.Second), o.ImageDir)
	}
	return status
}

// serveReleases serves the release files of the Kubernetes release in dir
// and lab.ProductionContainerd's, as the production template downloads
// them.
func serveReleases(root, dir string) (*releasemirror.Mirror, error) {
	out, err := exec.Command(filepath.Join(dir, "kubeadm"), "version", "-o", "short").Output()
	if err != nil {
		return nil, fmt.Errorf("kubeadm version -o short: %w", err)
	}
	v, err := releasemirror.For(strings.TrimSpace(string(out)), lab.ProductionContainerd)
	if err != nil {
		return nil, err
	}
	fmt.Printf("lab: release files of Kubernetes %s, containerd %s, runc %s, crictl %s and the CNI plugins, served on 127.0.0.1 (scripts/release-files.sh; downloaded, or built where that fails, once, cached)\n",
		v.Kubernetes, v.Containerd, v.Runc, v.Crictl)
	return releasemirror.Serve(root, dir, v, os.Stderr)
}

// script runs one of the project's scripts and returns what it prints
// (a path).
func script(root, name string) (string, error) {
	cmd := exec.Command("bash", filepath.Join(root, "scripts", name))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("scripts/%s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func parseLabels(s string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, errors.New(kv + ": want key=value")
		}
		m[k] = v
	}
	return m, nil
}

// flagSet reports whether the command line set the flag.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
