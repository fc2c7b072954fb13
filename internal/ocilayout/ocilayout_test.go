// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package ocilayout

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestTarIsSortedRootOwnedDatedEpochAndReproducible(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"oci-layout": `{"imageLayoutVersion":"1.0.0"}`, "index.json": "{}", "blobs/sha256/ab": "blob"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a, b := filepath.Join(t.TempDir(), "a.tar"), filepath.Join(t.TempDir(), "b.tar")
	if err := Tar(context.Background(), dir, a); err != nil {
		t.Fatal(err)
	}
	// Other file times and modes must not change the archive.
	os.Chtimes(filepath.Join(dir, "index.json"), Epoch.AddDate(9, 0, 0), Epoch.AddDate(9, 0, 0))
	os.Chmod(filepath.Join(dir, "oci-layout"), 0o640)
	if err := Tar(context.Background(), dir, b); err != nil {
		t.Fatal(err)
	}
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	if !bytes.Equal(da, db) {
		t.Fatal("the same layout gave two different archives")
	}
	fi, err := os.Stat(a)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("archive mode %v (%v), want 0600", fi.Mode(), err)
	}
	var names []string
	tr := tar.NewReader(bytes.NewReader(da))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(Epoch) {
			t.Errorf("%s: uid %d gid %d time %v, want root and %v", h.Name, h.Uid, h.Gid, h.ModTime, Epoch)
		}
		if want := int64(0o644); h.Typeflag == tar.TypeDir && h.Mode != 0o755 || h.Typeflag == tar.TypeReg && h.Mode != want {
			t.Errorf("%s: mode %o", h.Name, h.Mode)
		}
	}
	want := []string{"blobs/", "blobs/sha256/", "blobs/sha256/ab", "index.json", "oci-layout"}
	if len(names) != len(want) {
		t.Fatalf("entries %q, want %q", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("entries %q, want %q", names, want)
		}
	}
}

func TestTarStopsWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Tar(ctx, dir, filepath.Join(t.TempDir(), "x.tar")); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
