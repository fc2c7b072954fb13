// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package localcluster

import (
	"os"
	"path/filepath"
	"testing"
)

// plant makes a file holding "precious" outside dir and a link to it at
// each name under dir, and returns the file.
func plant(t *testing.T, dir string, names ...string) string {
	t.Helper()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, n)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return victim
}

func untouched(t *testing.T, victim string) {
	t.Helper()
	b, err := os.ReadFile(victim)
	fi, serr := os.Stat(victim)
	if err != nil || serr != nil || string(b) != "precious" || fi.Mode().Perm() != 0o644 {
		t.Errorf("the link's target %s was written to: %q, %v, %v", victim, b, fi.Mode().Perm(), err)
	}
}

// fakeBinaries is a BinDir whose programs cannot run: the control plane
// gets as far as starting etcd.
func fakeBinaries(t *testing.T) string {
	bin := t.TempDir()
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubeadm", "kubectl"} {
		if err := os.WriteFile(filepath.Join(bin, b), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// Links planted at the names the control plane writes (its CA key and
// service-account key, the admin's kubeconfig, etcd's log, kubeadm's log)
// are replaced or refused, never written through: their target keeps what
// it held, and the admin's kubeconfig and the CA key are files of their
// own, 0600.
func TestLinksAtItsNamesAreNotWrittenThrough(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "control-plane")
	victim := plant(t, dir, "admin.conf", "scheduler.conf", "pki/ca.key", "pki/sa.key", "pki/etcd/server.key", "etcd.log", "kubeadm.log")
	if _, err := StartControlPlane(t.Context(), ControlPlaneOptions{BinDir: fakeBinaries(t), Dir: dir}); err == nil {
		t.Fatal("a control plane of programs that cannot run started")
	}
	appendFile(filepath.Join(dir, "kubeadm.log"), "$ kubeadm init phase bootstrap-token\n")
	untouched(t, victim)
	for _, f := range []string{"admin.conf", "pki/ca.key", "pki/etcd/server.key"} {
		fi, err := os.Lstat(filepath.Join(dir, f))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want a regular file of mode 0600", f, fi.Mode(), err)
		}
	}
}

// A link planted at the PKI's directory is refused: nothing is written
// into the directory it names.
func TestALinkAtThePKIDirectoryIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "control-plane")
	elsewhere := t.TempDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(dir, "pki")); err != nil {
		t.Fatal(err)
	}
	if _, err := StartControlPlane(t.Context(), ControlPlaneOptions{BinDir: fakeBinaries(t), Dir: dir}); err == nil {
		t.Fatal("a control plane of programs that cannot run started")
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) > 0 {
		t.Errorf("the PKI went through the link into %s: %v", elsewhere, entries)
	}
}
