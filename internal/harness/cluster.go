// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/kubenode/packer-plugin-kubenode/internal/localcluster"
)

// Kubernetes returns the directory of the cached Kubernetes binaries
// (kubeadm, kubelet, kube-apiserver, kube-controller-manager, kube-scheduler,
// kubectl, etcd), building them (~12 min cold) if needed.
func Kubernetes(t testing.TB) string {
	t.Helper()
	return script(t, "k8s-binaries.sh")
}

// KubernetesRelease is Kubernetes for another release, vX.Y.Z, cached by
// version beside the default one.
func KubernetesRelease(t testing.TB, version string) string {
	t.Helper()
	return script(t, "k8s-binaries.sh", version)
}

// ControlPlaneT starts a control plane (localcluster.StartControlPlane)
// for a test, stopped at its end. Empty BinDir, Dir and Log are the cached
// Kubernetes binaries, a temporary directory of the test and its log.
func ControlPlaneT(t testing.TB, o localcluster.ControlPlaneOptions) *localcluster.ControlPlane {
	t.Helper()
	testDefaults(t, &o.BinDir, &o.Dir, &o.Log)
	cp, err := localcluster.StartControlPlane(context.Background(), o)
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() { cp.Stop() })
	return cp
}

// testDefaults asks for root and fills empty options of a test's control
// plane or node: the cached Kubernetes binaries, a temporary directory of
// the test and its log.
func testDefaults(t testing.TB, binDir, dir *string, log *io.Writer) {
	t.Helper()
	RequireRoot(t)
	if *binDir == "" {
		*binDir = Kubernetes(t)
	}
	if *dir == "" {
		*dir = t.TempDir()
	}
	if *log == nil {
		*log = testLog{t}
	}
}

// NodeT prepares this host as a node (localcluster.PrepareNode) for a test
// and restores it after; empty options are filled as ControlPlaneT fills
// them.
func NodeT(t testing.TB, o localcluster.NodeOptions) *localcluster.Node {
	t.Helper()
	testDefaults(t, &o.BinDir, &o.Dir, &o.Log)
	n, err := localcluster.PrepareNode(context.Background(), o)
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
type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
