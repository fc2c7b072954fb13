// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build integration

package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
	"github.com/kubenode/packer-plugin-kubenode/internal/localcluster"
)

// BenchmarkJoin joins this host to a real control plane, once per
// iteration with plain `kubeadm join` (then waiting for Node Ready the way
// a user would, polling kubectl) and with `joiner join` (which waits for
// Ready itself). The node is torn down between iterations, outside the
// timer. Run with -benchtime Nx: each iteration takes seconds.
//
// Reported: ns/op (join -> Ready); peak-RSS-MB of the measured process
// itself (VmHWM sampled from /proc while it runs: the joiner without the
// kubeadm it starts, kubeadm without the kubelet); binary-MB of the joiner
// built as released (static, -trimpath, -s -w).
func BenchmarkJoin(b *testing.B) {
	harness.RequireRoot(b)
	bin := harness.Kubernetes(b)
	dir := b.TempDir()
	joiner := harness.JoinerAsReleased(b, filepath.Join(dir, "joiner"))
	fi, err := os.Stat(joiner)
	if err != nil {
		b.Fatal(err)
	}
	cp := harness.ControlPlaneT(b, localcluster.ControlPlaneOptions{BinDir: bin, Dir: filepath.Join(dir, "cp")})
	kubectl := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", cp.AdminKubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}
	const node = "kubenode-bench"
	var ignore []string // kubeadm and joiner flags for what this host cannot pass
	if len(localcluster.IgnoredPreflightErrors) > 0 {
		ignore = []string{"--ignore-preflight-errors", strings.Join(localcluster.IgnoredPreflightErrors, ",")}
	}

	// each runs one join on a freshly prepared node; join returns the peak
	// RSS (KiB) of the process it ran, once the Node is Ready.
	each := func(b *testing.B, join func(n *localcluster.Node, i int) int64) {
		var rssKB int64
		b.StopTimer()
		for i := 0; i < b.N; i++ {
			n, err := localcluster.PrepareNode(context.Background(), localcluster.NodeOptions{BinDir: bin, Dir: filepath.Join(dir, "node")})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			rss := join(n, i)
			b.StopTimer()
			rssKB = max(rssKB, rss)
			if err := n.Teardown(); err != nil {
				b.Fatal(err)
			}
			if out, err := kubectl("delete", "node", node, "--ignore-not-found"); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
		b.ReportMetric(float64(rssKB)/1024, "peak-RSS-MB")
	}
	run := func(n *localcluster.Node, name string, args ...string) int64 {
		cmd := exec.Command(name, args...)
		cmd.Env = n.Env()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		done := make(chan struct{})
		peak := make(chan int64)
		go func() { peak <- sampleHWM(cmd.Process.Pid, done) }()
		err := cmd.Wait()
		close(done)
		if err != nil {
			b.Fatalf("%s %v: %v\n%s", name, args, err, out.String())
		}
		return <-peak
	}
	// token makes a token outside the timer.
	token := func(n *localcluster.Node, i int) string {
		b.StopTimer()
		defer b.StartTimer()
		path := filepath.Join(dir, "join.yaml")
		run(n, joiner, append([]string{"token", "--kubeconfig", cp.AdminKubeconfig, "--output", path, "--node-name", node,
			"--cri-socket", n.CRISocket()}, ignore...)...)
		return path
	}

	b.Run("kubeadm", func(b *testing.B) {
		each(b, func(n *localcluster.Node, i int) int64 {
			path := token(n, i)
			cfg, _ := os.ReadFile(path)
			var tok, hash string
			for _, line := range strings.Split(string(cfg), "\n") {
				if v, ok := strings.CutPrefix(line, "token: "); ok {
					tok = v
				}
				if v, ok := strings.CutPrefix(line, "- sha256:"); ok {
					hash = "sha256:" + v
				}
			}
			ps := run(n, filepath.Join(bin, "kubeadm"), append([]string{"join", cp.Endpoint, "--token", tok, "--discovery-token-ca-cert-hash", hash,
				"--node-name", node, "--cri-socket", n.CRISocket()}, ignore...)...)
			deadline := time.Now().Add(2 * time.Minute)
			for {
				out, _ := kubectl("get", "node", node, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
				if out == "True" {
					return ps
				}
				if time.Now().After(deadline) {
					b.Fatalf("node %s not Ready after kubeadm join", node)
				}
				time.Sleep(250 * time.Millisecond)
			}
		})
	})
	b.Run("joiner", func(b *testing.B) {
		each(b, func(n *localcluster.Node, i int) int64 {
			path := token(n, i)
			return run(n, joiner, "join", "--config", path, "--log-file", filepath.Join(dir, "joiner.log"))
		})
		b.ReportMetric(float64(fi.Size())/(1<<20), "binary-MB")
	})
}

// sampleHWM returns the highest VmHWM (peak resident set, KiB) read from
// /proc/<pid>/status every 10 ms until done is closed.
func sampleHWM(pid int, done <-chan struct{}) int64 {
	var peak int64
	for {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					if kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
						peak = max(peak, kb)
					}
				}
			}
		}
		select {
		case <-done:
			return peak
		case <-time.After(10 * time.Millisecond):
		}
	}
}
