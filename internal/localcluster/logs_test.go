// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The control plane's logs hold what kubeadm prints, "Using token: <token>"
// among it: each is 0600, in a 0700 directory, with the token's secret
// redacted.
func TestLogsAreTheirOwnersOnlyAndHoldNoTokenSecret(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "control-plane")
	bin := t.TempDir()
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubeadm", "kubectl"} {
		if err := os.WriteFile(filepath.Join(bin, b), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A cgroup driver it refuses stops it right after it made its directory.
	if _, err := StartControlPlane(t.Context(), ControlPlaneOptions{BinDir: bin, Dir: dir, KubeletCgroupDriver: "none"}); err == nil {
		t.Fatal("a bogus cgroup driver was taken")
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want mode 0700", d, fi.Mode().Perm(), err)
		}
	}

	log := filepath.Join(dir, "kubeadm.log")
	appendFile(log, "$ kubeadm init phase bootstrap-token\n[bootstrap-token] Using token: abcdef.0123456789abcdef\n")
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "0123456789abcdef") || !strings.Contains(string(data), "Using token: abcdef.<redacted>") {
		t.Errorf("%s holds the token's secret, or no trace of the token:\n%s", log, data)
	}
	if fi, err := os.Stat(log); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, %v; want mode 0600", log, fi.Mode().Perm(), err)
	}

	p, err := start(dir, "daemon", []string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	<-p.done
	if fi, err := os.Stat(p.log); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, %v; want mode 0600", p.log, fi.Mode().Perm(), err)
	}
}
