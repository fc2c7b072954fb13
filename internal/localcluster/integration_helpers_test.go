// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build integration

package localcluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// These tests reach into the control plane and the node (their processes,
// the admin's API client), so they are in the package, and cannot use
// internal/harness, which imports it: the few lines of ControlPlaneT and
// NodeT they need are here.

// kubernetes is the directory of the cached Kubernetes binaries, built by
// scripts/k8s-binaries.sh if needed.
func kubernetes(t *testing.T) string {
	t.Helper()
	requireRoot(t)
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "k8s-binaries.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/k8s-binaries.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this integration test needs root: it starts a control plane and makes this host a node")
	}
}

// controlPlaneT starts a control plane for the test, stopped at its end.
func controlPlaneT(t *testing.T, o ControlPlaneOptions) *ControlPlane {
	t.Helper()
	if o.BinDir == "" {
		o.BinDir = kubernetes(t)
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	o.Log = testLog{t}
	cp, err := StartControlPlane(context.Background(), o)
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() { cp.Stop() })
	return cp
}

// nodeT prepares this host as a node for the test and restores it after.
func nodeT(t *testing.T, o NodeOptions) *Node {
	t.Helper()
	o.Log = testLog{t}
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

// testLog writes to the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
